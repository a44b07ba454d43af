//! A bench-only SRS: random points of a real circuit's query sizes, held only in the benchmark's
//! memory, so that `snarkctl bench pipeline` can run residency, the budget and the GPU stage at
//! 32/64 GiB without the 47 GB published files and without a file ever written under a production
//! name. Its verifying key is random too, so every proof made from it fails verification with
//! `verification_failed`, as the engine's verify step requires; it can never be returned.
//!
//! The bases are a small pool of random points tiled to full length: filling 60+ GB with fresh
//! random points would take minutes, and the MSMs' cost does not depend on the points' values.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bellperson::groth16::VerifyingKey;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::{Curve, Group};
use rand::{rngs::StdRng, SeedableRng};
use rayon::prelude::*;

use super::{CircuitId, Srs, SrsSource};
use crate::error::{ErrorCode, SnarkError};

/// Distinct random points per group, tiled to each query's length.
const POOL: usize = 1 << 16;

/// The lengths of one circuit's queries, as a witness of that circuit implies them
/// (`groth16::prover::check_shape` checks the same relations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct QueryLengths {
    /// Public inputs with ONE: the verifying key's IC length.
    pub inputs: usize,
    /// Domain size − 1.
    pub h: usize,
    /// Aux variables.
    pub l: usize,
    /// Inputs plus aux variables whose A density bit is set.
    pub a: usize,
    /// Variables whose B density bit is set (both B queries).
    pub b: usize,
}

/// Bench-only parameters, by circuit, made on [`BenchSrs::insert`] and never loaded from disk.
#[derive(Default)]
pub struct BenchSrs {
    entries: Mutex<HashMap<CircuitId, Arc<Srs>>>,
}

impl BenchSrs {
    pub fn new() -> BenchSrs {
        BenchSrs::default()
    }

    /// Makes random parameters of `lengths` for `id` (replacing any) and returns their host bytes.
    pub fn insert(&self, id: &CircuitId, lengths: QueryLengths, seed: u64) -> u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let g1: Vec<G1Affine> = {
            let p = progression(G1Projective::random(&mut rng), G1Projective::random(&mut rng));
            let mut out = vec![G1Affine::default(); POOL];
            G1Projective::batch_normalize(&p, &mut out);
            out
        };
        let g2: Vec<G2Affine> = {
            let p = progression(G2Projective::random(&mut rng), G2Projective::random(&mut rng));
            let mut out = vec![G2Affine::default(); POOL];
            G2Projective::batch_normalize(&p, &mut out);
            out
        };
        let vk = VerifyingKey {
            alpha_g1: g1[1],
            beta_g1: g1[2],
            beta_g2: g2[3],
            gamma_g2: g2[4],
            delta_g1: g1[5],
            delta_g2: g2[6],
            ic: (0..lengths.inputs).map(|i| g1[(7 + i) % POOL]).collect(),
        };
        let srs = Srs {
            id: id.clone(),
            path: PathBuf::from("(bench-only random parameters, in memory)"),
            pvk: bellperson::groth16::prepare_verifying_key(&vk),
            vk,
            h: tile(&g1, lengths.h),
            l: tile(&g1, lengths.l),
            a: tile(&g1, lengths.a),
            b_g1: tile(&g1, lengths.b),
            b_g2: tile(&g2, lengths.b),
            loaded_at: SystemTime::now(),
        };
        let bytes = srs.bytes();
        self.entries.lock().unwrap().insert(id.clone(), Arc::new(srs));
        bytes
    }
}

/// `start + i·step` for i < [`POOL`]: distinct random-looking points for one addition each, where
/// [`POOL`] independent random points would cost a scalar multiplication each (seconds in G2).
fn progression<G: Group>(start: G, step: G) -> Vec<G> {
    std::iter::successors(Some(start), |p| Some(*p + step)).take(POOL).collect()
}

/// `pool` repeated to `len` points, filled in parallel.
fn tile<P: Copy + Send + Sync>(pool: &[P], len: usize) -> Vec<P> {
    let mut out = Vec::with_capacity(len);
    (0..len).into_par_iter().map(|i| pool[i % pool.len()]).collect_into_vec(&mut out);
    out
}

impl SrsSource for BenchSrs {
    fn get(&self, id: &CircuitId) -> Result<(Arc<Srs>, Duration), SnarkError> {
        match self.entries.lock().unwrap().get(id) {
            Some(srs) => Ok((srs.clone(), Duration::ZERO)),
            None => Err(SnarkError::new(ErrorCode::ParamsMissing, format!("the bench-only SRS has no parameters for {id}"))),
        }
    }

    fn resident_bytes(&self) -> u64 {
        self.entries.lock().unwrap().values().map(|s| s.bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_parameters_have_the_lengths_asked_and_a_key_that_verifies_nothing() {
        let srs = BenchSrs::new();
        let id = CircuitId("bench-test".into());
        let lengths = QueryLengths { inputs: 3, h: 1023, l: 700, a: 650, b: 300 };
        let bytes = srs.insert(&id, lengths, 7);
        let (got, took) = srs.get(&id).unwrap();
        assert_eq!(took, Duration::ZERO);
        assert_eq!((got.vk.ic.len(), got.h.len(), got.l.len(), got.a.len(), got.b_g1.len(), got.b_g2.len()), (3, 1023, 700, 650, 300, 300));
        assert_eq!(bytes, got.bytes());
        assert_eq!(srs.resident_bytes(), bytes);
        assert_eq!(srs.get(&CircuitId("other".into())).err().map(|e| e.code), Some(ErrorCode::ParamsMissing));
    }
}
