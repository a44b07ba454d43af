//! Library entry points for `snarkctl selftest --gpu` and `snarkctl bench msm|ntt|partition`.
//!
//! The self-test compares every kernel with a CPU reference (blst multi-exp; a plain radix-2 NTT
//! that is itself checked against the DFT definition) on fresh random inputs plus the edge cases
//! that break MSMs: scalars 0, 1, r−1, P = Q, P = −Q, sizes not a multiple of 32, n = 1.
//! Benchmarks report medians of warm runs timed with device events.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::{Curve as _, Group};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use super::device::{GpuDevice, GpuError};
use cudarc::driver::CudaSlice;

use super::msm::{msm, msm_at_width, msm_device, msm_streamed, window_bits, Bases, DeviceBases, G1, G2};
use super::types::{AsDevice, DevFr, DevG1Xyzz};
use super::ntt::{h_poly, ntt, Domain, NttKind, Values};
use super::partition::{self, Ab, Selection, PartitionBases, PartitionInput, STEPS};
use super::record::DeviceRecord;
use crate::groth16::{precompiled_as, synthesize, Fill, Precompiled};
use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use std::sync::Arc;
use crate::groth16::ntt::{omega, Domain as CpuDomain};
use crate::groth16::prover::compute_h;
use crate::groth16::Density;
use std::borrow::Cow;

/// Timed repetitions after one warm-up run.
const BENCH_RUNS: usize = 5;
/// Distinct random bases a benchmark tiles over its n (generating 2^24 random points would take
/// the host minutes; the device's work does not depend on the bases being distinct).
const BENCH_DISTINCT_BASES: usize = 1 << 16;

/// One check of the self-test.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// Outcome of [`selftest`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub device: String,
    pub seed: u64,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

/// Scalar mix for MSM benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Distribution {
    /// Uniform in Fr.
    Random,
    /// A pessimistic Filecoin witness: 50% zeros, 40% ones, 10% uniform.
    Filecoin,
    /// As measured in real 2 KiB PoRep and SnapDeals witnesses (bench/RESULTS.md): 51.1% zeros,
    /// 47.2% ones, 1.7% uniform.
    Witness,
}

/// A benchmark result: median and spread of warm runs, device-event timed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchReport {
    pub what: String,
    pub median_ms: f32,
    pub min_ms: f32,
    pub max_ms: f32,
}

fn random_scalars(rng: &mut StdRng, n: usize, dist: Distribution) -> Vec<Fr> {
    let seed: u64 = rng.gen();
    (0..n)
        .into_par_iter()
        .map(|i| {
            let mut r = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            match dist {
                Distribution::Random => Fr::random(&mut r),
                Distribution::Filecoin => match r.gen_range(0..10) {
                    0..=4 => Fr::ZERO,
                    5..=8 => Fr::ONE,
                    _ => Fr::random(&mut r),
                },
                Distribution::Witness => match r.gen_range(0..1000) {
                    0..=510 => Fr::ZERO,
                    511..=982 => Fr::ONE,
                    _ => Fr::random(&mut r),
                },
            }
        })
        .collect()
}

fn random_points<P: Group + Send + Sync>(rng: &mut StdRng, n: usize) -> Vec<P> {
    let seed: u64 = rng.gen();
    (0..n).into_par_iter().map(|i| P::random(StdRng::seed_from_u64(seed.wrapping_add(i as u64)))).collect()
}

fn g1_affine(p: &[G1Projective]) -> Vec<G1Affine> {
    let mut out = vec![G1Affine::default(); p.len()];
    G1Projective::batch_normalize(p, &mut out);
    out
}

fn g2_affine(p: &[G2Projective]) -> Vec<G2Affine> {
    let mut out = vec![G2Affine::default(); p.len()];
    G2Projective::batch_normalize(p, &mut out);
    out
}

/// The CPU reference of each transform: groth16's NTT, which its own tests check against the
/// DFT definition and bellperson's `EvaluationDomain`.
fn cpu_ntt_kind(v: &mut [Fr], kind: NttKind) {
    let d = CpuDomain::new(v.len().trailing_zeros());
    match kind {
        NttKind::Forward => d.fft(v),
        NttKind::Inverse => d.ifft(v),
        NttKind::CosetForward => d.coset_fft(v),
        NttKind::CosetInverse => d.icoset_fft(v),
    }
}

/// Runs every kernel against its CPU reference on `dev`.
pub fn selftest(dev: &GpuDevice, seed: Option<u64>) -> Result<Report, GpuError> {
    let seed = seed.unwrap_or_else(|| rand::thread_rng().gen());
    let mut rng = StdRng::seed_from_u64(seed);
    let mut checks = Vec::new();
    let mut check = |name: String, passed: bool, detail: String| checks.push(Check { name, passed, detail });

    // The reference NTT against the DFT definition, so the GPU is compared with something known.
    let v = random_scalars(&mut rng, 16, Distribution::Random);
    let w = omega(4);
    let dft: Vec<Fr> =
        (0..16u64).map(|i| v.iter().enumerate().fold(Fr::ZERO, |acc, (j, x)| acc + *x * w.pow_vartime([i * j as u64]))).collect();
    let mut r = v.clone();
    cpu_ntt_kind(&mut r, NttKind::Forward);
    check("cpu reference ntt = dft (n=16)".into(), r == dft, String::new());

    for log_n in [0u32, 1, 5, 10, 11, 13, 20] {
        for kind in [NttKind::Forward, NttKind::Inverse, NttKind::CosetForward, NttKind::CosetInverse] {
            let v = random_scalars(&mut rng, 1 << log_n, Distribution::Random);
            let mut want = v.clone();
            cpu_ntt_kind(&mut want, kind);
            let mut got = v;
            ntt(dev, &mut got, kind)?;
            let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
            check(format!("ntt {kind:?} 2^{log_n}"), bad == 0, format!("{bad} of {} differ", want.len()));
        }
    }

    for n in [1usize, 2, 1000, 4097, (1 << 20) + 1] {
        let a = random_scalars(&mut rng, n, Distribution::Random);
        let b = random_scalars(&mut rng, n, Distribution::Random);
        let c: Vec<Fr> = a.iter().zip(&b).map(|(x, y)| *x * *y).collect(); // a satisfied R1CS
        let want = compute_h(a.clone(), b.clone(), c.clone()).expect("domain fits");
        let got = h_poly(dev, &a, &b, Some(&c))?;
        check(format!("h {n} constraints"), got == want, format!("{} coefficients", want.len()));
        let got = h_poly(dev, &a, &b, None)?;
        check(format!("h {n} constraints, c = a∘b on the device"), got == want, String::new());
        let c_rand = random_scalars(&mut rng, n, Distribution::Random); // and an unsatisfied one
        let got = h_poly(dev, &a, &b, Some(&c_rand))?;
        check(format!("h {n} constraints, random c"), got == compute_h(a.clone(), b.clone(), c_rand.clone()).expect("domain fits"), String::new());
    }

    // A's and B's scalars, picked on the device from the aux by density bits, against the host's
    // filter; a query keeps some inputs first, or none
    for n in [1usize, 63, 64, 65, 1000, (1 << 20) + 3] {
        for (label, p) in [("half set", 0.5), ("none set", 0.0), ("all set", 1.0)] {
            let aux = random_scalars(&mut rng, n, Distribution::Random);
            let mut density = Density::with_len(n);
            (0..n).filter(|_| rng.gen_bool(p)).for_each(|i| density.set(i));
            let inputs = random_scalars(&mut rng, n % 4, Distribution::Random);
            let picked = aux.iter().enumerate().filter(|(i, _)| density.get(*i)).map(|(_, x)| x);
            let want: Vec<Fr> = inputs.iter().chain(picked).copied().collect();
            let sel = Selection { inputs: Cow::Borrowed(&inputs), aux: &density };
            let got = partition::select(dev, &dev.upload(Fr::as_device(&aux))?, &sel)?;
            let got: Vec<Fr> = dev.download(&got, want.len())?.into_iter().map(DevFr::to_scalar).collect();
            let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
            check(format!("scalars picked by density, n={n}, {label}"), bad == 0, format!("{bad} of {} differ", want.len()));
        }
    }

    // a and b made on the device from a precompiled record, against the host's fill from the same
    // record (itself tested equal to a full synthesis), padding and closing constraints included
    for (rows, aux) in [(1usize, 1usize), (1000, 300), (4099, 5000), ((1 << 20) + 5, 1 << 16)] {
        let seed: u64 = rng.gen();
        let values = random_scalars(&mut rng, aux, Distribution::Witness);
        let circuit = |values: Vec<Fr>| RandomRows { seed, rows, aux: values };
        let record = Arc::new(Precompiled::record(circuit(vec![Fr::ZERO; aux])).expect("record"));
        let w = precompiled_as(record.clone(), Fill::Deferred, || synthesize(circuit(values))).expect("synthesis");
        let mut want = w.clone();
        want.fill_deferred();
        let m = 2 * w.evaluations().next_power_of_two();
        let on_device = DeviceRecord::upload(dev, &record)?;
        let (input, aux) = (dev.upload(Fr::as_device(&w.input))?, dev.upload(Fr::as_device(&w.aux))?);
        let (a, b) = on_device.evaluate(dev, &input, &aux, m)?;
        for (name, got, want) in [("a", &a, &want.a), ("b", &b, &want.b)] {
            let got: Vec<Fr> = dev.download(got, m)?.into_iter().map(DevFr::to_scalar).collect();
            let bad = (0..m).filter(|&i| got[i] != want.get(i).copied().unwrap_or(Fr::ZERO)).count();
            check(format!("{name} from a precompiled record, {rows} rows"), bad == 0, format!("{bad} of {m} differ"));
        }
    }

    let g1_points: Vec<G1Projective> = random_points(&mut rng, 5000);
    let g2_points: Vec<G2Projective> = random_points(&mut rng, 600);
    let g1_same = vec![g1_points[0]; 100];
    let g1_opp: Vec<G1Projective> = (0..100).map(|i| if i % 2 == 0 { g1_points[1] } else { -g1_points[1] }).collect();
    let g2_same = vec![g2_points[0]; 40];
    type Case = (&'static str, fn(&mut StdRng, usize) -> Vec<Fr>);
    let cases: [Case; 8] = [
        ("random", |r, n| random_scalars(r, n, Distribution::Random)),
        ("filecoin mix", |r, n| random_scalars(r, n, Distribution::Filecoin)),
        ("all zero", |_, n| vec![Fr::ZERO; n]),
        ("all one", |_, n| vec![Fr::ONE; n]),
        ("all r-1", |_, n| vec![-Fr::ONE; n]),
        ("0/1/r-1 cycle", |_, n| (0..n).map(|i| [Fr::ZERO, Fr::ONE, -Fr::ONE][i % 3]).collect()),
        ("small", |r, n| (0..n).map(|_| Fr::from(r.gen_range(0u64..40))).collect()),
        ("equal random", |r, n| vec![Fr::random(r); n]),
    ];
    for (label, gen) in cases {
        for n in [1usize, 31, 33, 1000, 5000] {
            let scalars = gen(&mut rng, n);
            let pts = g1_affine(&g1_points[..n]);
            let bases = DeviceBases::<G1>::upload(dev, &pts)?;
            let got = msm(dev, &bases, &scalars)?;
            let want = G1Projective::multi_exp(&g1_points[..n], &scalars);
            check(format!("g1 msm {label} n={n}"), got == want, String::new());
        }
        for n in [1usize, 33, 600] {
            let scalars = gen(&mut rng, n);
            let bases = DeviceBases::<G2>::upload(dev, &g2_affine(&g2_points[..n]))?;
            let got = msm(dev, &bases, &scalars)?;
            check(format!("g2 msm {label} n={n}"), got == G2Projective::multi_exp(&g2_points[..n], &scalars), String::new());
        }
    }
    for (label, pts) in [("P = Q", &g1_same), ("P = -Q", &g1_opp)] {
        for gen in [Distribution::Random, Distribution::Filecoin] {
            let scalars = random_scalars(&mut rng, pts.len(), gen);
            let bases = DeviceBases::<G1>::upload(dev, &g1_affine(pts))?;
            let got = msm(dev, &bases, &scalars)?;
            check(format!("g1 msm {label} {gen:?}"), got == G1Projective::multi_exp(pts, &scalars), String::new());
        }
        let ones = vec![Fr::ONE; pts.len()];
        let bases = DeviceBases::<G1>::upload(dev, &g1_affine(pts))?;
        check(format!("g1 msm {label} ones"), msm(dev, &bases, &ones)? == G1Projective::multi_exp(pts, &ones), String::new());
    }
    let scalars = random_scalars(&mut rng, g2_same.len(), Distribution::Random);
    let bases = DeviceBases::<G2>::upload(dev, &g2_affine(&g2_same))?;
    check("g2 msm P = Q".into(), msm(dev, &bases, &scalars)? == G2Projective::multi_exp(&g2_same, &scalars), String::new());
    // Bases streamed from host memory a chunk at a time (the tier for cards that cannot hold a
    // circuit's bases beside a partition), chunks not dividing n, and one chunk for all
    for (n, chunk) in [(5000usize, 1000usize), (5000, 777), (600, 5000)] {
        let scalars = random_scalars(&mut rng, n, Distribution::Filecoin);
        let mut s = dev.upload(Fr::as_device(&scalars))?;
        let g1 = g1_affine(&g1_points[..n]);
        let got = msm_streamed::<G1>(dev, &g1, &mut s, n, chunk)?;
        check(format!("g1 msm streamed n={n} chunk {chunk}"), got == G1Projective::multi_exp(&g1_points[..n], &scalars), String::new());
        let n2 = n.min(g2_points.len());
        let got = msm_streamed::<G2>(dev, &g2_affine(&g2_points[..n2]), &mut s, n2, chunk / 3)?;
        check(format!("g2 msm streamed n={n2} chunk {}", chunk / 3), got == G2Projective::multi_exp(&g2_points[..n2], &scalars[..n2]), String::new());
    }
    // Chunks big enough to go through the pinned staging buffers, with a pageable tail
    let n = (1 << 20) + 3;
    let tiled: Vec<G1Projective> = g1_points.iter().cycle().take(n).copied().collect();
    let scalars = random_scalars(&mut rng, n, Distribution::Filecoin);
    let mut s = dev.upload(Fr::as_device(&scalars))?;
    let got = msm_streamed::<G1>(dev, &g1_affine(&tiled), &mut s, n, (1 << 19) + 1)?;
    check(format!("g1 msm streamed n={n} chunk {} (pinned)", (1 << 19) + 1), got == G1Projective::multi_exp(&tiled, &scalars), String::new());
    // Infinity among the bases (blst encodes it as all-zero affine coordinates).
    let mut with_inf = g1_affine(&g1_points[..64]);
    with_inf[7] = G1Affine::default();
    let scalars = random_scalars(&mut rng, 64, Distribution::Random);
    let want: G1Projective = with_inf.iter().zip(&scalars).map(|(p, s)| G1Projective::from(p) * s).sum();
    let bases = DeviceBases::<G1>::upload(dev, &with_inf)?;
    check("g1 msm with an infinity base".into(), msm(dev, &bases, &scalars)? == want, String::new());
    // Sizes and widths the small cases above never reach; bases repeat 2^10 distinct points, and
    // blst checks the same sums. 2^21 + 7 at its own width (16: chunks cross many buckets and
    // buckets many chunks), at 22 (12 windows of 2^21 buckets, most holding zero or one point) and
    // at 18 (the top window holds 4 bits: 16 buckets, each gathered from ~500 chunk pieces);
    // 2^23 + 7 at 20 (the width of the 32 GiB H MSM).
    let g1_distinct = random_points::<G1Projective>(&mut rng, 1 << 10);
    for (n, width) in [((1usize << 21) + 7, None), ((1 << 21) + 7, Some(22)), ((1 << 21) + 7, Some(18)), ((1 << 23) + 7, Some(20))] {
        let pts: Vec<G1Projective> = (0..n).map(|i| g1_distinct[i % g1_distinct.len()]).collect();
        let scalars = random_scalars(&mut rng, n, Distribution::Random);
        let bases = DeviceBases::<G1>::upload(dev, &g1_affine(&pts))?;
        let c = width.unwrap_or_else(|| window_bits(n, std::mem::size_of::<DevG1Xyzz>() as u64, u64::MAX));
        let got = msm_at_width(dev, &bases, &scalars, Some(c))?;
        check(format!("g1 msm random n={n} (window {c})"), got == G1Projective::multi_exp(&pts, &scalars), String::new());
    }

    Ok(Report { device: dev.label(), seed, checks })
}

/// A random R1CS with `rows` constraints over ONE, two inputs and the aux `aux`: each row of A
/// and B has up to four terms with coefficients ±1, 2 or random; the rows depend on `seed` only.
struct RandomRows {
    seed: u64,
    rows: usize,
    aux: Vec<Fr>,
}

impl Circuit<Fr> for RandomRows {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let mut inputs = vec![CS::one()];
        for i in 0..2u64 {
            inputs.push(cs.alloc_input(|| "x", || Ok(Fr::from(7 * i + 3)))?);
        }
        let aux = self.aux.iter().map(|v| cs.alloc(|| "w", || Ok(*v))).collect::<Result<Vec<_>, _>>()?;
        let coeffs = [Fr::ONE, -Fr::ONE, Fr::from(2u64), Fr::random(&mut rng), Fr::random(&mut rng)];
        let row = |rng: &mut StdRng| {
            (0..rng.gen_range(0..5)).fold(LinearCombination::zero(), |lc, _| {
                let v = if rng.gen_bool(0.1) { inputs[rng.gen_range(0..inputs.len())] } else { aux[rng.gen_range(0..aux.len())] };
                lc + (coeffs[rng.gen_range(0..coeffs.len())], v)
            })
        };
        for _ in 0..self.rows {
            let (a, b) = (row(&mut rng), row(&mut rng));
            cs.enforce(|| "row", |_| a, |_| b, |lc| lc);
        }
        Ok(())
    }
}

fn median(mut t: Vec<f32>, what: String) -> BenchReport {
    t.sort_by(|a, b| a.total_cmp(b));
    BenchReport { what, median_ms: t[t.len() / 2], min_ms: t[0], max_ms: t[t.len() - 1] }
}

/// One timed step of [`bench_msm`] on a fresh copy of the scalars.
type BenchStep<'a> = Box<dyn FnMut(&mut CudaSlice<DevFr>) -> Result<(), GpuError> + 'a>;

/// G1 or G2 MSM of `n` scalars drawn from `dist`, bases resident. Three rows: the MSM from
/// scalars already on the device (copied from a master buffer before each run, outside the
/// timing), and the scalar upload alone from pageable host memory and through pinned staging.
pub fn bench_msm(dev: &GpuDevice, n: usize, dist: Distribution, g2: bool) -> Result<Vec<BenchReport>, GpuError> {
    let mut rng = StdRng::seed_from_u64(n as u64);
    let scalars = random_scalars(&mut rng, n, dist);
    let (mut tc, mut tu, mut ts) = (Vec::new(), Vec::new(), Vec::new());
    let master = dev.upload(Fr::as_device(&scalars))?;
    let mut run = |mut f: BenchStep<'_>| -> Result<(), GpuError> {
        for _ in 0..=BENCH_RUNS {
            let mut s = dev.copy_of(&master)?;
            tc.push(dev.time_ms(|| f(&mut s))?.1);
            tu.push(dev.time_ms(|| dev.upload_pageable(Fr::as_device(&scalars)).map(drop))?.1);
            ts.push(dev.time_ms(|| dev.upload(Fr::as_device(&scalars)).map(drop))?.1);
        }
        Ok(())
    };
    let curve = if g2 { "g2" } else { "g1" };
    let distinct = BENCH_DISTINCT_BASES.min(n);
    if g2 {
        let bases = DeviceBases::<G2>::tiled(dev, &g2_affine(&random_points(&mut rng, distinct)), n)?;
        run(Box::new(|s| msm_device(dev, &bases, s, n).map(drop)))?;
    } else {
        let bases = DeviceBases::<G1>::tiled(dev, &g1_affine(&random_points(&mut rng, distinct)), n)?;
        run(Box::new(|s| msm_device(dev, &bases, s, n).map(drop)))?;
    }
    for t in [&mut tc, &mut tu, &mut ts] {
        t.remove(0);
    }
    Ok(vec![
        median(tc, format!("{curve} msm n={n} {dist:?}, scalars on device")),
        median(tu, format!("{curve} scalar upload n={n} (pageable)")),
        median(ts, format!("{curve} scalar upload n={n} (pinned staging)")),
    ])
}

/// Forward NTT of 2^log_n elements already on the device, and h on a and b already there as
/// proofs make it (c = a∘b on the device, 7 transforms, the pointwise step): the h row excludes
/// the uploads that a partition's proof overlaps with it.
pub fn bench_ntt(dev: &GpuDevice, log_n: u32) -> Result<Vec<BenchReport>, GpuError> {
    let mut rng = StdRng::seed_from_u64(log_n as u64);
    let dom = Domain::new(dev, log_n)?;
    let mut ab = Vec::new();
    for _ in 0..2 {
        ab.push(dom.upload_padded(dev, &random_scalars(&mut rng, 1 << log_n, Distribution::Random))?);
    }
    let mut times = Vec::new();
    for _ in 0..=BENCH_RUNS {
        times.push(dev.time_ms(|| dom.apply(dev, &mut ab[0], NttKind::Forward))?.1);
    }
    times.remove(0);
    let mut h_times = Vec::new();
    for _ in 0..=BENCH_RUNS {
        // h consumes its inputs: copies, made outside the timing, taken as a proof takes a and b
        // prefetched by the proof before
        let (a, b) = (dev.resident(dev.copy_of(&ab[0])?)?, dev.resident(dev.copy_of(&ab[1])?)?);
        h_times.push(dev.time_ms(|| dom.h(dev, Values::Device(a), Values::Device(b), None))?.1);
    }
    h_times.remove(0);
    Ok(vec![
        median(times, format!("fr ntt 2^{log_n}")),
        median(h_times, format!("h 2^{log_n} (c = a∘b, 7 ntt + pointwise, no uploads)")),
    ])
}

/// A partition shape for `snarkctl bench partition --shape`.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub name: &'static str,
    /// R1CS constraints (a, b, c lengths); the domain is the next power of two.
    pub constraints: usize,
    /// Auxiliary variables: the L MSM's length. The A, B_G1 and B_G2 MSMs are taken dense over
    /// them (an upper bound: real density vectors drop some).
    pub aux: usize,
}

/// One 32 GiB PoRep partition (constraint count from counting the blank circuit; a SHA-256-heavy
/// circuit has about one auxiliary variable, a bit, per constraint).
pub const POREP_32G: Shape = Shape { name: "porep-32g", constraints: 130_278_541, aux: 130_278_541 };

/// One partition's whole device proof of `shape`, through the path `GpuBackend` runs, with
/// random inputs of the right sizes: a and b uniform; the witness (L, A, B scalars) drawn from
/// `mix`; bases tiled from random points. One row per step (compute-stream time from the end of
/// the step before, uploads overlapping), and the whole proof; first for a partition that
/// uploads its own a and b (a proof's first, or one proved alone), then for partitions proved
/// back to back, each finding its a and b uploaded during the MSMs of the one before (the steady
/// state of a multi-partition proof). The second series' whole-proof row is the time from one
/// partition's start to the next one's.
pub fn bench_prove_shape(dev: &GpuDevice, shape: Shape, mix: Distribution) -> Result<Vec<BenchReport>, GpuError> {
    let mut rng = StdRng::seed_from_u64(shape.constraints as u64);
    let n = shape.constraints;
    let a = random_scalars(&mut rng, n, Distribution::Random);
    let b = random_scalars(&mut rng, n, Distribution::Random);
    let aux = random_scalars(&mut rng, shape.aux, mix);
    let m = (n.max(1)).next_power_of_two();
    let g1_points = g1_affine(&random_points(&mut rng, BENCH_DISTINCT_BASES));
    let h_bases = DeviceBases::<G1>::tiled(dev, &g1_points, m - 1)?;
    let g1 = DeviceBases::<G1>::tiled(dev, &g1_points, shape.aux)?;
    let g2 = DeviceBases::<G2>::tiled(dev, &g2_affine(&random_points(&mut rng, BENCH_DISTINCT_BASES)), shape.aux)?;
    let bases = PartitionBases { h: Bases::Device(&h_bases), l: Bases::Device(&g1), a: Bases::Device(&g1), b_g1: Bases::Device(&g1), b_g2: Some(Bases::Device(&g2)) };
    let dense = Density::all(shape.aux);
    let mut rows = Vec::new();
    for pipelined in [false, true] {
        let next = pipelined.then_some(partition::Next::Ab(&a, &b));
        let select = || Selection { inputs: Cow::Borrowed(&[]), aux: &dense };
        let input = PartitionInput { ab: Ab::Host { a: &a, b: &b }, input: &[], aux: &aux, a_select: select(), b_select: select(), next };
        let mut t: Vec<Vec<f32>> = vec![Vec::new(); STEPS.len() + 1];
        let mut prefetched = None;
        // run 0 warms up (and, pipelined, prefetches for run 1)
        for run in 0..=3 {
            if pipelined && run > 0 && prefetched.is_none() {
                return Err(dev.err("bench", "the next partition's a and b did not fit beside this one's"));
            }
            let (mut out, whole) = dev.time_ms(|| partition::run(dev, &bases, &input, prefetched.take(), &mut || {}, &mut || false))?;
            prefetched = out.next.take();
            for (i, ms) in out.steps.into_iter().chain([whole]).enumerate() {
                t[i].push(ms);
            }
        }
        let how = if pipelined { "a, b prefetched by the partition before" } else { "a, b uploaded by this partition" };
        rows.extend(t.into_iter().enumerate().map(|(i, mut v)| {
            v.remove(0);
            let what = STEPS.get(i).copied().unwrap_or("whole partition on the GPU");
            median(v, format!("{} (domain 2^{}, {mix:?} mix, {how}): {what}", shape.name, m.trailing_zeros()))
        }));
    }
    Ok(rows)
}
