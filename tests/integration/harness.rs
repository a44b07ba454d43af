//! A small harness for the integration tests: a temp directory, a notify socket the test binds
//! itself (playing systemd's part), and the real `snarkd` binary started against them.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use snarkd::client::Client;

pub const SNARKD: &str = env!("CARGO_BIN_EXE_snarkd");
pub const SNARKCTL: &str = env!("CARGO_BIN_EXE_snarkctl");

/// Where the 2 KiB test parameters are cached between runs, outside the checkout.
pub fn test_params_dir() -> PathBuf {
    std::env::var_os("SNARKD_TEST_PARAMS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/var/tmp/snarkd-test-params"))
}

/// A datagram socket bound where `NOTIFY_SOCKET` points, collecting what the daemon sends.
pub struct Notifier {
    sock: UnixDatagram,
    pub path: PathBuf,
    pub seen: Vec<String>,
}

impl Notifier {
    pub fn bind(dir: &Path) -> Notifier {
        let path = dir.join("notify.sock");
        let sock = UnixDatagram::bind(&path).expect("bind notify socket");
        Notifier { sock, path, seen: vec![] }
    }

    /// The next datagram, or None after `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Option<String> {
        self.sock.set_read_timeout(Some(timeout)).unwrap();
        let mut buf = vec![0u8; 8192];
        match self.sock.recv(&mut buf) {
            Ok(n) => {
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                self.seen.push(msg.clone());
                Some(msg)
            }
            Err(_) => None,
        }
    }

    /// Reads datagrams until one has the line `line`; returns that datagram.
    pub fn wait_for(&mut self, line: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(msg) = self.recv(deadline.saturating_duration_since(Instant::now())) {
                if msg.lines().any(|l| l == line) {
                    return msg;
                }
            }
        }
        panic!("no {line:?} within {timeout:?}; saw {:?}", self.seen);
    }
}

pub struct Daemon {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub config: PathBuf,
    pub notify: Notifier,
    pub log: PathBuf,
}

/// Config text with the socket and params dir filled in; `extra` is appended verbatim.
pub fn config_text(socket: &Path, extra: &str) -> String {
    format!(
        "[socket]\npath = \"{}\"\n[params]\ndir = \"{}\"\n[log]\ntarget = \"text\"\nlevel = \"info\"\n{extra}",
        socket.display(),
        test_params_dir().display()
    )
}

impl Daemon {
    /// Starts the real binary and waits for READY=1.
    pub fn start(extra_config: &str) -> Daemon {
        Self::start_with(extra_config, |_| {})
    }

    pub fn start_with(extra_config: &str, tweak: impl FnOnce(&mut Command)) -> Daemon {
        let mut d = Self::spawn(extra_config, tweak);
        let ready = d.notify.wait_for("READY=1", Duration::from_secs(120));
        assert!(ready.contains("STATUS="), "READY should carry a STATUS line: {ready:?}");
        d
    }

    /// Starts the real binary without waiting.
    pub fn spawn(extra_config: &str, tweak: impl FnOnce(&mut Command)) -> Daemon {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("run/snarkd.sock");
        let config = dir.path().join("snarkd.toml");
        std::fs::write(&config, config_text(&socket, extra_config)).unwrap();
        let notify = Notifier::bind(dir.path());
        let log = dir.path().join("snarkd.log");
        let mut cmd = Command::new(SNARKD);
        cmd.arg("--config")
            .arg(&config)
            .env("NOTIFY_SOCKET", &notify.path)
            .env_remove("JOURNAL_STREAM")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.path().join("snarkd.out")).unwrap())
            .stderr(std::fs::File::create(&log).unwrap());
        tweak(&mut cmd);
        let child = cmd.spawn().expect("start snarkd");
        Daemon { child, dir, socket, config, notify, log }
    }

    pub fn client(&self) -> Client {
        Client::new(&self.socket)
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).expect("send signal");
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("snarkd did not exit within {timeout:?}; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn ctl(&self, args: &[&str]) -> std::process::Output {
        Command::new(SNARKCTL).arg("--socket").arg(&self.socket).args(args).output().expect("run snarkctl")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
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
