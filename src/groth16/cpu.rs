//! The CPU proving backend: h by NTTs (`prover::compute_h`), the five MSMs on blst, assembly by
//! `prover::assemble`. It is the fallback when no GPU is configured and the reference the GPU
//! backend is checked against. Like the GPU backend it pauses between steps for a more urgent
//! partition, so a WinningPoSt on a host without a GPU does not wait for a whole partition.
//!
//! Filecoin witnesses are mostly 0 and 1 (SHA-256 bits), so each MSM first sorts its scalars on
//! rayon threads: zeros are skipped, the bases of ones are summed with blst's batched affine
//! addition, and only the remaining scalars go through blst's (multi-threaded) Pippenger.

use std::time::{Duration, Instant};

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::Group;
use rayon::prelude::*;

use super::prover::{assemble, check_shape, compute_h, MsmSums};
use super::{BackendError, Density, Interlude, Proof, ProveTimings, ProvingBackend, ReleaseFn, UrgentFn, Witness};
use crate::srs::Srs;

/// Scalars per classification task; a multiple of 64 so tasks start on density word boundaries.
const CLASSIFY_CHUNK: usize = 1 << 13;

/// Proves on the host CPU with rayon's global pool (and blst's pool inside Pippenger).
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuBackend;

impl CpuBackend {
    pub fn new() -> Self {
        CpuBackend
    }

    /// Proves with the given blinding factors instead of fresh ones. With the same r and s as
    /// bellperson's `create_proof`, the proof is identical byte for byte, which is how this
    /// backend (and any other checked against it) is tested. The proof runs in five steps (h,
    /// then the H, L, A and B_G1 MSMs, then B_G2's), calling `urgent` after each but the last so
    /// that a more urgent partition is proved there; the time such interludes take is left out
    /// of this proof's timings.
    pub fn prove_with_randomness(
        &self,
        witness: Witness,
        srs: &Srs,
        (r, s): (Fr, Fr),
        release: ReleaseFn<'_>,
        urgent: UrgentFn<'_>,
    ) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        let mut paused = Duration::ZERO;
        let mut pause = || {
            let started = Instant::now();
            if urgent(&Between(self)) {
                paused += started.elapsed();
            }
        };
        let start = Instant::now();
        check_shape(&witness, srs)?;
        // what the engine reserved for: a deferred witness's a and b are made here, outside it
        let total_bytes = witness.bytes();
        let deferred = witness.record.is_some();
        let mut witness = witness;
        witness.fill_deferred();
        let Witness {
            a,
            b,
            input,
            aux,
            a_aux_density,
            b_input_density,
            b_aux_density,
            record: _,
        } = witness;
        let abc_bytes = if deferred { 0 } else { ((a.len() + b.len()) * std::mem::size_of::<Fr>()) as u64 };

        // C's evaluations, as a satisfied R1CS has them (`Witness::a`)
        let c: Vec<Fr> = a.par_iter().zip(b.par_iter()).with_min_len(1 << 12).map(|(a, b)| *a * b).collect();
        let h_coeffs = compute_h(a, b, c)?;
        release(abc_bytes);
        let ntt = start.elapsed();

        // every pause falls inside the MSMs' time, which leaves them out
        let msm_start = Instant::now();
        pause();
        let h = g1_msm(&srs.h, &h_coeffs, None);
        drop(h_coeffs);
        pause();
        let l = g1_msm(&srs.l, &aux, None);
        pause();
        // The A query lists every input (full density), then the aux variables present in A.
        let (a_inputs, a_aux) = srs.a.split_at(input.len());
        let a = g1_msm(a_inputs, &input, None) + g1_msm(a_aux, &aux, Some(&a_aux_density));
        pause();
        let (b1_inputs, b1_aux) = srs.b_g1.split_at(b_input_density.count_ones());
        let b_g1 = g1_msm(b1_inputs, &input, Some(&b_input_density)) + g1_msm(b1_aux, &aux, Some(&b_aux_density));
        pause();
        let (b2_inputs, b2_aux) = srs.b_g2.split_at(b_input_density.count_ones());
        let b_g2 = g2_msm(b2_inputs, &input, Some(&b_input_density)) + g2_msm(b2_aux, &aux, Some(&b_aux_density));
        drop((input, aux, a_aux_density, b_input_density, b_aux_density));
        release(total_bytes - abc_bytes);
        let msm = msm_start.elapsed().saturating_sub(paused);

        let proof = assemble(&srs.vk, &MsmSums { h, l, a, b_g1, b_g2 }, r, s)?;
        Ok((
            proof,
            ProveTimings {
                ntt,
                msm,
                total: start.elapsed().saturating_sub(paused),
            },
        ))
    }
}

/// A proof made between two steps of one the CPU backend is making. Host memory is the engine's
/// budget's to judge (the waiting witness is already reserved there), so every one fits.
struct Between<'a>(&'a CpuBackend);

impl Interlude for Between<'_> {
    fn fits(&self, _witness: &Witness, _srs: &Srs) -> bool {
        true
    }

    fn prove(&self, witness: Witness, srs: &Srs, release: ReleaseFn<'_>) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        self.0.prove(witness, srs, release)
    }
}

impl ProvingBackend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    /// Pauses after h and after each MSM but the last (B_G2's), as the GPU backend does, so a
    /// WinningPoSt on a host without a GPU waits for one step of a partition, not all of it.
    fn prove_then(
        &self,
        witness: Witness,
        srs: &Srs,
        release: ReleaseFn<'_>,
        next: Option<&Witness>,
        urgent: UrgentFn<'_>,
    ) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        let _ = next;
        let mut rng = rand_core::OsRng;
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        self.prove_with_randomness(witness, srs, (r, s), release, urgent)
    }
}

/// Σ scalars[i]·bases[j], where j counts the scalars whose density bit is set (all of them when
/// `density` is None). The caller has checked that `bases` has one point per counted scalar.
pub fn g1_msm(bases: &[G1Affine], scalars: &[Fr], density: Option<&Density>) -> G1Projective {
    // SAFETY: G1Affine is #[repr(transparent)] over blst_p1_affine.
    let raw = unsafe { std::slice::from_raw_parts(bases.as_ptr().cast::<blst_p1_affine>(), bases.len()) };
    let mut out = G1Projective::identity();
    *out.as_mut() = msm::<G1>(raw, scalars, density);
    out
}

/// The G2 counterpart of [`g1_msm`].
pub fn g2_msm(bases: &[G2Affine], scalars: &[Fr], density: Option<&Density>) -> G2Projective {
    // SAFETY: G2Affine is #[repr(transparent)] over blst_p2_affine.
    let raw = unsafe { std::slice::from_raw_parts(bases.as_ptr().cast::<blst_p2_affine>(), bases.len()) };
    let mut out = G2Projective::identity();
    *out.as_mut() = msm::<G2>(raw, scalars, density);
    out
}

/// What the generic MSM needs from a group, over blst's raw point types.
trait BlstGroup {
    type Affine: Copy + Send + Sync;
    type Point: Copy + Send + Sync + Default;
    fn sum(points: &[*const Self::Affine]) -> Self::Point;
    fn pippenger(points: &[Self::Affine], scalars: &[u8]) -> Self::Point;
    fn add(acc: &mut Self::Point, p: &Self::Point);
}

struct G1;
struct G2;

impl BlstGroup for G1 {
    type Affine = blst_p1_affine;
    type Point = blst_p1;
    fn sum(points: &[*const blst_p1_affine]) -> blst_p1 {
        let mut out = blst_p1::default();
        if !points.is_empty() {
            // SAFETY: every pointer refers to a live base; blst reads exactly points.len() of them.
            unsafe { blst::blst_p1s_add(&mut out, points.as_ptr(), points.len()) };
        }
        out
    }
    fn pippenger(points: &[blst_p1_affine], scalars: &[u8]) -> blst_p1 {
        if points.is_empty() {
            return blst_p1::default();
        }
        points.mult(scalars, 255)
    }
    fn add(acc: &mut blst_p1, p: &blst_p1) {
        let a = *acc;
        // SAFETY: plain value arguments.
        unsafe { blst::blst_p1_add_or_double(acc, &a, p) };
    }
}

impl BlstGroup for G2 {
    type Affine = blst_p2_affine;
    type Point = blst_p2;
    fn sum(points: &[*const blst_p2_affine]) -> blst_p2 {
        let mut out = blst_p2::default();
        if !points.is_empty() {
            // SAFETY: every pointer refers to a live base; blst reads exactly points.len() of them.
            unsafe { blst::blst_p2s_add(&mut out, points.as_ptr(), points.len()) };
        }
        out
    }
    fn pippenger(points: &[blst_p2_affine], scalars: &[u8]) -> blst_p2 {
        if points.is_empty() {
            return blst_p2::default();
        }
        points.mult(scalars, 255)
    }
    fn add(acc: &mut blst_p2, p: &blst_p2) {
        let a = *acc;
        // SAFETY: plain value arguments.
        unsafe { blst::blst_p2_add_or_double(acc, &a, p) };
    }
}

/// One classification task's result: the sum of its 1-scalar bases, and the (scalar index, base
/// index) pairs of its other nonzero scalars.
type Sorted<P> = (P, Vec<(usize, usize)>);

fn msm<G: BlstGroup>(bases: &[G::Affine], scalars: &[Fr], density: Option<&Density>) -> G::Point {
    let present = |i: usize| density.is_none_or(|d| d.get(i));
    let expected = density.map_or(scalars.len(), Density::count_ones);
    assert_eq!(bases.len(), expected, "msm bases do not match the scalars' density");

    // Where each task's first base is: the number of present scalars before it.
    let tasks = scalars.len().div_ceil(CLASSIFY_CHUNK);
    let first_base: Vec<usize> = match density {
        None => (0..tasks).map(|t| t * CLASSIFY_CHUNK).collect(),
        Some(d) => {
            let per_task = CLASSIFY_CHUNK / 64;
            let mut acc = 0;
            d.words()
                .chunks(per_task)
                .take(tasks)
                .map(|w| {
                    let at = acc;
                    acc += w.iter().map(|x| x.count_ones() as usize).sum::<usize>();
                    at
                })
                .collect()
        }
    };

    // Per task: the sum of the bases whose scalar is 1, and (scalar, base) index pairs of the rest.
    let sorted: Vec<Sorted<G::Point>> = (0..tasks)
        .into_par_iter()
        .map(|t| {
            let mut ones: Vec<*const G::Affine> = Vec::new();
            let mut others = Vec::new();
            let mut base = first_base[t];
            let lo = t * CLASSIFY_CHUNK;
            let hi = scalars.len().min(lo + CLASSIFY_CHUNK);
            for (i, s) in scalars[lo..hi].iter().enumerate().map(|(k, s)| (lo + k, s)) {
                if !present(i) {
                    continue;
                }
                if *s == Fr::ONE {
                    ones.push(&bases[base]);
                } else if !s.is_zero_vartime() {
                    others.push((i, base));
                }
                base += 1;
            }
            (G::sum(&ones), others)
        })
        .collect();

    let mut acc = G::Point::default();
    for (sum, _) in &sorted {
        G::add(&mut acc, sum);
    }
    let others: Vec<(usize, usize)> = sorted.into_iter().flat_map(|(_, o)| o).collect();
    if others.is_empty() {
        return acc;
    }
    let bytes: Vec<[u8; 32]> = others.par_iter().map(|&(i, _)| scalars[i].to_bytes_le()).collect();
    // When every base takes part (the dense h and l queries of random-looking scalars), Pippenger
    // reads the bases in place instead of a gathered copy.
    let big = if others.len() == bases.len() {
        G::pippenger(bases, bytes.as_flattened())
    } else {
        let gathered: Vec<G::Affine> = others.par_iter().map(|&(_, j)| bases[j]).collect();
        G::pippenger(&gathered, bytes.as_flattened())
    };
    G::add(&mut acc, &big);
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Curve;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Straightforward Σ s·P over the present scalars.
    fn naive(bases: &[G1Affine], scalars: &[Fr], density: Option<&Density>) -> G1Projective {
        let mut j = 0;
        let mut acc = G1Projective::identity();
        for (i, s) in scalars.iter().enumerate() {
            if density.is_none_or(|d| d.get(i)) {
                acc += bases[j] * s;
                j += 1;
            }
        }
        acc
    }

    #[test]
    fn msm_matches_naive_on_mixed_scalars() {
        let mut rng = StdRng::seed_from_u64(5);
        for n in [0usize, 1, 2, 31, 100, CLASSIFY_CHUNK + 77] {
            let scalars: Vec<Fr> = (0..n)
                .map(|_| match rng.gen_range(0..4) {
                    0 => Fr::ZERO,
                    1 => Fr::ONE,
                    _ => Fr::random(&mut rng),
                })
                .collect();
            let mut density = Density::with_len(n);
            for i in 0..n {
                if rng.gen_bool(0.7) {
                    density.set(i);
                }
            }
            let all: Vec<G1Affine> = (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
            assert_eq!(
                g1_msm(&all, &scalars, None),
                naive(&all, &scalars, None),
                "dense, n = {n}"
            );
            let some = &all[..density.count_ones()];
            assert_eq!(
                g1_msm(some, &scalars, Some(&density)),
                naive(some, &scalars, Some(&density)),
                "with density, n = {n}"
            );
            let g2: Vec<G2Affine> = (0..n.min(200))
                .map(|_| G2Projective::random(&mut rng).to_affine())
                .collect();
            let s2 = &scalars[..g2.len()];
            let want = g2
                .iter()
                .zip(s2)
                .fold(G2Projective::identity(), |acc, (p, s)| acc + *p * s);
            assert_eq!(g2_msm(&g2, s2, None), want, "g2, n = {n}");
        }
    }
}
