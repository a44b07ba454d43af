//! The one place that maps a sector size onto the merkle tree shape the storage-proofs circuits
//! are generic over, and onto the registered proof of each kind for that size.
//!
//! filecoin-proofs' own `with_shape!` also covers test-only sizes and panics on unknown ones; the
//! daemon needs exactly the published sizes and a typed error for anything else.

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use crate::error::SnarkError;
use crate::proofs::ProofKind;

/// The sector sizes with published parameters, smallest first.
pub const SECTOR_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// Calls `$f::<Tree>(args…)` with the tree shape of `$size`, or returns an unsupported error
/// from the enclosing function for a size without published parameters.
macro_rules! with_tree {
    ($size:expr, $f:ident $(, $arg:expr)* $(,)?) => {
        match $size {
            s if s == 2 << 10 => $f::<filecoin_proofs::SectorShape2KiB>($($arg),*),
            s if s == 8 << 20 => $f::<filecoin_proofs::SectorShape8MiB>($($arg),*),
            s if s == 512 << 20 => $f::<filecoin_proofs::SectorShape512MiB>($($arg),*),
            s if s == 32 << 30 => $f::<filecoin_proofs::SectorShape32GiB>($($arg),*),
            s if s == 64 << 30 => $f::<filecoin_proofs::SectorShape64GiB>($($arg),*),
            s => return Err($crate::proofs::shape::unsupported_size(s).into()),
        }
    };
}
pub(crate) use with_tree;

pub(crate) fn unsupported_size(size: u64) -> SnarkError {
    SnarkError::unsupported(format!(
        "sector size {size} has no published parameters (supported: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"
    ))
}

/// The registered proof Lotus and Curio use today for `kind` at `size`: PoRep V1_1, WindowPoSt V1_2,
/// WinningPoSt V1, SnapDeals V1. Parameters depend only on the circuit, so these pick the files.
pub fn registered(kind: ProofKind, size: u64) -> Result<Registered, SnarkError> {
    let i = SECTOR_SIZES.iter().position(|&s| s == size).ok_or_else(|| unsupported_size(size))?;
    use RegisteredPoStProof::*;
    use RegisteredSealProof::*;
    Ok(match kind {
        ProofKind::PorepC2 => Registered::Seal(
            [StackedDrg2KiBV1_1, StackedDrg8MiBV1_1, StackedDrg512MiBV1_1, StackedDrg32GiBV1_1, StackedDrg64GiBV1_1][i],
        ),
        ProofKind::WindowPost => Registered::PoSt(
            [
                StackedDrgWindow2KiBV1_2,
                StackedDrgWindow8MiBV1_2,
                StackedDrgWindow512MiBV1_2,
                StackedDrgWindow32GiBV1_2,
                StackedDrgWindow64GiBV1_2,
            ][i],
        ),
        ProofKind::WinningPost => Registered::PoSt(
            [
                StackedDrgWinning2KiBV1,
                StackedDrgWinning8MiBV1,
                StackedDrgWinning512MiBV1,
                StackedDrgWinning32GiBV1,
                StackedDrgWinning64GiBV1,
            ][i],
        ),
        ProofKind::SnapDeals => Registered::Update(
            [
                RegisteredUpdateProof::StackedDrg2KiBV1,
                RegisteredUpdateProof::StackedDrg8MiBV1,
                RegisteredUpdateProof::StackedDrg512MiBV1,
                RegisteredUpdateProof::StackedDrg32GiBV1,
                RegisteredUpdateProof::StackedDrg64GiBV1,
            ][i],
        ),
    })
}

/// A registered proof of any kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    Seal(RegisteredSealProof),
    PoSt(RegisteredPoStProof),
    Update(RegisteredUpdateProof),
}
