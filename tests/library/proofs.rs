//! Proof requests end to end against filecoin-proofs itself: decoding and validation errors, and
//! for every kind a real 2 KiB sector whose circuits, proved by bellperson, verify with
//! filecoin-proofs-api's verifiers. That last check is the reference snarkd's own pipeline must match.
//!
//! Parameters come from `$SNARKD_TEST_PARAMS` (default `/var/tmp/snarkd-test-params`) and are
//! generated there when missing (minutes for PoRep and SnapDeals). Run with `--release`.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use base64::Engine as _;
use bellperson::groth16::{prepare_verifying_key, verify_proof, Parameters};
use blstrs::Bls12;
use serde_json::{json, Value};
use snarkd::error::ErrorCode;
use snarkd::tools::paramgen;
use snarkd::tools::testdata::Manifest;
use snarkd::tools::reference::{prove_with_api, use_parameter_dir, verify_with_api};
use snarkd::proofs::{self, blank, prover_id, Bytes32, ProofKind, ProofRequest};
use snarkd::tools;

const SECTOR_SIZE: u64 = 2048;

fn params_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tools::test_params_dir();
        use_parameter_dir(&dir).expect("parameter directory");
        dir
    })
    .clone()
}

/// One sealed sector shared by all tests of this module.
fn manifest() -> &'static Manifest {
    static MANIFEST: OnceLock<Manifest> = OnceLock::new();
    MANIFEST.get_or_init(|| {
        let params = params_dir();
        let out = tempfile::tempdir().expect("tempdir").keep();
        let start = Instant::now();
        let m = tools::testdata::generate(SECTOR_SIZE, &out, &params).expect("testdata");
        eprintln!("testdata in {} after {:.1?}", out.display(), start.elapsed());
        m
    })
}

fn request_json(kind: ProofKind) -> Value {
    serde_json::to_value(manifest().request(kind).expect("request")).expect("json")
}

/// Parses and prepares `value`, returning the error it must produce.
fn rejection(value: Value) -> (ErrorCode, String) {
    let err = match ProofRequest::from_value(&value) {
        Err(e) => e,
        Ok(req) => match proofs::prepare(&req) {
            Err(e) => e,
            Ok(_) => panic!("request was accepted: {value:.200}"),
        },
    };
    (err.code, err.message)
}

fn assert_rejected(value: Value, code: ErrorCode, message: &str) {
    let (got_code, got) = rejection(value);
    assert!(got.starts_with(message), "expected {message:?}, got {got:?}");
    assert_eq!(got_code, code, "{got}");
}

fn b64(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[test]
fn prover_id_matches_filecoin_ffi() {
    let mut expected = [0u8; 32];
    expected[..2].copy_from_slice(&[0xe8, 0x07]);
    assert_eq!(prover_id::from_miner_id(1000), Bytes32(expected));
    assert_eq!(prover_id::from_miner_id(0), Bytes32([0; 32]));
    assert_eq!(
        prover_id::from_miner_id(u64::MAX).0[..10],
        [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
    );
}

#[test]
fn bytes32_accepts_go_forms_and_round_trips() {
    let bytes: [u8; 32] = std::array::from_fn(|i| i as u8 * 7);
    let forms = [
        b64(&bytes),
        Value::String(hex::encode(bytes)),
        Value::String(format!("0x{}", hex::encode(bytes))),
        json!(bytes.to_vec()),
    ];
    for form in forms {
        let parsed: Bytes32 = serde_json::from_value(form.clone()).unwrap_or_else(|e| panic!("{form}: {e}"));
        assert_eq!(parsed, Bytes32(bytes));
        let again: Bytes32 = serde_json::from_value(serde_json::to_value(parsed).unwrap()).unwrap();
        assert_eq!(again, parsed);
    }
    for bad in [b64(&bytes[..31]), json!([1, 2, 3]), json!("not base64!"), json!(7)] {
        assert!(serde_json::from_value::<Bytes32>(bad.clone()).is_err(), "{bad} accepted");
    }
}

#[test]
fn requests_round_trip_and_accept_ffi_numbers() {
    for kind in ProofKind::ALL {
        let req = manifest().request(kind).unwrap();
        assert_eq!(req.kind(), kind);
        let text = serde_json::to_vec(&req).unwrap();
        assert_eq!(ProofRequest::from_json(&text).unwrap(), req);
        let via_serde: ProofRequest = serde_json::from_slice(&text).unwrap();
        assert_eq!(via_serde, req);
    }
    // go-state-types numbers and names for the same proof types.
    let mut window = request_json(ProofKind::WindowPost);
    for form in [json!(10), json!("StackedDrgWindow2KiBV1_1"), json!("StackedDrgWindow2KiBV1_2")] {
        window["registered_post_proof"] = form;
        assert_eq!(ProofRequest::from_value(&window).unwrap(), manifest().request(ProofKind::WindowPost).unwrap());
    }
    let mut snap = request_json(ProofKind::SnapDeals);
    snap["registered_update_proof"] = json!(0);
    assert_eq!(ProofRequest::from_value(&snap).unwrap(), manifest().request(ProofKind::SnapDeals).unwrap());
}

#[test]
fn curio_c1_wrapper_becomes_porep_request() {
    let m = manifest();
    let c1 = m.read(&m.porep.c1_output).unwrap();
    let file = json!({"SectorNum": m.sector_number, "Phase1Out": b64(&c1), "SectorSize": SECTOR_SIZE});
    let req = ProofRequest::from_curio_c1(&serde_json::to_vec(&file).unwrap(), m.miner_id).unwrap();
    assert_eq!(req, m.request(ProofKind::PorepC2).unwrap());
    let err = ProofRequest::from_curio_c1(b"{\"SectorNum\": 1}", 1000).unwrap_err();
    assert_eq!(err.code, ErrorCode::BadInput);
}

#[test]
fn bad_requests_name_the_field() {
    use ErrorCode::{BadInput, Unsupported, VerificationFailed};
    let m = manifest();
    let winning = request_json(ProofKind::WinningPost);
    let window = request_json(ProofKind::WindowPost);
    let porep = request_json(ProofKind::PorepC2);
    let snap = request_json(ProofKind::SnapDeals);
    let with = |base: &Value, key: &str, value: Value| {
        let mut v = base.clone();
        v[key] = value;
        v
    };
    let c1 = m.read(&m.porep.c1_output).unwrap();
    let c1_json: Value = serde_json::from_slice(&c1).unwrap();
    let c1_with = |key: &str, value: Value| {
        let mut v = c1_json.clone();
        v[key] = value;
        with(&porep, "c1_output", b64(&serde_json::to_vec(&v).unwrap()))
    };
    let mut high = m.winning_post.randomness.0;
    high[31] |= 0xc0;
    let vanilla = winning["vanilla_proofs"][0].clone();
    // A valid sector id and comm_r, then a sector-proof count of 2^60.
    let mut hostile = m.read(&m.winning_post.vanilla_proofs[0]).unwrap()[..40].to_vec();
    hostile.extend_from_slice(&(1u64 << 60).to_le_bytes());

    let cases = [
        (with(&winning, "randomness", b64(&high)), BadInput, "randomness: not a valid Fr (top bits set)"),
        (
            with(&winning, "vanilla_proofs", json!([vanilla, vanilla, vanilla])),
            BadInput,
            "vanilla_proofs: expected 1 sector proofs for WinningPoSt, got 3",
        ),
        (with(&winning, "registered_post_proof", json!(99)), BadInput, "registered_post_proof: unknown value 99"),
        (
            with(&winning, "registered_post_proof", json!("StackedDrgWindow2KiBV1_2")),
            BadInput,
            "registered_post_proof: StackedDrgWindow2KiBV1_2 is not a WinningPoSt proof type",
        ),
        (
            with(&window, "registered_post_proof", json!(0)),
            BadInput,
            "registered_post_proof: StackedDrgWinning2KiBV1 is not a WindowPoSt proof type",
        ),
        (
            with(&window, "vanilla_proofs", json!([vanilla, vanilla, vanilla])),
            BadInput,
            "vanilla_proofs: 3 sector proofs exceed the 2 sectors of one WindowPoSt partition",
        ),
        (with(&window, "vanilla_proofs", json!([])), BadInput, "vanilla_proofs: empty"),
        (
            with(&window, "vanilla_proofs", json!([vanilla, vanilla])),
            BadInput,
            "vanilla_proofs: sectors must be in ascending order of sector number (7 before 7)",
        ),
        (with(&window, "vanilla_proofs", json!(["%%"])), BadInput, "vanilla_proofs[0]: not valid base64"),
        (
            with(&window, "vanilla_proofs", json!([b64(&hostile)])),
            BadInput,
            "vanilla_proofs[0]: not a valid bincode proof",
        ),
        (with(&window, "partition_index", json!(-1)), BadInput, "partition_index: invalid value"),
        (with(&window, "prover_id", b64(&[0; 32])), BadInput, "miner_id: give either miner_id or prover_id"),
        (with(&winning, "randomness", m.window_post.randomness.0.to_vec().into()), BadInput, "vanilla_proofs: "),
        (with(&winning, "minerid", json!(1)), BadInput, "minerid: unknown field"),
        (with(&winning, "kind", json!("winning")), BadInput, "kind: unknown value"),
        (with(&porep, "c1_output", b64(&c1[..499])), BadInput, "c1_output: truncated JSON at line 1 column 499"),
        // The replica id C1 recorded was not sealed for this sector and prover: no proof could
        // verify, so the request fails with that outcome's code before any proving.
        (with(&porep, "sector_number", json!(m.sector_number + 1)), VerificationFailed, "sector_number / miner_id"),
        (with(&porep, "miner_id", json!(1001)), VerificationFailed, "sector_number / miner_id"),
        (
            c1_with("registered_proof", json!("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep")),
            Unsupported,
            "c1_output: registered_proof StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
        ),
        (
            c1_with("registered_proof", json!("StackedDrg8MiBV1_1")),
            BadInput,
            "c1_output: vanilla_proofs are tagged StackedDrg2KiBV1 but registered_proof is StackedDrg8MiBV1_1",
        ),
        (c1_with("seed", json!(vec![0u8; 32])), BadInput, "c1_output: seed is all zero"),
        (c1_with("seed", json!(vec![1u8; 32])), BadInput, "c1_output: vanilla proofs do not verify"),
        (
            with(&snap, "vanilla_proofs", json!([])),
            BadInput,
            "vanilla_proofs: expected 1 partition proofs for StackedDrg2KiBV1, got 0",
        ),
        (with(&snap, "comm_r_new", snap["comm_r_old"].clone()), BadInput, "vanilla_proofs: do not verify"),
        (with(&snap, "comm_d_new", b64(&[0xff; 32])), BadInput, "comm_d_new: not a valid Fr (top bits set)"),
        (with(&snap, "registered_update_proof", json!(5)), BadInput, "registered_update_proof: unknown value 5"),
    ];
    for (value, code, message) in cases {
        assert_rejected(value, code, message);
    }
}

/// Every registered size reaches its own tree shape: a 32 GiB request gets as far as decoding its
/// vanilla proofs instead of failing on the size.
#[test]
fn every_sector_size_dispatches() {
    let sizes =
        [("2KiB", 2u64 << 10), ("8MiB", 8 << 20), ("512MiB", 512 << 20), ("32GiB", 32 << 30), ("64GiB", 64 << 30)];
    for (name, size) in sizes {
        for (kind, proof) in [
            ("window_post", format!("StackedDrgWindow{name}V1_2")),
            ("winning_post", format!("StackedDrgWinning{name}V1")),
        ] {
            let mut req = request_json(ProofKind::parse(kind).unwrap());
            req["registered_post_proof"] = json!(proof);
            req["vanilla_proofs"] = json!([b64(&[1, 2, 3])]);
            assert_rejected(req, ErrorCode::BadInput, "vanilla_proofs[0]: not a valid bincode proof");
        }
        let mut snap = request_json(ProofKind::SnapDeals);
        snap["registered_update_proof"] = json!(format!("StackedDrg{name}V1"));
        let partitions = storage_proofs_update::constants::partition_count(size as usize / 32);
        snap["vanilla_proofs"] = json!(vec![b64(&[1, 2, 3]); partitions]);
        assert_rejected(snap, ErrorCode::BadInput, "vanilla_proofs[0]: not a valid bincode proof");
    }
}

/// The ids name the published parameter files. (filecoin-proofs-api's
/// `RegisteredUpdateProof::circuit_identifier` returns the PoRep id, so parameters.json is the reference.)
#[test]
fn statements_use_production_circuit_ids() {
    let m = manifest();
    for kind in ProofKind::ALL {
        let statement = proofs::prepare(&m.request(kind).unwrap()).unwrap();
        assert_eq!(statement.kind(), kind);
        let id = statement.circuit();
        let published = storage_proofs_core::parameter_cache::get_parameter_data(&id.0);
        assert_eq!(published.map(|p| p.sector_size), Some(SECTOR_SIZE), "{kind}: {id}");
        assert_eq!(statement.partitions(), 1, "{kind}");
        assert!(statement.public_inputs(1).is_err());
    }
    let porep = proofs::prepare(&m.request(ProofKind::PorepC2).unwrap()).unwrap();
    assert_eq!(porep.circuit().0, m.porep.registered_proof.circuit_identifier().unwrap());
}

#[test]
fn circuit_sizes_match_table() {
    for size in [2u64 << 10, 8 << 20] {
        for kind in ProofKind::ALL {
            let blank = blank::blank_circuit_size(kind, size).unwrap();
            assert_eq!(blank, proofs::circuit_size(kind, size), "{kind} at {size}");
        }
    }
    for kind in ProofKind::ALL {
        let measured = proofs::measure(&manifest().request(kind).unwrap(), 0).unwrap();
        let table = proofs::circuit_size(kind, SECTOR_SIZE);
        let statement = proofs::prepare(&manifest().request(kind).unwrap()).unwrap();
        assert_eq!(measured.inputs, statement.public_inputs(0).unwrap().len() as u64 + 1, "{kind}");
        assert_eq!(measured, table, "{kind}");
        assert_eq!(statement.witness_bytes(), table.witness_bytes());
    }
}

/// Without parameters: each kind's circuit, run on the testdata, satisfies every constraint and
/// allocates exactly the public inputs the verifier uses.
#[test]
fn circuits_hold_on_testdata() {
    for kind in ProofKind::ALL {
        let start = Instant::now();
        proofs::check_circuit(&manifest().request(kind).unwrap(), 0).unwrap_or_else(|e| panic!("{kind}: {e}"));
        eprintln!("{kind}: circuit checked in {:.1?}", start.elapsed());
    }
}

/// The differential reference: our circuit and public inputs, proved by bellperson with the cached
/// parameters, verify with bellperson and with filecoin-proofs-api's verifier.
fn reference_proof_verifies(kind: ProofKind) {
    let m = manifest();
    let params_dir = params_dir();
    paramgen::generate(SECTOR_SIZE, &[kind], &params_dir, &|line| eprintln!("{line}")).unwrap();
    let req = m.request(kind).unwrap();
    let statement = proofs::prepare(&req).unwrap();
    let path = params_dir.join(statement.circuit().params_file());
    let start = Instant::now();
    let file = std::fs::File::open(&path).unwrap();
    let params = Parameters::<Bls12>::read(std::io::BufReader::new(file), false).unwrap();
    eprintln!("{kind}: read {} in {:.1?}", path.display(), start.elapsed());
    let pvk = prepare_verifying_key(&params.vk);

    let mut bytes = Vec::new();
    for k in 0..statement.partitions() {
        let start = Instant::now();
        let proof = proofs::reference_proof(&req, k, &params).unwrap();
        eprintln!("{kind}: partition {k} proved in {:.1?}", start.elapsed());
        assert!(verify_proof(&pvk, &proof, &statement.public_inputs(k).unwrap()).unwrap(), "{kind} partition {k}");
        proof.write(&mut bytes).unwrap();
    }
    assert_eq!(bytes.len(), 192 * statement.partitions());
    assert!(verify_with_api(m, kind, &bytes).unwrap(), "{kind}: filecoin-proofs-api rejected the proof");
    bytes[10] ^= 1;
    assert!(!verify_with_api(m, kind, &bytes).unwrap_or(false), "{kind}: corrupted proof accepted");
}

#[test]
fn reference_proof_verifies_window_post() {
    reference_proof_verifies(ProofKind::WindowPost);
}

#[test]
fn reference_proof_verifies_winning_post() {
    reference_proof_verifies(ProofKind::WinningPost);
}

#[test]
fn reference_proof_verifies_porep_c2() {
    reference_proof_verifies(ProofKind::PorepC2);
}

#[test]
fn reference_proof_verifies_snap_deals() {
    reference_proof_verifies(ProofKind::SnapDeals);
}

/// The testdata is what filecoin-proofs' own provers accept: their proofs verify.
fn api_prover_accepts_testdata(kind: ProofKind) {
    let m = manifest();
    paramgen::generate(SECTOR_SIZE, &[kind], &params_dir(), &|line| eprintln!("{line}")).unwrap();
    let start = Instant::now();
    let proof = prove_with_api(m, kind).unwrap();
    eprintln!("{kind}: filecoin-proofs-api proved in {:.1?}", start.elapsed());
    assert!(verify_with_api(m, kind, &proof).unwrap(), "{kind}");
}

#[test]
fn api_prover_accepts_testdata_window_post() {
    api_prover_accepts_testdata(ProofKind::WindowPost);
}

#[test]
fn api_prover_accepts_testdata_winning_post() {
    api_prover_accepts_testdata(ProofKind::WinningPost);
}

#[test]
fn api_prover_accepts_testdata_porep_c2() {
    api_prover_accepts_testdata(ProofKind::PorepC2);
}

#[test]
fn api_prover_accepts_testdata_snap_deals() {
    api_prover_accepts_testdata(ProofKind::SnapDeals);
}
