//! Curio's cuzk gRPC protocol against the real daemon on its `cuzk.sock`: every method, every kind
//! proved in Curio's field layout and verified by filecoin-proofs-api, the 256 MiB message limit,
//! bad inputs, the drain, the allow-list, and what the transport costs next to JSON-RPC.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use nix::sys::signal::Signal;
use tonic::transport::Channel;
use tonic::Code;

use super::harness::{block_on, daemon, manifest, request, start, test_params_dir, Daemon};
use snarkd::grpc::pb::await_proof_response::Status as Outcome;
use snarkd::grpc::pb::proving_engine_client::ProvingEngineClient;
use snarkd::grpc::pb::{self, SubmitProofRequest};
use snarkd::proofs::ProofKind;
use snarkd::tools::reference::{use_parameter_dir, verify_with_api};
use snarkd::tools::transport::{compare_prove, curio_request};

type Client = ProvingEngineClient<Channel>;

async fn connect(d: &Daemon) -> Client {
    snarkd::grpc::client::connect(&d.grpc_socket()).await.unwrap_or_else(|e| panic!("{e:#}\n{}", d.log_text()))
}

/// `kind`'s 2 KiB request in Curio's layout (after checking its parameters are there).
fn curio(kind: ProofKind) -> SubmitProofRequest {
    let _ = request(kind);
    curio_request(manifest(), kind).unwrap()
}

fn api_accepts(kind: ProofKind, proof: &[u8]) -> bool {
    use_parameter_dir(&test_params_dir()).unwrap();
    verify_with_api(manifest(), kind, proof).expect("the api verifier runs")
}

async fn prove(c: &mut Client, submit: SubmitProofRequest) -> Result<pb::AwaitProofResponse, tonic::Status> {
    let reply = c.prove(pb::ProveRequest { submit: Some(submit) }).await?.into_inner();
    Ok(reply.result.expect("Prove always carries a result"))
}

/// Asserts a COMPLETED reply whose proof filecoin-proofs-api accepts.
fn assert_proved(kind: ProofKind, r: &pb::AwaitProofResponse) {
    assert_eq!(r.status, Outcome::Completed as i32, "{kind}: {r:?}");
    assert_eq!(r.proof.len(), 192, "{kind}: one partition at 2 KiB");
    assert!(api_accepts(kind, &r.proof), "{kind}: filecoin-proofs-api rejects the proof");
    assert!(r.total_ms > 0 && r.total_ms >= r.queue_wait_ms, "{kind}: timings {r:?}");
}

fn assert_status(s: &tonic::Status, code: Code, parts: &[&str]) {
    assert_eq!(s.code(), code, "{s:?}");
    for p in parts {
        assert!(s.message().contains(p), "{p:?} not in {:?}", s.message());
    }
}

#[test]
fn every_method_answers() {
    let d = start("");
    block_on(async {
        let mut c = connect(&d).await;

        let s = c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner();
        let queues: Vec<_> = s.queues.iter().map(|q| q.proof_kind.as_str()).collect();
        assert_eq!(queues, ["porep-c2", "window-post", "winning-post", "snap-update"]);
        assert!(s.gpus.is_empty(), "the CPU backend is not a GPU: {s:?}");
        assert!(s.pinned_memory_limit_bytes > 0, "the witness budget: {s:?}");

        let first = c.preload_srs(pb::PreloadSrsRequest { circuit_id: "wpost-2k".into() }).await.unwrap().into_inner();
        assert!(!first.already_loaded, "{first:?}");
        let again = c.preload_srs(pb::PreloadSrsRequest { circuit_id: "wpost-2k".into() }).await.unwrap().into_inner();
        assert!(again.already_loaded, "{again:?}");
        let s = c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner();
        let srs = s.loaded_srs.iter().find(|l| l.circuit_id == "wpost-2k").unwrap_or_else(|| panic!("{s:?}"));
        assert!(srs.size_bytes > 0);
        let evicted = c.evict_srs(pb::EvictSrsRequest { circuit_id: "wpost-2k".into() }).await.unwrap().into_inner();
        assert!(evicted.was_loaded && evicted.freed_bytes > 0, "{evicted:?}");
        let evicted = c.evict_srs(pb::EvictSrsRequest { circuit_id: "window_post:2KiB".into() }).await.unwrap().into_inner();
        assert!(!evicted.was_loaded, "{evicted:?}");

        // SubmitProof + AwaitProof, idempotent on request_id.
        let window = SubmitProofRequest { request_id: "wpost-1000-0".into(), ..curio(ProofKind::WindowPost) };
        let job = c.submit_proof(window.clone()).await.unwrap().into_inner();
        assert!(!job.job_id.is_empty());
        let same = c.submit_proof(window).await.unwrap().into_inner();
        assert_eq!(same.job_id, job.job_id, "a repeated request_id is the same job");
        let r = c.await_proof(pb::AwaitProofRequest { job_id: job.job_id.clone(), timeout_ms: 0 }).await.unwrap().into_inner();
        assert_eq!(r.job_id, job.job_id);
        assert_proved(ProofKind::WindowPost, &r);
        assert!(r.gpu_compute_ms > 0 && r.synthesis_ms > 0, "{r:?}");

        // A short wait times out with the job still running; a cancel ends it as CANCELLED.
        let porep = c.submit_proof(curio(ProofKind::PorepC2)).await.unwrap().into_inner();
        assert!(porep.queue_position <= 1, "{porep:?}");
        let r = c.await_proof(pb::AwaitProofRequest { job_id: porep.job_id.clone(), timeout_ms: 1 }).await.unwrap().into_inner();
        assert_eq!(r.status, Outcome::Timeout as i32, "{r:?}");
        c.cancel_proof(pb::CancelProofRequest { job_id: porep.job_id.clone() }).await.unwrap();
        let r = c.await_proof(pb::AwaitProofRequest { job_id: porep.job_id.clone(), timeout_ms: 0 }).await.unwrap().into_inner();
        assert_eq!(r.status, Outcome::Cancelled as i32, "{r:?}");
        assert!(r.error_message.starts_with("cancelled: "), "{r:?}");
        let e = c.cancel_proof(pb::CancelProofRequest { job_id: "0123456789abcdef".into() }).await.unwrap_err();
        assert_status(&e, Code::NotFound, &["not_found: "]);
        let e = c.await_proof(pb::AwaitProofRequest { job_id: "0123456789abcdef".into(), timeout_ms: 0 }).await.unwrap_err();
        assert_eq!(e.code(), Code::NotFound);

        assert_proved(ProofKind::WinningPost, &prove(&mut c, curio(ProofKind::WinningPost)).await.unwrap());

        let s = c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!((s.total_proofs_completed, s.total_proofs_failed), (2, 1), "{s:?}");
        assert!(s.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{s:?}");
        let m = c.get_metrics(pb::GetMetricsRequest {}).await.unwrap().into_inner();
        assert!(m.prometheus_text.contains("snarkd_jobs_total{kind=\"window_post\",outcome=\"ok\"} 1"), "{}", m.prometheus_text);
    });
}

#[test]
fn every_kind_proves_in_curios_layout_and_verifies() {
    let d = start("");
    block_on(async {
        let mut c = connect(&d).await;
        for kind in [ProofKind::WindowPost, ProofKind::WinningPost, ProofKind::SnapDeals, ProofKind::PorepC2] {
            let r = prove(&mut c, curio(kind)).await.unwrap_or_else(|e| panic!("{kind}: {e:?}\n{}", d.log_text()));
            assert_proved(kind, &r);
        }

        // PoRep in the wrapper cuzk's own clients and older Curio send.
        let raw = curio(ProofKind::PorepC2);
        let wrapper = serde_json::json!({
            "SectorNum": raw.sector_number,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&raw.vanilla_proof),
            "SectorSize": raw.sector_size,
        });
        let wrapped = SubmitProofRequest { vanilla_proof: serde_json::to_vec(&wrapper).unwrap(), ..raw };
        assert_proved(ProofKind::PorepC2, &prove(&mut c, wrapped).await.unwrap());

        // SnapDeals with raw 32-byte commitments, as cuzk's own clients send them.
        let snap = &manifest().snap_deals;
        let raw = SubmitProofRequest {
            comm_r_old: snap.comm_r_old.0.to_vec(),
            comm_r_new: snap.comm_r_new.0.to_vec(),
            comm_d_new: snap.comm_d_new.0.to_vec(),
            ..curio(ProofKind::SnapDeals)
        };
        assert_proved(ProofKind::SnapDeals, &prove(&mut c, raw).await.unwrap());
    });
}

#[test]
fn a_message_near_the_256_mib_limit_is_read_and_judged() {
    let d = start("");
    block_on(async {
        let mut c = connect(&d).await;
        // Far over tonic's 4 MiB default, just under Curio's 256 MiB: the daemon must read it all
        // and answer on its merits (not a C1 output), not with a transport limit.
        let big = SubmitProofRequest { vanilla_proof: vec![b'x'; 250 << 20], ..curio(ProofKind::PorepC2) };
        let e = prove(&mut c, big).await.unwrap_err();
        assert_status(&e, Code::InvalidArgument, &["bad_input: vanilla_proof: not a C1 output"]);
        assert!(c.get_status(pb::GetStatusRequest {}).await.is_ok());
    });
}

#[test]
fn bad_inputs_are_invalid_argument_naming_the_field() {
    let d = start("");
    block_on(async {
        let mut c = connect(&d).await;
        let refused = |req: SubmitProofRequest| {
            let mut c = c.clone();
            async move { c.submit_proof(req).await.unwrap_err() }
        };

        let no_proofs = SubmitProofRequest { vanilla_proofs: vec![], ..curio(ProofKind::WindowPost) };
        assert_status(&refused(no_proofs).await, Code::InvalidArgument, &["bad_input: vanilla_proofs: empty"]);

        let porep_as_window = SubmitProofRequest { proof_kind: pb::ProofKind::WindowPostPartition as i32, ..curio(ProofKind::PorepC2) };
        assert_status(&refused(porep_as_window).await, Code::InvalidArgument, &["bad_input: vanilla_proof: set", "WINDOW_POST_PARTITION"]);

        let short = SubmitProofRequest { randomness: vec![1; 31], ..curio(ProofKind::WinningPost) };
        assert_status(&refused(short).await, Code::InvalidArgument, &["bad_input: randomness: expected 32 bytes, got 31"]);

        let not_fr = SubmitProofRequest { randomness: vec![0xff; 32], ..curio(ProofKind::WindowPost) };
        assert_status(&refused(not_fr).await, Code::InvalidArgument, &["bad_input: randomness: not a valid Fr"]);

        let winning_type = curio(ProofKind::WinningPost).registered_proof;
        let wrong_type = SubmitProofRequest { registered_proof: winning_type, ..curio(ProofKind::WindowPost) };
        assert_status(&refused(wrong_type).await, Code::InvalidArgument, &["bad_input: registered_proof:"]);

        let wrong_size = SubmitProofRequest { sector_size: 32 << 30, ..curio(ProofKind::SnapDeals) };
        assert_status(&refused(wrong_size).await, Code::InvalidArgument, &["bad_input: sector_size: 34359738368", "registered_proof"]);

        let snap = curio(ProofKind::SnapDeals);
        let swapped = SubmitProofRequest { comm_d_new: snap.comm_r_new.clone(), ..snap.clone() };
        assert_status(&refused(swapped).await, Code::InvalidArgument, &["bad_input: comm_d_new: CID codec 0xf102"]);
        let truncated = SubmitProofRequest { comm_r_old: snap.comm_r_old[..20].to_vec(), ..snap };
        assert_status(&refused(truncated).await, Code::InvalidArgument, &["bad_input: comm_r_old: not 32 raw bytes nor a commitment CID"]);

        let porep = curio(ProofKind::PorepC2);
        let other_sector = SubmitProofRequest { registered_proof: porep.registered_proof + 5, ..porep };
        assert_status(&refused(other_sector).await, Code::InvalidArgument, &["bad_input: registered_proof:", "C1 output"]);

        let e = c.prove(pb::ProveRequest { submit: None }).await.unwrap_err();
        assert_status(&e, Code::InvalidArgument, &["bad_input: submit: missing"]);

        // The daemon keeps serving, and JSON-RPC errors carry the error's name too.
        assert_proved(ProofKind::WinningPost, &prove(&mut c, curio(ProofKind::WinningPost)).await.unwrap());
        let mut bad = request(ProofKind::WindowPost);
        bad["randomness"] = serde_json::json!(hex::encode([0xffu8; 32]));
        let e = d.client().call("Prove", vec![bad]).await.unwrap_err();
        assert!(e.to_string().starts_with("bad_input: randomness: "), "{e}");
    });
}

/// Waits until GetStatus shows a job of `queue` in progress.
async fn wait_running(c: &mut Client, queue: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let s = c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner();
        if s.queues.iter().any(|q| q.proof_kind == queue && q.in_progress == 1) {
            return;
        }
        assert!(Instant::now() < deadline, "{queue} never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts a Prove of `kind` on its own thread and runtime, as a Curio task would hold it.
fn prove_in_background(socket: PathBuf, kind: ProofKind) -> std::thread::JoinHandle<Result<pb::AwaitProofResponse, tonic::Status>> {
    let submit = curio(kind);
    std::thread::spawn(move || {
        block_on(async move {
            let mut c = snarkd::grpc::client::connect(&socket).await.unwrap();
            prove(&mut c, submit).await
        })
    })
}

#[test]
fn sigterm_refuses_new_proofs_finishes_the_one_in_flight_and_removes_the_socket() {
    let mut d = start("");
    let socket = d.grpc_socket();
    let in_flight = prove_in_background(socket.clone(), ProofKind::PorepC2);
    block_on(async {
        let mut c = connect(&d).await;
        wait_running(&mut c, "porep-c2").await;
        d.signal(Signal::SIGTERM).unwrap();
        d.wait_for("STOPPING=1", Duration::from_secs(30)).unwrap();
        let e = c.submit_proof(curio(ProofKind::WindowPost)).await.unwrap_err();
        assert_status(&e, Code::Unavailable, &["draining: "]);
        assert!(c.get_status(pb::GetStatusRequest {}).await.is_ok(), "the socket serves while draining");
    });
    // The notify socket is read meanwhile, as systemd reads it: a drain nobody reads would stall
    // once its EXTEND_TIMEOUT_USEC messages fill the datagram queue.
    let r = in_flight.join().unwrap().expect("the in-flight Prove gets its answer");
    assert_proved(ProofKind::PorepC2, &r);
    assert_eq!(d.wait_exit(Duration::from_secs(120)).unwrap().code(), Some(0));
    assert!(!socket.exists(), "the gRPC socket is removed on stop");
    assert!(!d.socket.exists());
}

#[test]
fn a_drain_timeout_ends_the_proof_in_flight_as_cancelled() {
    let mut d = start("[daemon]\ndrain_timeout = \"10ms\"\n");
    let socket = d.grpc_socket();
    let in_flight = prove_in_background(socket.clone(), ProofKind::PorepC2);
    block_on(async {
        let mut c = connect(&d).await;
        wait_running(&mut c, "porep-c2").await;
    });
    d.signal(Signal::SIGTERM).unwrap();
    let r = in_flight.join().unwrap().expect("the in-flight Prove gets a reply");
    assert_eq!(r.status, Outcome::Cancelled as i32, "{r:?}");
    assert!(r.error_message.starts_with("cancelled: ") && r.error_message.contains("drain_timeout"), "{r:?}");
    assert_eq!(d.wait_exit(Duration::from_secs(60)).unwrap().code(), Some(0));
    assert!(!socket.exists());
}

/// Connects to `path` as uid and gid 65534 from a thread of its own: the raw setresuid and
/// setresgid system calls change only the calling thread's credentials, and SO_PEERCRED records
/// the connecting thread's.
fn connect_as_nobody(path: &Path) -> std::os::unix::net::UnixStream {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        // SAFETY: plain system calls on this thread's own credentials; the thread ends after connecting.
        unsafe {
            assert_eq!(libc::syscall(libc::SYS_setresgid, 65534, 65534, 65534), 0);
            assert_eq!(libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534), 0);
        }
        std::os::unix::net::UnixStream::connect(&path).expect("connect as uid 65534")
    })
    .join()
    .unwrap()
}

#[test]
fn a_peer_off_the_allow_list_gets_permission_denied() {
    // A world-connectable socket owned by a group the test is not in, so the refusal comes from
    // the peer-credential check.
    let d = daemon().socket_config("mode = \"0666\"\ngroup = \"12345\"\n").start().unwrap();
    for dir in [d.dir(), d.socket.parent().unwrap()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let stream = std::sync::Mutex::new(Some(connect_as_nobody(&d.grpc_socket())));
    block_on(async {
        let channel = tonic::transport::Endpoint::from_static("http://nobody")
            .connect_with_connector(tower::service_fn(move |_: http::Uri| {
                let s = stream.lock().unwrap().take();
                async move {
                    let s = s.ok_or_else(|| std::io::Error::other("the one connection is used"))?;
                    s.set_nonblocking(true)?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tokio::net::UnixStream::from_std(s)?))
                }
            }))
            .await
            .unwrap();
        let mut nobody = Client::new(channel);
        let e = nobody.get_status(pb::GetStatusRequest {}).await.unwrap_err();
        assert_status(&e, Code::PermissionDenied, &["permission_denied: uid 65534"]);
        let e = nobody.prove(pb::ProveRequest { submit: None }).await.unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied, "refused before the request is looked at: {e:?}");
        assert!(connect(&d).await.get_status(pb::GetStatusRequest {}).await.is_ok(), "root stays allowed");
    });
    assert!(d.log_text().contains("refused a gRPC call from uid 65534"), "{}", d.log_text());
}

#[test]
fn grpc_and_json_rpc_prove_the_same_request_in_comparable_time() {
    let _ = request(ProofKind::WindowPost);
    let d = start("");
    let report = block_on(compare_prove(&d.socket, &d.grpc_socket(), manifest(), ProofKind::WindowPost, 7))
        .unwrap_or_else(|e| panic!("{e:#}\n{}", d.log_text()));
    eprintln!(
        "transport, WindowPoSt 2 KiB, {} rounds each: JSON-RPC Prove median {:.1} ms, gRPC Prove median {:.1} ms, ratio {:.3}",
        report.rounds,
        report.json_rpc_median.as_secs_f64() * 1e3,
        report.grpc_median.as_secs_f64() * 1e3,
        report.ratio
    );
    assert!(report.ratio.is_finite() && report.ratio > 0.0, "{report:?}");
}
