//! Real proofs through the real daemon: every kind verified by filecoin-proofs-api's verifiers,
//! bad inputs with their codes, verification failures, the drain with a job in flight, journal
//! fields, priority with real backends, and injected backend faults.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{json, Value};

use super::harness::{block_on, daemon, manifest, proof_bytes, prove, request, start, test_params_dir};
use snarkd::error::ErrorCode;
use snarkd::tools::reference::{use_parameter_dir, verify_with_api};
use snarkd::proofs::ProofKind;

fn api_accepts(kind: ProofKind, proof: &[u8]) -> bool {
    use_parameter_dir(&test_params_dir()).unwrap();
    verify_with_api(manifest(), kind, proof).expect("the api verifier runs")
}

/// Each circuit is recorded in the background on its first proof (`memory.precompile`, on by
/// default); the second proof of each kind is synthesized with the record and must verify too.
#[test]
fn every_kind_proves_through_the_daemon_and_verifies_with_the_api() {
    let d = start("");
    let kinds = [ProofKind::WindowPost, ProofKind::WinningPost, ProofKind::SnapDeals, ProofKind::PorepC2];
    for kind in kinds {
        let r = prove(&d, request(kind)).unwrap_or_else(|e| panic!("{kind}: {e}\n{}", d.log_text()));
        assert_eq!(r["state"], "done");
        let proof = proof_bytes(&r);
        assert_eq!(proof.len(), 192, "{kind}: one partition at 2 KiB");
        assert!(api_accepts(kind, &proof), "{kind}: filecoin-proofs-api rejects snarkd's proof");
        let t = &r["job"]["timings"];
        for stage in ["synthesis", "prove", "prove_msm", "prove_ntt", "verify", "total"] {
            assert!(t[stage].as_f64().unwrap() > 0.0, "{kind}: timing {stage} missing: {t}");
        }
        let job = block_on(d.client().call("Job", vec![r["job"]["job_id"].clone()])).unwrap();
        assert_eq!(job["state"], "done");
        assert_eq!(job["partitions_done"], 1);
    }
    let status = block_on(d.client().call("Status", vec![])).unwrap();
    assert!(status["params"]["resident"].as_array().unwrap().len() >= 3, "{status}");

    let deadline = Instant::now() + Duration::from_secs(120);
    let records = loop {
        let s = block_on(d.client().call("Status", vec![])).unwrap();
        let records = s["engine"]["precompiled"].as_array().unwrap().clone();
        if records.len() == kinds.len() && records.iter().all(|r| r["state"] == "ready") {
            // the recordings' reservations are gone with them, as every job's is
            assert_eq!(s["engine"]["budget"]["reserved"], 0, "{s}");
            break records;
        }
        assert!(Instant::now() < deadline, "the circuits were not all recorded: {records:?}\n{}", d.log_text());
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(records.iter().all(|r| r["bytes"].as_u64().unwrap() > 0 && r["partitions"] == 0), "{records:?}");
    for kind in kinds {
        let r = prove(&d, request(kind)).unwrap_or_else(|e| panic!("{kind}, precompiled: {e}\n{}", d.log_text()));
        assert!(api_accepts(kind, &proof_bytes(&r)), "{kind}: filecoin-proofs-api rejects the precompiled proof");
    }
    let s = block_on(d.client().call("Status", vec![])).unwrap();
    let used: Vec<_> = s["engine"]["precompiled"].as_array().unwrap().iter().map(|r| r["partitions"].clone()).collect();
    assert_eq!(used, vec![json!(1); kinds.len()], "each second proof used its circuit's record");
    assert_eq!(d.log_text().matches("/1, precompiled)").count(), kinds.len(), "{}", d.log_text());
    // evicting a circuit drops its record with its parameters
    block_on(d.client().call("Evict", vec![json!("window_post:2KiB")])).unwrap();
    let s = block_on(d.client().call("Status", vec![])).unwrap();
    assert_eq!(s["engine"]["precompiled"].as_array().unwrap().len(), kinds.len() - 1, "{s}");
}

#[test]
fn the_api_prover_and_snarkd_both_verify_on_the_same_inputs() {
    use_parameter_dir(&test_params_dir()).unwrap();
    let d = start("");
    let kind = ProofKind::WindowPost;
    let theirs = snarkd::tools::reference::prove_with_api(manifest(), kind).unwrap();
    let ours = proof_bytes(&prove(&d, request(kind)).unwrap());
    assert!(api_accepts(kind, &theirs) && api_accepts(kind, &ours));
    assert_ne!(theirs, ours, "fresh r and s make every proof different");
}

#[test]
fn a_wrong_prover_id_or_a_tampered_witness_gets_verification_failed() {
    let d = daemon().env("SNARKD_FAULTS", "0=corrupt-witness").start().unwrap();
    let mut porep = request(ProofKind::PorepC2);
    porep["miner_id"] = json!(1001);
    let e = prove(&d, porep).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::VerificationFailed.code()), "{e}");
    let e = prove(&d, request(ProofKind::WindowPost)).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::VerificationFailed.code()), "{e}");
    assert!(d.log_text().contains("FAULT INJECTION"));
}

#[test]
fn bad_inputs_get_their_codes_and_the_daemon_keeps_serving() {
    let d = start("");
    let code = |req: Value| prove(&d, req).unwrap_err().code();

    let mut r = request(ProofKind::PorepC2);
    let c1 = r["c1_output"].as_str().unwrap().to_string();
    r["c1_output"] = json!(&c1[..c1.len() / 2 / 4 * 4]);
    assert_eq!(code(r), Some(ErrorCode::BadInput.code()), "truncated C1 JSON");

    let mut r = request(ProofKind::WindowPost);
    r["registered_post_proof"] = request(ProofKind::WinningPost)["registered_post_proof"].clone();
    assert_eq!(code(r), Some(ErrorCode::BadInput.code()), "winning proof type in a window request");

    let mut r = request(ProofKind::WinningPost);
    let p = r["vanilla_proofs"][0].clone();
    r["vanilla_proofs"] = json!([p.clone(), p]);
    assert_eq!(code(r), Some(ErrorCode::BadInput.code()), "two vanilla proofs for WinningPoSt");

    let mut r = request(ProofKind::WindowPost);
    r["partition_index"] = json!(1_000_000);
    assert_eq!(code(r), Some(ErrorCode::BadInput.code()), "out-of-range partition index");

    let mut r = request(ProofKind::WindowPost);
    r["randomness"] = json!(hex::encode([0xffu8; 32]));
    assert_eq!(code(r), Some(ErrorCode::BadInput.code()), "randomness that is not an Fr");

    let mut r = request(ProofKind::SnapDeals);
    r["kind"] = json!("porep_c2");
    assert_eq!(code(r), Some(ErrorCode::BadInput.code()), "snap fields under the porep kind");

    assert!(block_on(d.client().call("Version", vec![])).is_ok());
}

#[test]
fn a_missing_params_file_is_named() {
    let empty = tempfile::tempdir().unwrap();
    let d = daemon().args(["--params-dir", empty.path().to_str().unwrap()]).start().unwrap();
    let e = prove(&d, request(ProofKind::WindowPost)).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::ParamsMissing.code()), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&empty.path().display().to_string()) && msg.contains(".params"), "{msg}");
    assert!(msg.contains("snarkctl params generate"), "says how to get it: {msg}");
}

#[test]
fn sigterm_lets_the_job_in_flight_finish_and_refuses_new_ones() {
    let mut d = start("");
    let client = d.client();
    let waiter = std::thread::spawn(move || block_on(client.call("Prove", vec![request(ProofKind::PorepC2)])));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let s = block_on(d.client().call("Status", vec![])).unwrap();
        let running = s["engine"]["queues"].as_array().unwrap().iter().any(|q| q["kind"] == "porep_c2" && q["running"] == 1);
        if running {
            break;
        }
        assert!(Instant::now() < deadline, "PoRep never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    d.signal(Signal::SIGTERM).unwrap();
    d.wait_for("STOPPING=1", Duration::from_secs(30)).unwrap();
    let e = prove(&d, request(ProofKind::WindowPost)).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Draining.code()), "{e}");
    let r = waiter.join().unwrap().expect("the in-flight job's result reaches its client");
    assert!(api_accepts(ProofKind::PorepC2, &proof_bytes(&r)));
    assert_eq!(d.wait_exit(Duration::from_secs(120)).unwrap().code(), Some(0));
    assert!(!d.socket.exists());
    while d.notify.recv(Duration::from_millis(200)).is_some() {}
    assert!(d.notify.seen.iter().any(|m| m.contains("EXTEND_TIMEOUT_USEC=")), "{:?}", d.notify.seen);
}

#[test]
fn winning_post_finishes_before_two_earlier_poreps_on_the_cpu_backend() {
    let d = start("");
    let c = d.client();
    // Warm the WinningPoSt parameters so the race is about scheduling, not loading.
    prove(&d, request(ProofKind::WinningPost)).unwrap();
    let p1 = block_on(c.call("Submit", vec![request(ProofKind::PorepC2)])).unwrap();
    let p2 = block_on(c.call("Submit", vec![request(ProofKind::PorepC2)])).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let w = block_on(c.call("Submit", vec![request(ProofKind::WinningPost)])).unwrap();
    let mut finished = vec![];
    for (name, job) in [("winning", &w), ("porep1", &p1), ("porep2", &p2)] {
        let r = block_on(c.call("Await", vec![job["job_id"].clone()])).unwrap();
        let kind = if name == "winning" { ProofKind::WinningPost } else { ProofKind::PorepC2 };
        assert!(api_accepts(kind, &proof_bytes(&r)), "{name}");
        let j = &r["job"];
        let end = j["submitted_at_unix_ms"].as_f64().unwrap() + j["timings"]["total"].as_f64().unwrap();
        finished.push((end, name));
    }
    finished.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    assert_eq!(finished[0].1, "winning", "completion order {finished:?}");
}

#[test]
fn journal_entries_carry_job_fields() {
    use std::os::unix::net::UnixDatagram;
    // Play journald: a datagram socket bind-mounted over /run/systemd/journal inside a private
    // mount namespace, so the real journal (if any) is untouched.
    let dir = tempfile::tempdir().unwrap();
    let journal = UnixDatagram::bind(dir.path().join("socket")).unwrap();
    journal.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    std::fs::create_dir_all("/run/systemd/journal").expect("create /run/systemd/journal (tests run as root)");
    let mount = format!("mount --bind {} /run/systemd/journal && exec \"$0\" \"$@\" --log-target journal", dir.path().display());
    let d = daemon().wrap(move |c| {
        let program = c.get_program().to_os_string();
        let args: Vec<_> = c.get_args().map(|a| a.to_os_string()).collect();
        let mut sh = std::process::Command::new("unshare");
        sh.arg("-m").arg("sh").arg("-c").arg(mount);
        sh.arg(program).args(args);
        for (k, v) in c.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        *c = sh;
    })
    .start()
    .unwrap();
    // Read continuously, as journald does: a datagram socket's queue is short, and a logger
    // blocks when it is full.
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let mut all = vec![];
        while let Ok(n) = journal.recv(&mut buf) {
            let entry = parse_journal_entry(&buf[..n]);
            let done = entry.get("STAGE").is_some_and(|s| s == "done");
            all.push(entry);
            if done {
                break;
            }
        }
        all
    });
    let r = prove(&d, request(ProofKind::WindowPost)).unwrap();
    let job_id = r["job"]["job_id"].as_str().unwrap().to_string();
    let entries: Vec<HashMap<String, String>> =
        reader.join().unwrap().into_iter().filter(|e| e.get("JOB_ID") == Some(&job_id)).collect();
    assert!(!entries.is_empty(), "no journal entry carried JOB_ID={job_id}");
    for stage in ["queued", "synthesis", "prove", "verify", "done"] {
        assert!(entries.iter().any(|e| e.get("STAGE").is_some_and(|s| s == stage)), "no entry for stage {stage}: {entries:#?}");
    }
    let e = entries.iter().find(|e| e.get("STAGE").is_some_and(|s| s == "prove")).unwrap();
    assert_eq!(e.get("KIND").map(String::as_str), Some("window_post"));
    assert!(e.get("DEVICE").is_some_and(|d| d.starts_with("cpu")), "{e:?}");
    assert_eq!(e.get("PRIORITY").map(String::as_str), Some("6"), "info maps to journald info (6), not notice");
    assert!(!e.contains_key("F_JOB_ID"), "fields carry no F_ prefix");
}

/// Parses one datagram of journald's native protocol: `NAME=value\n`, or `NAME\n` followed by a
/// little-endian u64 length, the value bytes and `\n`.
fn parse_journal_entry(mut data: &[u8]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    while !data.is_empty() {
        let nl = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
        let line = &data[..nl];
        if let Some(eq) = line.iter().position(|&b| b == b'=') {
            out.insert(String::from_utf8_lossy(&line[..eq]).into_owned(), String::from_utf8_lossy(&line[eq + 1..]).into_owned());
            data = &data[(nl + 1).min(data.len())..];
        } else {
            let name = String::from_utf8_lossy(line).into_owned();
            let rest = &data[nl + 1..];
            let len = u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize;
            out.insert(name, String::from_utf8_lossy(&rest[8..8 + len]).into_owned());
            data = &rest[(8 + len + 1).min(rest.len())..];
        }
    }
    out
}

#[test]
fn a_backend_panic_fails_that_job_alone() {
    let d = daemon().env("SNARKD_FAULTS", "0=panic-once").start().unwrap();
    let e = prove(&d, request(ProofKind::WindowPost)).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Internal.code()), "{e}");
    assert!(e.to_string().contains("panicked"), "{e}");
    let r = prove(&d, request(ProofKind::WindowPost)).expect("the daemon and the next job carry on");
    assert!(api_accepts(ProofKind::WindowPost, &proof_bytes(&r)));
}

#[test]
fn a_device_error_retries_on_another_worker_and_marks_the_device_degraded() {
    let d = daemon().config("[proving]\ncpu_workers = 2\n").env("SNARKD_FAULTS", "0=device-error").start().unwrap();
    for _ in 0..3 {
        let r = prove(&d, request(ProofKind::WindowPost)).expect("retried on the healthy worker");
        assert!(api_accepts(ProofKind::WindowPost, &proof_bytes(&r)));
    }
    let s = block_on(d.client().call("Status", vec![])).unwrap();
    let devices = s["engine"]["devices"].as_array().unwrap();
    assert!(devices[0]["degraded"].as_str().is_some_and(|r| r.contains("injected")), "{s}");
    assert!(devices[1]["degraded"].is_null());
    let metrics = block_on(d.client().call("Metrics", vec![])).unwrap();
    assert!(metrics.as_str().unwrap().contains("snarkd_retries_total 1"), "one retry, then the degraded device gets no work");
}

#[test]
fn a_client_that_disconnects_mid_prove_can_reattach_by_request_id() {
    let d = start("");
    let mut req = request(ProofKind::WindowPost);
    req["request_id"] = json!("curio-task-42");
    let client = d.client();
    let r2 = req.clone();
    // Drop the HTTP request a moment after sending it.
    let _ = block_on(async move { tokio::time::timeout(Duration::from_millis(300), client.call("Prove", vec![r2])).await });
    let job = block_on(d.client().call("Submit", vec![req])).unwrap();
    let r = block_on(d.client().call("Await", vec![job["job_id"].clone(), json!(60_000)])).unwrap();
    assert_eq!(r["state"], "done");
    assert!(api_accepts(ProofKind::WindowPost, &proof_bytes(&r)));
    let pending = block_on(d.client().call("Await", vec![job["job_id"].clone(), json!(1)])).unwrap();
    assert_eq!(pending["state"], "done", "a finished job stays fetchable");
}

#[test]
fn preload_and_evict_by_kind_and_sector_size() {
    let _ = request(ProofKind::WindowPost);
    let d = start("");
    let r = block_on(d.client().call("Preload", vec![json!("window_post:2KiB")])).unwrap();
    assert!(r["bytes"].as_u64().unwrap() > 0, "{r}");
    let s = block_on(d.client().call("Status", vec![])).unwrap();
    assert!(s["engine"]["devices"][0].get("memory").is_none(), "the cpu backend has no device memory: {s}");
    let resident = s["params"]["resident"].as_array().unwrap();
    assert!(resident.iter().any(|e| e["id"] == r["circuit"] && e["last_used"].is_number()), "{s}");
    block_on(d.client().call("Evict", vec![json!("window_post:2KiB")])).unwrap();
    let e = block_on(d.client().call("Evict", vec![json!("window_post:2KiB")])).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound.code()));
    let e = block_on(d.client().call("Preload", vec![json!("porep_c2:64GiB")])).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::ParamsMissing.code()));
    assert!(e.to_string().contains("v28-stacked-proof-of-replication"), "names the file: {e}");
}
