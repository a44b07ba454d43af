//! Groth16 parameters (the SRS): the standard `v28-*.params` / `.vk` files, decoded once and kept
//! resident so that no proof pays for re-reading or re-checking points.

use std::path::PathBuf;
use std::time::SystemTime;

use blstrs::{Bls12, G1Affine, G2Affine};

use bellperson::groth16::{PreparedVerifyingKey, VerifyingKey};

pub mod bench;
pub mod params;
pub mod resident;
pub mod source;

pub use params::{load, PointCheck};
pub use resident::{ResidentSrs, SrsStatus};
pub use source::{Evicted, Preloaded, SrsAdmin, SrsSource};

/// The cache identifier of one circuit's parameters, as filecoin-proofs names it, e.g.
/// `stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-<digest>`.
/// Files are `v28-<id>.params`, `.vk`, `.meta` in the parameter directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct CircuitId(pub String);

impl CircuitId {
    pub fn params_file(&self) -> String {
        format!("v28-{}.params", self.0)
    }
    pub fn vk_file(&self) -> String {
        format!("v28-{}.vk", self.0)
    }
}

impl std::fmt::Display for CircuitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One circuit's decoded parameters, resident in host memory.
///
/// Layout follows bellperson's `Parameters::write`: `h` has domain−1 points, `l` one per aux
/// variable, `a`/`b_g1`/`b_g2` one per variable whose density bit is set (inputs first, then aux).
pub struct Srs {
    pub id: CircuitId,
    pub path: PathBuf,
    pub vk: VerifyingKey<Bls12>,
    pub pvk: PreparedVerifyingKey<Bls12>,
    pub h: Vec<G1Affine>,
    pub l: Vec<G1Affine>,
    pub a: Vec<G1Affine>,
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
    pub loaded_at: SystemTime,
}

impl Srs {
    /// Host bytes held by the decoded points.
    pub fn bytes(&self) -> u64 {
        let g1 = std::mem::size_of::<G1Affine>() as u64;
        let g2 = std::mem::size_of::<G2Affine>() as u64;
        (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len()) as u64 * g1 + self.b_g2.len() as u64 * g2
    }
}
