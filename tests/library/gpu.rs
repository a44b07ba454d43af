//! GPU tests. They always compile; without `SNARKD_TEST_GPU=1` they only check that the build
//! reports its CUDA state consistently. With it they run the self-test (every kernel against its
//! CPU reference) and prove-and-verify a small circuit with `GpuBackend`. `SNARKD_TEST_GPU_BENCH=1`
//! adds the benchmarks (sizes from `SNARKD_BENCH_LOG`, default 20) and prints a table.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use bellperson::groth16::{generate_random_parameters, prepare_verifying_key, verify_proof};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use rand::rngs::StdRng;
use rand::SeedableRng;
use snarkd::gpu::{self, Distribution, Gpu, GpuBackend, GpuError};
use snarkd::groth16::{precompiled_as, synthesize, Density, Fill, Precompiled, ProvingBackend, Witness};
use std::sync::Arc;
use snarkd::srs::{CircuitId, Srs};

fn gpu_enabled() -> bool {
    std::env::var("SNARKD_TEST_GPU").as_deref() == Ok("1")
}

/// Whether a test that needs a GPU runs here; when not, it says so, so a green run without a GPU
/// is never mistaken for one that checked the kernels.
fn runs_on_gpu(test: &str) -> bool {
    let on = gpu_enabled();
    if !on {
        eprintln!("SKIPPED {test}: needs a GPU; set SNARKD_TEST_GPU=1 on a machine with one");
    }
    on
}

#[test]
fn build_reports_cuda_state() {
    let status = gpu::cuda_status();
    if gpu::BUILT_IN {
        assert!(status.starts_with("cuda: built in"), "{status}");
    } else {
        assert_eq!(status, "cuda: not built in");
        assert!(matches!(Gpu::enumerate(None, None), Err(GpuError::NotBuiltIn)));
    }
    if gpu::BUILT_IN && !gpu_enabled() {
        // Either no driver here (CI), or a device we were told not to use: enumerate must not panic.
        let _ = Gpu::enumerate(None, None);
    }
}

#[test]
fn selftest_on_device() {
    if !runs_on_gpu("selftest_on_device") {
        return;
    }
    let devs = Gpu::enumerate(None, None).expect("open devices");
    assert!(!devs.is_empty(), "SNARKD_TEST_GPU=1 but no device");
    for dev in &devs {
        let report = gpu::selftest(dev, None).expect("selftest ran");
        for c in &report.checks {
            println!("{} {} {}", if c.passed { "ok  " } else { "FAIL" }, c.name, c.detail);
        }
        assert!(report.passed(), "{} failed (seed {})", report.device, report.seed);
    }
}

/// A circuit with bits (0/1 aux values), products and an input: x_{i+1} = x_i · (x_i + bit_i).
struct Chain {
    x0: Fr,
    steps: usize,
}

impl Circuit<Fr> for Chain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x_val = self.x0;
        let mut x = cs.alloc(|| "x0", || Ok(x_val))?;
        for i in 0..self.steps {
            let bit_val = Fr::from((i % 3 == 0) as u64);
            let bit = cs.alloc(|| "bit", || Ok(bit_val))?;
            cs.enforce(|| "bool", |lc| lc + bit, |lc| lc + CS::one() - bit, |lc| lc);
            let next_val = x_val * (x_val + bit_val);
            let next = cs.alloc(|| "x", || Ok(next_val))?;
            cs.enforce(|| "step", |lc| lc + x, |lc| lc + x + bit, |lc| lc + next);
            x = next;
            x_val = next_val;
        }
        let out = cs.alloc_input(|| "out", || Ok(x_val))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// The same recording bellperson's prover makes (ONE first, then one x·0 = 0 per input).
#[derive(Default)]
struct Recorder(Witness);

impl Recorder {
    fn eval(&mut self, lc: &LinearCombination<Fr>, which: char) -> Fr {
        let w = &mut self.0;
        let mut acc = Fr::ZERO;
        for (var, coeff) in lc.iter() {
            let set = !bool::from(coeff.is_zero());
            match var.get_unchecked() {
                Index::Input(i) => {
                    acc += w.input[i] * coeff;
                    if which == 'b' && set {
                        w.b_input_density.set(i);
                    }
                }
                Index::Aux(i) => {
                    acc += w.aux[i] * coeff;
                    match which {
                        'a' if set => w.a_aux_density.set(i),
                        'b' if set => w.b_aux_density.set(i),
                        _ => {}
                    }
                }
            }
        }
        acc
    }
}

impl ConstraintSystem<Fr> for Recorder {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.aux.push(f()?);
        self.0.a_aux_density.push(false);
        self.0.b_aux_density.push(false);
        Ok(Variable::new_unchecked(Index::Aux(self.0.aux.len() - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.input.push(f()?);
        self.0.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(self.0.input.len() - 1)))
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        // C is not recorded: the provers take a∘b (`Witness::a`)
        let (a, b) = (a(LinearCombination::zero()), b(LinearCombination::zero()));
        let (a, b) = (self.eval(&a, 'a'), self.eval(&b, 'b'));
        self.0.a.push(a);
        self.0.b.push(b);
    }
    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self {
        self
    }
}

fn record(circuit: Chain) -> Witness {
    let mut cs = Recorder(Witness { b_input_density: Density::default(), ..Default::default() });
    cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    circuit.synthesize(&mut cs).unwrap();
    for i in 0..cs.0.input.len() {
        cs.enforce(|| "input", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
    }
    cs.0
}

/// Parameters of `Chain` with `steps` steps, under `id`.
fn chain_srs(id: &str, steps: usize, rng: &mut StdRng) -> Srs {
    let params = generate_random_parameters::<Bls12, _, _>(Chain { x0: Fr::ZERO, steps }, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    Srs {
        id: CircuitId(id.into()),
        path: "/nonexistent".into(),
        vk: params.vk.clone(),
        pvk,
        h: params.h.to_vec(),
        l: params.l.to_vec(),
        a: params.a.to_vec(),
        b_g1: params.b_g1.to_vec(),
        b_g2: params.b_g2.to_vec(),
        loaded_at: std::time::SystemTime::now(),
    }
}

#[test]
fn partitions_proved_between_two_steps_of_another_verify() {
    if !runs_on_gpu("partitions_proved_between_two_steps_of_another_verify") {
        return;
    }
    let mut rng = StdRng::seed_from_u64(11);
    // the paused circuit (2^12), and a smaller one of its own that the interludes make resident
    let (big, small) = (chain_srs("test-chain-big", 1500, &mut rng), chain_srs("test-chain-small", 300, &mut rng));
    let backend = GpuBackend::new(Gpu::enumerate(Some(&[0]), None).expect("device 0").remove(0));
    let record_of = |steps: usize| Arc::new(Precompiled::record(Chain { x0: Fr::ZERO, steps }).unwrap());
    let (big_record, small_record) = (record_of(1500), record_of(300));
    let deferred = |record: &Arc<Precompiled>, steps: usize, x0: u64| {
        precompiled_as(record.clone(), Fill::Deferred, || synthesize(Chain { x0: Fr::from(x0), steps })).unwrap()
    };
    // paused proofs: a whole witness announcing the next, then deferred ones (a and b made on the
    // device from the record, the next aux prefetched); every pause proves one interlude of the
    // small circuit, whole or deferred to its own record, which joins the device beside the paused
    let mut queue = vec![record(Chain { x0: Fr::from(3u64), steps: 1500 }), deferred(&big_record, 1500, 5), deferred(&big_record, 1500, 7)].into_iter();
    let mut cur = queue.next();
    let mut x0 = 100u64;
    let (mut pauses, mut interludes_verified) = (0, 0);
    while let Some(w) = cur {
        let next = queue.next();
        let public = w.input[1..].to_vec();
        let mut urgent = |between: &dyn snarkd::groth16::Interlude| -> bool {
            pauses += 1;
            x0 += 1;
            // the paused circuit's own partitions wait for it
            assert!(!between.fits(&deferred(&big_record, 1500, x0), &big), "the paused circuit is not proved between its own steps");
            let iw = if x0 % 2 == 0 { record(Chain { x0: Fr::from(x0), steps: 300 }) } else { deferred(&small_record, 300, x0) };
            assert!(between.fits(&iw, &small), "a small circuit fits beside the paused one");
            let ipublic = iw.input[1..].to_vec();
            let (proof, _) = between.prove(iw, &small, &|_| {}).expect("prove between two steps");
            assert!(verify_proof(&small.pvk, &proof, &ipublic).unwrap(), "a proof made between two steps of another does not verify");
            interludes_verified += 1;
            true
        };
        let (proof, timings) = backend.prove_then(w, &big, &|_| {}, next.as_ref(), &mut urgent).expect("prove, paused");
        println!("paused proof: {timings:?}");
        assert!(verify_proof(&big.pvk, &proof, &public).unwrap(), "a proof paused for others does not verify");
        cur = next;
    }
    // five pauses a proof: while h runs (the first poll proves one here) and after four of the five MSMs
    assert_eq!((pauses, interludes_verified), (15, 15));
    assert!(backend.holds(&small.id) && backend.holds(&big.id), "both circuits stay resident");
}

#[test]
fn gpu_backend_proof_verifies() {
    if !runs_on_gpu("gpu_backend_proof_verifies") {
        return;
    }
    let mut rng = StdRng::seed_from_u64(7);
    let steps = 700; // 1402 constraints + input constraints: domain 2^11, not a multiple of 32
    let srs = chain_srs("test-chain", steps, &mut rng);
    let dev = Gpu::enumerate(Some(&[0]), None).expect("device 0").remove(0);
    let backend = GpuBackend::new(dev);
    for x0 in [3u64, 5] {
        let witness = record(Chain { x0: Fr::from(x0), steps });
        let public = witness.input[1..].to_vec();
        let (proof, timings) = backend.prove(witness, &srs, &|_| {}).expect("prove");
        println!("x0={x0}: {timings:?}");
        assert!(verify_proof(&srs.pvk, &proof, &public).unwrap(), "proof does not verify");
        let wrong = vec![public[0] + Fr::ONE];
        assert!(!verify_proof(&srs.pvk, &proof, &wrong).unwrap());
    }
    // partitions back to back: each announces the next, whose a and b go up during its MSMs
    let mut rest = [7u64, 9, 11].map(|x0| record(Chain { x0: Fr::from(x0), steps })).into_iter();
    let mut cur = rest.next();
    while let Some(w) = cur {
        let next = rest.next();
        let public = w.input[1..].to_vec();
        let (proof, _) = backend.prove_then(w, &srs, &|_| {}, next.as_ref(), &mut |_| false).expect("prove with the next announced");
        assert!(verify_proof(&srs.pvk, &proof, &public).unwrap(), "pipelined proof does not verify");
        cur = next;
    }
    // a witness announced but not proved next: its prefetched a and b are not used for another
    let announced = record(Chain { x0: Fr::from(13u64), steps });
    backend.prove_then(record(Chain { x0: Fr::from(15u64), steps }), &srs, &|_| {}, Some(&announced), &mut |_| false).expect("prove");
    let other = record(Chain { x0: Fr::from(17u64), steps });
    let public = other.input[1..].to_vec();
    let (proof, _) = backend.prove(other, &srs, &|_| {}).expect("prove after an unused prefetch");
    assert!(verify_proof(&srs.pvk, &proof, &public).unwrap(), "proof after a stale prefetch does not verify");

    // a and b left to the device, which makes them from the circuit's record: alone, announced
    // after a whole witness, and followed by one
    let precompiled = Arc::new(Precompiled::record(Chain { x0: Fr::ZERO, steps }).unwrap());
    assert!(backend.fills_from_record(&srs, &precompiled), "a 2^11 circuit fits the device");
    let deferred = |x0: u64| precompiled_as(precompiled.clone(), Fill::Deferred, || synthesize(Chain { x0: Fr::from(x0), steps })).unwrap();
    let mut queue = vec![deferred(19), record(Chain { x0: Fr::from(21u64), steps }), deferred(23), deferred(25)].into_iter();
    let mut cur = queue.next();
    while let Some(w) = cur {
        let next = queue.next();
        let (public, was_deferred) = (w.input[1..].to_vec(), w.record.is_some());
        let (proof, _) = backend.prove_then(w, &srs, &|_| {}, next.as_ref(), &mut |_| false).expect("prove");
        assert!(verify_proof(&srs.pvk, &proof, &public).unwrap(), "proof (a and b deferred: {was_deferred}) does not verify");
        cur = next;
    }
    assert!(backend.streamed(&srs.id).is_empty(), "a 2^11 circuit's bases are all resident on a whole card");
    drop(backend);

    // gpu.memory_limit below one partition's working allowance: no query fits beside the work, so
    // every MSM streams its bases from host memory, and the proofs still verify
    let dev = Gpu::enumerate(Some(&[0]), Some(1 << 30)).expect("device 0 under a 1 GiB limit").remove(0);
    let (_, total) = dev.mem_info().unwrap();
    assert_eq!(total, 1 << 30, "the limit caps the total the device reports");
    let backend = GpuBackend::new(dev);
    for x0 in [27u64, 29] {
        let w = record(Chain { x0: Fr::from(x0), steps });
        let public = w.input[1..].to_vec();
        let (proof, _) = backend.prove(w, &srs, &|_| {}).expect("prove with streamed bases");
        assert!(verify_proof(&srs.pvk, &proof, &public).unwrap(), "proof from streamed bases does not verify");
    }
    assert_eq!(backend.streamed(&srs.id), ["h", "l", "a", "b_g1", "b_g2"], "every query is streamed under the limit");
}

#[test]
fn gpu_benchmarks() {
    if std::env::var("SNARKD_TEST_GPU_BENCH").as_deref() != Ok("1") {
        eprintln!("SKIPPED gpu_benchmarks: set SNARKD_TEST_GPU_BENCH=1 on a machine with a GPU");
        return;
    }
    let log: u32 = std::env::var("SNARKD_BENCH_LOG").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let h_log: u32 = std::env::var("SNARKD_BENCH_H_LOG").ok().and_then(|v| v.parse().ok()).unwrap_or(log);
    let dev = Gpu::enumerate(Some(&[0]), None).expect("device 0").remove(0);
    println!("| what | median ms | min | max |");
    let row = |r: gpu::BenchReport| println!("| {} | {:.2} | {:.2} | {:.2} |", r.what, r.median_ms, r.min_ms, r.max_ms);
    gpu::bench_ntt(&dev, log).unwrap().into_iter().for_each(row);
    gpu::bench_msm(&dev, 1 << log, Distribution::Filecoin, false).unwrap().into_iter().for_each(row);
    gpu::bench_msm(&dev, 1 << log, Distribution::Random, false).unwrap().into_iter().for_each(row);
    let shape = gpu::Shape { name: "bench", constraints: (1 << h_log) - 1000, aux: (1 << h_log) - 1000 };
    gpu::bench_prove_shape(&dev, shape, Distribution::Witness).unwrap().into_iter().for_each(row);
    gpu::bench_msm(&dev, 1 << log, Distribution::Random, true).unwrap().into_iter().for_each(row);
}
