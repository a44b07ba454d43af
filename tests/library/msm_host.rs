//! The G1 MSM's windowed path (cuda/msm/pippenger.cuh: digits, counting sort, chunked bucket
//! sums and their gather, running sums, row reduction), built for the host and run one thread at
//! a time, against blstrs. CI has no GPU; this checks the index arithmetic of those kernels there,
//! at widths and group sizes that put buckets across many chunks, leave runs of empty buckets and
//! split the scatter's windows into groups. The GPU self-test checks the same code on a device.

use blstrs::{G1Affine, G1Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use super::host_cpp::{self, words};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use snarkd::gpu::DevG1Xyzz;

/// Σ scalars[i]·bases[i] by the host build, at window width `c`, `wpt` windows a scatter thread
/// and `nseg` runs of buckets a window.
fn host_msm(exe: &std::path::Path, c: u32, wpt: u32, nseg: u32, bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    let mut input = format!("{c:x} {wpt:x} {nseg:x} {:x}\n", bases.len());
    for b in bases {
        input.push_str(&host_cpp::line("", &words::<G1Affine, 24>(b)));
        input.push('\n');
    }
    for s in scalars {
        let canonical: Vec<u32> = s.to_repr().as_ref().chunks(4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
        input.push_str(&host_cpp::line("", &canonical));
        input.push('\n');
    }
    let out = host_cpp::run(exe, input);
    assert_eq!(out.len(), 1, "one result line");
    DevG1Xyzz(out[0].clone().try_into().expect("48 words")).to_projective()
}

#[test]
fn windowed_msm_kernels_match_blstrs() {
    let mut rng = StdRng::seed_from_u64(2027);
    // 37 distinct points repeated, so buckets meet P + P and, through signed digits, P − P
    let distinct: Vec<G1Affine> = (0..37).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
    let mut scalars = vec![Fr::ONE, -Fr::ONE, Fr::ONE.double(), Fr::from(1u64 << 40), Fr::from(31u64), Fr::ZERO];
    scalars.extend((0..2994).map(|i| if i % 9 == 0 { Fr::from(rng.gen_range(0..64u64)) } else { Fr::random(&mut rng) }));
    let bases: Vec<G1Affine> = (0..scalars.len()).map(|i| distinct[i % distinct.len()]).collect();
    let want = |n: usize| -> G1Projective { bases[..n].iter().zip(&scalars[..n]).map(|(b, s)| G1Projective::from(b) * s).sum() };
    let exe = host_cpp::compile("host_msm.cpp");
    let cases: [(u32, u32, u32, usize, &str); 5] = [
        (6, 43, 4, 3000, "43 windows in three scatter batches; ~94 points a bucket, chunks of 256 cross buckets"),
        (6, 5, 1, 3000, "scatter groups of 5 windows (carries recomputed up to each group)"),
        (4, 64, 2, 3000, "8 buckets a window: each bucket spans several chunks and is gathered"),
        (12, 1, 256, 1500, "2048 buckets a window for 1500 points: runs of empty buckets"),
        (4, 2, 8, 1, "one point"),
    ];
    for (c, wpt, nseg, n, what) in cases {
        let got = host_msm(&exe, c, wpt, nseg, &bases[..n], &scalars[..n]);
        assert_eq!(got, want(n), "c = {c}, {wpt} windows a scatter thread, {nseg} segments: {what}");
    }
    let _ = std::fs::remove_file(&exe);
}
