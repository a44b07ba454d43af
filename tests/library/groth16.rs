//! End-to-end checks of snarkd's Groth16 pipeline against bellperson as the reference: parameters
//! written by bellperson and loaded by `srs::params`, witnesses from our constraint system, proofs
//! from `CpuBackend` compared byte for byte with bellperson's and verified by its verifier.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bellperson::groth16::{create_proof, generate_random_parameters, prepare_verifying_key, verify_proof, Parameters};
use bellperson::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::{Bls12, Scalar as Fr};
use ff::{Field, PrimeField};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use snarkd::error::ErrorCode;
use snarkd::groth16::verify::proof_to_bytes;
use snarkd::groth16::{synthesize, verify, CpuBackend, ProvingBackend, Witness};
use snarkd::srs::{load, CircuitId, PointCheck, ResidentSrs};

/// A few hundred constraints touching every path of the constraint system: public inputs in A, B
/// and C, booleans, a packing constraint with power-of-two coefficients, random products, a term
/// whose coefficients cancel, and a part synthesized separately and merged with `extend`.
#[derive(Clone)]
struct Mixed {
    seed: u64,
}

impl Mixed {
    fn public_inputs(&self) -> Vec<Fr> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let x: Vec<Fr> = (0..3).map(|_| Fr::random(&mut rng)).collect();
        // the sub-circuit's public output: x0² + 5
        vec![x[0], x[1], x[2], x[0].square() + Fr::from(5u64)]
    }
}

impl Circuit<Fr> for Mixed {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let xv: Vec<Fr> = (0..3).map(|_| Fr::random(&mut rng)).collect();
        let x: Vec<Variable> = xv
            .iter()
            .enumerate()
            .map(|(i, v)| cs.alloc_input(|| format!("x{i}"), || Ok(*v)))
            .collect::<Result<_, _>>()?;

        // 64 booleans packed into one word
        let bits: Vec<bool> = (0..64).map(|_| rng.gen()).collect();
        let mut packed = Fr::ZERO;
        let mut bit_vars = Vec::new();
        for (i, &b) in bits.iter().enumerate() {
            let v = cs.alloc(|| format!("bit{i}"), || Ok(if b { Fr::ONE } else { Fr::ZERO }))?;
            cs.enforce(|| format!("bool{i}"), |lc| lc + v, |lc| lc + CS::one() - v, |lc| lc);
            if b {
                packed += Fr::from(2u64).pow_vartime([i as u64]);
            }
            bit_vars.push(v);
        }
        let p = cs.alloc(|| "packed", || Ok(packed))?;
        cs.enforce(
            || "pack",
            |mut lc| {
                let mut coeff = Fr::ONE;
                for v in &bit_vars {
                    lc = lc + (coeff, *v);
                    coeff = coeff.double();
                }
                lc
            },
            |lc| lc + CS::one(),
            |lc| lc + p,
        );

        // a chain of random products, the inputs appearing in A, B and C
        let mut acc_v = Fr::random(&mut rng);
        let mut acc = cs.alloc(|| "acc0", || Ok(acc_v))?;
        for i in 0..200 {
            let k = i % 3;
            let next_v = acc_v * xv[k] + xv[(k + 1) % 3];
            let next = cs.alloc(|| format!("acc{}", i + 1), || Ok(next_v))?;
            let ghost = bit_vars[i % 64];
            cs.enforce(
                || format!("mul{i}"),
                // ghost's coefficients cancel: it must not enter the A density
                |lc| lc + acc + ghost - ghost,
                |lc| lc + x[k],
                |lc| lc + next - x[(k + 1) % 3],
            );
            acc = next;
            acc_v = next_v;
        }
        // a zero coefficient is no term at all
        cs.enforce(
            || "zero",
            |lc| lc + (Fr::ZERO, acc) + CS::one(),
            |lc| lc + CS::one(),
            |lc| lc + CS::one(),
        );

        // y = x0² + 5 as a public output, synthesized on its own when the system allows it, the way
        // FallbackPoSt synthesizes sector chunks
        let sub = |cs: &mut CS::Root| -> Result<(), SynthesisError> {
            let x0 = cs.alloc(|| "x0 copy", || Ok(xv[0]))?;
            let sq = cs.alloc(|| "sq", || Ok(xv[0].square()))?;
            let y = cs.alloc_input(|| "y", || Ok(xv[0].square() + Fr::from(5u64)))?;
            cs.enforce(|| "sq", |lc| lc + x0, |lc| lc + x0, |lc| lc + sq);
            cs.enforce(
                || "y",
                |lc| lc + sq + (Fr::from(5u64), CS::Root::one()),
                |lc| lc + CS::Root::one(),
                |lc| lc + y,
            );
            Ok(())
        };
        if CS::Root::is_extensible() {
            let mut part = CS::Root::new();
            part.alloc_input(|| "temp one", || Ok(Fr::ONE))?;
            sub(&mut part)?;
            cs.get_root().extend(&part);
        } else {
            sub(cs.get_root())?;
        }
        Ok(())
    }
}

fn id() -> CircuitId {
    CircuitId("snarkd-test-mixed".into())
}

fn write_params(dir: &Path, params: &Parameters<Bls12>) {
    let f = std::fs::File::create(dir.join(id().params_file())).unwrap();
    params.write(std::io::BufWriter::new(f)).unwrap();
    let f = std::fs::File::create(dir.join(id().vk_file())).unwrap();
    params.vk.write(f).unwrap();
}

fn setup() -> (tempfile::TempDir, Parameters<Bls12>) {
    let mut rng = StdRng::seed_from_u64(42);
    let params = generate_random_parameters::<Bls12, _, _>(Mixed { seed: 1 }, &mut rng).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path(), &params);
    (dir, params)
}

#[test]
fn cpu_proof_equals_bellperson_and_verifies() {
    let (dir, params) = setup();
    let srs = load(dir.path(), &id(), PointCheck::Full).unwrap();
    assert_eq!(srs.vk, params.vk);
    assert_eq!(*params.h, srs.h);
    assert_eq!(*params.b_g2, srs.b_g2);

    let circuit = Mixed { seed: 7 };
    let inputs = circuit.public_inputs();
    let witness = synthesize(circuit.clone()).unwrap();
    let witness_bytes = witness.bytes();

    let mut rng = StdRng::seed_from_u64(9);
    let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
    let released = AtomicU64::new(0);
    let release = |b: u64| {
        released.fetch_add(b, Ordering::SeqCst);
    };
    let (ours, timings) = CpuBackend.prove_with_randomness(witness, &srs, (r, s), &release, &mut |_| false).unwrap();
    assert_eq!(
        released.load(Ordering::SeqCst),
        witness_bytes,
        "every witness byte is released"
    );
    assert!(timings.total >= timings.ntt + timings.msm);

    let theirs = create_proof(circuit.clone(), &params, r, s).unwrap();
    assert_eq!(
        proof_to_bytes(&ours),
        proof_to_bytes(&theirs),
        "same proof as bellperson for the same r, s"
    );
    assert!(verify_proof(&prepare_verifying_key(&params.vk), &ours, &inputs).unwrap());
    assert!(verify(&srs.pvk, &ours, &inputs).unwrap());

    let (fresh, _) = CpuBackend.prove(synthesize(circuit).unwrap(), &srs, &|_| {}).unwrap();
    assert!(verify(&srs.pvk, &fresh, &inputs).unwrap());
    assert_ne!(proof_to_bytes(&fresh), proof_to_bytes(&ours), "fresh r, s each proof");

    let mut wrong = inputs.clone();
    wrong[3] += Fr::ONE;
    assert!(!verify(&srs.pvk, &fresh, &wrong).unwrap());
    assert_eq!(
        verify(&srs.pvk, &fresh, &inputs[..2]).unwrap_err().code,
        ErrorCode::VerificationFailed
    );
}

/// Proves `Mixed { seed }` on the CPU with `tamper` applied to its witness; whether it verifies.
fn verifies_after(seed: u64, tamper: impl FnOnce(&mut Witness)) -> bool {
    let (dir, _) = setup();
    let srs = load(dir.path(), &id(), PointCheck::Full).unwrap();
    let circuit = Mixed { seed };
    let inputs = circuit.public_inputs();
    let mut witness = synthesize(circuit).unwrap();
    tamper(&mut witness);
    let (proof, _) = CpuBackend.prove(witness, &srs, &|_| {}).unwrap();
    verify(&srs.pvk, &proof, &inputs).unwrap()
}

#[test]
fn tampered_witness_does_not_verify() {
    assert!(!verifies_after(3, |w| w.aux[70] += Fr::ONE));
}

/// The provers take C's evaluations as a∘b; an A evaluation that no longer satisfies its
/// constraint must still give a proof that fails verification.
#[test]
fn unsatisfied_evaluations_do_not_verify() {
    assert!(!verifies_after(4, |w| w.a[5] += Fr::ONE));
}

#[test]
fn witness_of_another_circuit_is_a_shape_error() {
    let (dir, _) = setup();
    let srs = load(dir.path(), &id(), PointCheck::None).unwrap();
    let mut witness = synthesize(Mixed { seed: 3 }).unwrap();
    witness.aux.pop();
    let err = CpuBackend.prove(witness, &srs, &|_| {}).unwrap_err();
    assert!(err.to_string().contains("aux variables"), "{err}");
}

#[test]
fn damaged_params_are_errors() {
    let (dir, _) = setup();
    let path = dir.path().join(id().params_file());
    let good = std::fs::read(&path).unwrap();
    let expect_corrupt = |bytes: &[u8], check: PointCheck, what: &str| {
        std::fs::write(&path, bytes).unwrap();
        let err = load(dir.path(), &id(), check)
            .err()
            .unwrap_or_else(|| panic!("{what}: loaded"));
        assert_eq!(err.code, ErrorCode::ParamsMissing, "{what}");
        assert!(
            err.message.contains("corrupt") && err.message.contains("offset"),
            "{what}: {}",
            err.message
        );
        assert!(
            err.message.contains(&path.display().to_string()),
            "{what}: {}",
            err.message
        );
    };
    for cut in [10, 700, good.len() / 2, good.len() - 1] {
        expect_corrupt(&good[..cut], PointCheck::None, &format!("truncated at {cut}"));
    }
    let mut longer = good.clone();
    longer.push(0);
    expect_corrupt(&longer, PointCheck::None, "trailing byte");

    // The h section starts after the vk: 3 G1 + 3 G2 points, the ic count and ic points.
    let vk_len = 3 * 96 + 3 * 192 + 4 + 5 * 96;
    let mut huge = good.clone();
    huge[vk_len..vk_len + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    expect_corrupt(&huge, PointCheck::None, "absurd section length");

    // One coordinate byte of the third h point: off the curve (or out of the subgroup).
    let mut flipped = good.clone();
    flipped[vk_len + 4 + 2 * 96 + 50] ^= 0x01;
    expect_corrupt(&flipped, PointCheck::Full, "flipped byte in a point");

    let mut vk_flipped = good.clone();
    vk_flipped[100] ^= 0x01;
    expect_corrupt(&vk_flipped, PointCheck::None, "flipped byte in the verifying key");

    std::fs::remove_file(&path).unwrap();
    let err = load(dir.path(), &id(), PointCheck::Full).err().unwrap();
    assert_eq!(err.code, ErrorCode::ParamsMissing);
    assert!(err.message.contains(&path.display().to_string()), "{}", err.message);
    assert!(
        err.message.contains("snarkctl params generate --sector-size 2KiB"),
        "{}",
        err.message
    );
    assert!(err.message.contains("curio fetch-params"), "{}", err.message);
}

#[test]
fn vk_file_must_match_params() {
    let (dir, _) = setup();
    let other = generate_random_parameters::<Bls12, _, _>(Mixed { seed: 1 }, &mut StdRng::seed_from_u64(43)).unwrap();
    other
        .vk
        .write(std::fs::File::create(dir.path().join(id().vk_file())).unwrap())
        .unwrap();
    let err = load(dir.path(), &id(), PointCheck::None).err().unwrap();
    assert_eq!(err.code, ErrorCode::ParamsMissing);
    assert!(err.message.contains("does not match"), "{}", err.message);
}

#[test]
fn resident_srs_loads_once_under_concurrency() {
    let (dir, _) = setup();
    let resident = Arc::new(ResidentSrs::new(dir.path(), PointCheck::Full));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let resident = resident.clone();
            std::thread::spawn(move || resident.get_or_load(&id()).unwrap())
        })
        .collect();
    let got: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(
        got.iter().all(|(srs, _)| Arc::ptr_eq(srs, &got[0].0)),
        "one shared copy"
    );
    assert_eq!(got.iter().filter(|(_, t)| !t.is_zero()).count(), 1, "exactly one load");

    let status = resident.status();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].id, id());
    assert_eq!(status[0].bytes.get(), got[0].0.bytes());
    assert!(status[0].last_used >= status[0].loaded_at);
    let json = serde_json::to_value(&status).unwrap();
    assert!(json[0]["loaded_at"].is_f64(), "{json}");

    assert!(resident.evict(&id()));
    assert!(!resident.evict(&id()));
    assert!(resident.status().is_empty());

    let missing = CircuitId("not-there".into());
    assert_eq!(
        resident.get_or_load(&missing).err().unwrap().code,
        ErrorCode::ParamsMissing
    );
    assert!(resident.preload(&[id()]).is_ok());
    assert_eq!(resident.status().len(), 1);
}

#[test]
fn field_constants_match_the_notes() {
    // The coset shift every backend uses; bellperson and the GPU kernels assume 7.
    assert_eq!(Fr::MULTIPLICATIVE_GENERATOR, Fr::from(7u64));
}

/// The CPU backend pauses a proof after h and after four of its five MSMs for a more urgent one,
/// as the GPU backend does: every proof made in a pause and the paused proof itself verify, and
/// the paused proof's timings leave the pauses out.
#[test]
fn cpu_proofs_made_between_two_steps_of_another_verify() {
    let (dir, _) = setup();
    let srs = load(dir.path(), &id(), PointCheck::Full).unwrap();
    let paused_circuit = Mixed { seed: 21 };
    let inputs = paused_circuit.public_inputs();
    let (mut pauses, mut interludes) = (0u64, std::time::Duration::ZERO);
    let mut urgent = |between: &dyn snarkd::groth16::Interlude| -> bool {
        pauses += 1;
        let circuit = Mixed { seed: 100 + pauses };
        let witness = synthesize(circuit.clone()).unwrap();
        assert!(between.fits(&witness, &srs));
        let started = std::time::Instant::now();
        let (proof, _) = between.prove(witness, &srs, &|_| {}).expect("prove between two steps");
        // long enough that leaving it out of the paused proof's timings shows
        std::thread::sleep(std::time::Duration::from_millis(200));
        interludes += started.elapsed();
        assert!(verify(&srs.pvk, &proof, &circuit.public_inputs()).unwrap(), "a proof made in a pause does not verify");
        true
    };
    let started = std::time::Instant::now();
    let (proof, timings) = CpuBackend.prove_then(synthesize(paused_circuit).unwrap(), &srs, &|_| {}, None, &mut urgent).unwrap();
    let wall = started.elapsed();
    assert!(verify(&srs.pvk, &proof, &inputs).unwrap(), "a proof paused for others does not verify");
    assert_eq!(pauses, 5, "after h and after the H, L, A and B_G1 MSMs");
    assert!(interludes >= std::time::Duration::from_millis(1000));
    assert!(timings.total + interludes <= wall, "the pauses are left out of the paused proof's timings: {timings:?}, {interludes:?} in pauses, {wall:?} in all");
    assert!(timings.total >= timings.ntt + timings.msm);
}
