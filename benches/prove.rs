//! Compares snarkd's CPU proving (our synthesis + `CpuBackend`) with bellperson's
//! `create_random_proof` on the same mostly-boolean circuit in one run, and prints the ratio.
//!
//! `cargo bench --bench prove` runs 2^18 constraints; `SNARKD_BENCH_LOG=16` picks another size.
//! Parameters are well-formed but not from a setup (multiples of the generators): building real
//! ones would take longer than the proofs, and MSM cost does not depend on the discrete logs. Both
//! provers must still produce the same proof for the same r, s, which the bench asserts.
//!
//! `cargo bench --bench prove -- synthesis [REQUEST.json …]` instead times one partition's
//! sequential and parallel synthesis (`snarkd::tools::bench_synthesis`) of each request (JSON as
//! `snarkctl` sends it), by default the four 2 KiB test requests made in `$SNARKD_TEST_PARAMS`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bellperson::groth16::{create_proof, create_random_proof, prepare_verifying_key, Parameters, VerifyingKey};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::{Curve, Group};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use snarkd::groth16::verify::proof_to_bytes;
use snarkd::groth16::{synthesize, CpuBackend, ProvingBackend, Witness};
use snarkd::proofs::{ProofKind, ProofRequest};
use snarkd::srs::{CircuitId, Srs};

/// SHA-256-like: booleans, XORs of neighbouring bits, and 32-bit words packed from them.
#[derive(Clone)]
struct Bits {
    n: usize,
}

impl Circuit<Fr> for Bits {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = StdRng::seed_from_u64(1);
        let input = cs.alloc_input(|| "seed", || Ok(Fr::from(12345u64)))?;
        cs.enforce(|| "seed", |lc| lc + input, |lc| lc + CS::one(), |lc| lc + input);
        let bits: Vec<bool> = (0..self.n).map(|_| rng.gen()).collect();
        let fr = |b: bool| if b { Fr::ONE } else { Fr::ZERO };
        let vars = bits
            .iter()
            .map(|&b| {
                let v = cs.alloc(|| "bit", || Ok(fr(b)))?;
                cs.enforce(|| "bool", |lc| lc + v, |lc| lc + CS::one() - v, |lc| lc);
                Ok(v)
            })
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        let mut xors = Vec::with_capacity(self.n);
        for i in 0..self.n - 1 {
            let c = bits[i] ^ bits[i + 1];
            let v = cs.alloc(|| "xor", || Ok(fr(c)))?;
            // (2a)·b = a + b − c
            cs.enforce(
                || "xor",
                |lc| lc + (Fr::from(2u64), vars[i]),
                |lc| lc + vars[i + 1],
                |lc| lc + vars[i] + vars[i + 1] - v,
            );
            xors.push((c, v));
        }
        for word in xors.chunks(32) {
            let value: u64 = word.iter().enumerate().map(|(j, (c, _))| (*c as u64) << j).sum();
            let w = cs.alloc(|| "word", || Ok(Fr::from(value)))?;
            cs.enforce(
                || "pack",
                |mut lc| {
                    for (j, (_, v)) in word.iter().enumerate() {
                        lc = lc + (Fr::from(1u64 << j), *v);
                    }
                    lc
                },
                |lc| lc + CS::one(),
                |lc| lc + w,
            );
        }
        Ok(())
    }
}

/// `count` distinct points k·P for consecutive k, built in parallel.
fn points<G>(count: usize, p: G) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Fr> + Send + Sync,
    G::AffineRepr: Default + Clone + Send,
{
    const CHUNK: usize = 4096;
    let chunks: Vec<Vec<G::AffineRepr>> = (0..count.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let len = CHUNK.min(count - c * CHUNK);
            let mut x = p * Fr::from((c * CHUNK + 1) as u64);
            let mut proj = Vec::with_capacity(len);
            for _ in 0..len {
                proj.push(x);
                x += p;
            }
            let mut out = vec![G::AffineRepr::default(); len];
            G::batch_normalize(&proj, &mut out);
            out
        })
        .collect();
    chunks.concat()
}

/// Parameters with the query sizes `w` needs.
fn shaped_params(w: &Witness, rng: &mut StdRng) -> Parameters<Bls12> {
    let g1 = G1Projective::generator();
    let g2 = G2Projective::generator();
    let mut g1r = || (g1 * Fr::random(&mut *rng)).to_affine();
    let vk = VerifyingKey {
        alpha_g1: g1r(),
        beta_g1: g1r(),
        beta_g2: (g2 * Fr::from(11u64)).to_affine(),
        gamma_g2: (g2 * Fr::from(13u64)).to_affine(),
        delta_g1: g1r(),
        delta_g2: (g2 * Fr::from(17u64)).to_affine(),
        ic: points(w.input.len(), g1 * Fr::from(19u64)),
    };
    let m = w.a.len().next_power_of_two();
    let b = w.b_input_density.count_ones() + w.b_aux_density.count_ones();
    Parameters {
        vk,
        h: Arc::new(points(m - 1, g1 * Fr::from(23u64))),
        l: Arc::new(points(w.aux.len(), g1 * Fr::from(29u64))),
        a: Arc::new(points(
            w.input.len() + w.a_aux_density.count_ones(),
            g1 * Fr::from(31u64),
        )),
        b_g1: Arc::new(points(b, g1 * Fr::from(37u64))),
        b_g2: Arc::new(points(b, g2 * Fr::from(41u64))),
    }
}

/// `cargo bench` passes `--bench`; the other arguments select the synthesis benchmark.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    match args.split_first() {
        Some((mode, requests)) if mode == "synthesis" => synthesis(requests),
        _ => prove(),
    }
}

fn runs() -> usize {
    std::env::var("SNARKD_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(3)
}

fn synthesis(files: &[String]) {
    let requests: Vec<ProofRequest> = if files.is_empty() {
        let dir = std::env::var_os("SNARKD_TEST_PARAMS").unwrap_or_else(|| "/var/tmp/snarkd-test-params".into());
        let manifest = snarkd::tools::ensure_testdata(dir.as_ref(), 2048).unwrap();
        ProofKind::ALL.iter().map(|&k| manifest.request(k).unwrap()).collect()
    } else {
        files.iter().map(|f| ProofRequest::from_json(&std::fs::read(f).unwrap()).unwrap()).collect()
    };
    let runs = runs();
    println!("synthesis of partition 0, median of {runs}, {} threads", rayon::current_num_threads());
    for request in &requests {
        let [sequential, parallel, precompiled, record, one_thread] = snarkd::tools::bench_synthesis(request, 0, runs).unwrap();
        let (s, p, c) = (sequential.samples.median(), parallel.samples.median(), precompiled.samples.median());
        // The process's first parallel synthesis of a circuit also counts its items' shape.
        println!(
            "{}: sequential {:.3} s, parallel {:.3} s (first {:.3} s), precompiled {:.3} s, speedups {:.2}x / {:.2}x; {} in {:.3} s ({:.3} s on one thread)",
            request.kind(),
            s.as_secs_f64(),
            p.as_secs_f64(),
            parallel.samples.0[0].as_secs_f64(),
            c.as_secs_f64(),
            s.as_secs_f64() / p.as_secs_f64(),
            s.as_secs_f64() / c.as_secs_f64(),
            record.name,
            record.samples.median().as_secs_f64(),
            one_thread.samples.median().as_secs_f64(),
        );
    }
}

fn prove() {
    let log: u32 = std::env::var("SNARKD_BENCH_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(18);
    let runs = runs();
    // 2n + n/32 + 2 constraints fill most of a 2^log domain
    let n = ((1usize << log) - 16) * 32 / 65;
    let circuit = Bits { n };

    let w = synthesize(circuit.clone()).unwrap();
    println!(
        "circuit: {} constraints (domain 2^{log}), {} aux, {} inputs, threads {}",
        w.a.len(),
        w.aux.len(),
        w.input.len(),
        rayon::current_num_threads()
    );
    let mut rng = StdRng::seed_from_u64(2);
    let params = shaped_params(&w, &mut rng);
    let srs = Srs {
        id: CircuitId("bench".into()),
        path: "bench".into(),
        vk: params.vk.clone(),
        pvk: prepare_verifying_key(&params.vk),
        h: params.h.to_vec(),
        l: params.l.to_vec(),
        a: params.a.to_vec(),
        b_g1: params.b_g1.to_vec(),
        b_g2: params.b_g2.to_vec(),
        loaded_at: SystemTime::now(),
    };

    let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
    let (ours, _) = CpuBackend.prove_with_randomness(w, &srs, (r, s), &|_| {}, &mut |_| false).unwrap();
    let theirs = create_proof(circuit.clone(), &params, r, s).unwrap();
    assert_eq!(
        proof_to_bytes(&ours),
        proof_to_bytes(&theirs),
        "snarkd and bellperson disagree"
    );

    let mut ours_best = Duration::MAX;
    let mut theirs_best = Duration::MAX;
    for run in 0..runs {
        let t = Instant::now();
        let w = synthesize(circuit.clone()).unwrap();
        let synth = t.elapsed();
        let (_, timings) = CpuBackend.prove(w, &srs, &|_| {}).unwrap();
        let ours = t.elapsed();

        let t = Instant::now();
        create_random_proof(circuit.clone(), &params, &mut rng).unwrap();
        let theirs = t.elapsed();
        println!(
            "run {run}: snarkd {:.3} s (synthesis {:.3}, ntt {:.3}, msm {:.3}), bellperson {:.3} s",
            ours.as_secs_f64(),
            synth.as_secs_f64(),
            timings.ntt.as_secs_f64(),
            timings.msm.as_secs_f64(),
            theirs.as_secs_f64()
        );
        ours_best = ours_best.min(ours);
        theirs_best = theirs_best.min(theirs);
    }
    println!(
        "best of {runs}: snarkd {:.3} s, bellperson {:.3} s, speedup {:.2}x",
        ours_best.as_secs_f64(),
        theirs_best.as_secs_f64(),
        theirs_best.as_secs_f64() / ours_best.as_secs_f64()
    );
}
