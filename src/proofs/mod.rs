//! Filecoin proof requests: the four kinds Lotus and Curio hand over, decoded and validated into
//! a [`Statement`] the engine can synthesize partition by partition and verify.
//!
//! Inputs are exactly the bytes filecoin-ffi produces (C1 JSON, bincode vanilla proofs). Every
//! decoding failure is a typed [`SnarkError`] that names the bad field; nothing here panics on input.

use blstrs::Scalar as Fr;
use serde::{Deserialize, Serialize};

use crate::error::SnarkError;
use crate::groth16::Witness;
use crate::srs::CircuitId;
use crate::units::Bytes;

/// The four proofs a storage provider needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProofKind {
    PorepC2,
    WindowPost,
    WinningPost,
    SnapDeals,
}

impl ProofKind {
    pub const ALL: [ProofKind; 4] =
        [ProofKind::PorepC2, ProofKind::WindowPost, ProofKind::WinningPost, ProofKind::SnapDeals];

    pub const fn name(self) -> &'static str {
        match self {
            ProofKind::PorepC2 => "porep_c2",
            ProofKind::WindowPost => "window_post",
            ProofKind::WinningPost => "winning_post",
            ProofKind::SnapDeals => "snap_deals",
        }
    }

    pub fn parse(s: &str) -> Option<ProofKind> {
        let s = s.to_ascii_lowercase().replace('-', "_");
        match s.as_str() {
            "porep" | "porep_c2" | "c2" => Some(ProofKind::PorepC2),
            "window" | "window_post" | "windowpost" => Some(ProofKind::WindowPost),
            "winning" | "winning_post" | "winningpost" => Some(ProofKind::WinningPost),
            "snap" | "snap_deals" | "snapdeals" | "update" => Some(ProofKind::SnapDeals),
            _ => None,
        }
    }
}

impl std::fmt::Display for ProofKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A decoded, validated request: everything needed to synthesize each partition's circuit and to
/// check the assembled proof. Implemented per proof kind; the engine sees only this trait.
pub trait Statement: Send + Sync {
    fn kind(&self) -> ProofKind;
    /// Which parameters prove this statement.
    fn circuit(&self) -> CircuitId;
    /// Number of Groth16 circuits (partitions) in the proof, each proved separately.
    fn partitions(&self) -> usize;
    /// Estimated peak bytes of one partition's witness, for the memory budget.
    fn witness_bytes(&self) -> Bytes;
    /// Runs the circuit of `partition` through snarkd's constraint system.
    fn synthesize(&self, partition: usize) -> Result<Witness, SnarkError>;
    /// The public inputs the verifier uses for `partition` (without the leading ONE).
    fn public_inputs(&self, partition: usize) -> Result<Vec<Fr>, SnarkError>;
}

pub mod paramgen;
pub mod shape;
