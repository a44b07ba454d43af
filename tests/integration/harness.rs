//! The integration tests' harness: the real `snarkd` of this build started by
//! `snarkd::tools::TempDaemon` (the one `snarkctl demo` starts, playing systemd's part: a temp
//! directory, a notify socket read the whole time, READY=1 awaited) on the cached 2 KiB test
//! parameters, plus the sealed test sector and small helpers for calling and proving.

use std::path::Path;
use std::process::{Command, Output};

use snarkd::tools::TempDaemonBuilder;
pub use snarkd::tools::{test_params_dir, TempDaemon as Daemon};

pub const SNARKD: &str = env!("CARGO_BIN_EXE_snarkd");
pub const SNARKCTL: &str = env!("CARGO_BIN_EXE_snarkctl");

/// A daemon of this build on the test parameters, to configure further before `start()`.
pub fn daemon() -> TempDaemonBuilder {
    Daemon::builder(&test_params_dir()).binary(SNARKD)
}

/// Starts a daemon with `extra_config` appended to its config and waits for READY=1.
pub fn start(extra_config: &str) -> Daemon {
    daemon().config(extra_config).start().unwrap()
}

/// Runs this build's `snarkctl` against `d`'s socket.
pub fn ctl(d: &Daemon, args: &[&str]) -> Output {
    Command::new(SNARKCTL).arg("--socket").arg(&d.socket).args(args).output().expect("run snarkctl")
}

/// A current-thread runtime for driving the async client from a plain #[test].
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// The sealed 2 KiB sector every proving test uses, made once per run (sealing takes
/// milliseconds) next to the cached parameters; filecoin-proofs-api's verifiers read their keys
/// from the same directory.
pub fn manifest() -> &'static snarkd::tools::testdata::Manifest {
    static M: std::sync::OnceLock<snarkd::tools::testdata::Manifest> = std::sync::OnceLock::new();
    M.get_or_init(|| {
        let params = test_params_dir();
        let dir = tempfile::tempdir().unwrap().keep();
        snarkd::tools::testdata::generate(2048, &dir, &params).expect("seal a 2 KiB test sector")
    })
}

fn params_present(params: &Path, kind: snarkd::proofs::ProofKind) -> bool {
    let prefix = match kind {
        snarkd::proofs::ProofKind::PorepC2 => "v28-stacked-proof-of-replication",
        snarkd::proofs::ProofKind::SnapDeals => "v28-empty-sector-update",
        _ => "v28-proof-of-spacetime-fallback",
    };
    std::fs::read_dir(params)
        .map(|d| d.filter_map(|e| e.ok()).any(|e| e.file_name().to_string_lossy().starts_with(prefix) && e.file_name().to_string_lossy().ends_with(".params")))
        .unwrap_or(false)
}

/// The ready-to-send request of `kind` from the manifest, as JSON.
pub fn request(kind: snarkd::proofs::ProofKind) -> serde_json::Value {
    let params = test_params_dir();
    assert!(
        params_present(&params, kind),
        "2 KiB test parameters for {kind} are missing in {}; run scripts/setup (snarkctl params generate --sector-size 2KiB)",
        params.display()
    );
    let m = manifest();
    serde_json::from_slice(&m.read(&m.requests[&kind]).unwrap()).unwrap()
}

/// Proves `req` through the daemon's socket, as Curio's Prove call does.
pub fn prove(d: &Daemon, req: serde_json::Value) -> Result<serde_json::Value, snarkd::client::ClientError> {
    block_on(d.client().call("Prove", vec![req]))
}

/// Decodes a Prove/Await result's proof bytes.
pub fn proof_bytes(result: &serde_json::Value) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(result["proof"].as_str().expect("result has a proof")).unwrap()
}
