//! A real `snarkd` on a temporary socket, started the way systemd starts it: a config in a
//! temporary directory, a notify socket we bind and keep reading, `NOTIFY_SOCKET` pointing at it,
//! READY=1 awaited, SIGTERM to stop. `snarkctl demo` and `snarkctl bench soak` start one as it is;
//! the integration tests name the binary of their build, add config, arguments and environment,
//! and read the notifications (RELOADING=1, STOPPING=1, EXTEND_TIMEOUT_USEC=…) themselves.

use std::ffi::{OsStr, OsString};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context};
use nix::sys::signal::Signal;

use crate::client::Client;

/// How long a start may take until READY=1 (parameters are loaded lazily, so this is the socket
/// setup and nothing heavy).
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How often the notify reader and the waits look up from a blocking read.
const POLL: Duration = Duration::from_millis(100);

/// Lines of the daemon's log an error carries.
const LOG_TAIL_LINES: usize = 40;

/// The datagram socket `NOTIFY_SOCKET` points at, read on a thread of its own from bind to drop,
/// as systemd reads it: a Unix datagram queue holds only a few messages, and once it is full the
/// daemon's next sd_notify blocks, so a socket nobody reads would stall a drain (it sends
/// EXTEND_TIMEOUT_USEC every 10 s) or a long soak (a STATUS= line every 5 s).
pub struct Notifier {
    path: PathBuf,
    datagrams: mpsc::Receiver<String>,
    stop: Arc<AtomicBool>,
    /// Every datagram `recv` has returned, in order.
    pub seen: Vec<String>,
}

impl Notifier {
    pub fn bind(path: &Path) -> anyhow::Result<Notifier> {
        let sock = UnixDatagram::bind(path).with_context(|| format!("cannot bind the notify socket {}", path.display()))?;
        sock.set_read_timeout(Some(POLL))?;
        let (tx, datagrams) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new().name("notify-reader".into()).spawn(move || {
            let mut buf = vec![0u8; 16 << 10];
            while !stopped.load(Ordering::Relaxed) {
                if let Ok(n) = sock.recv(&mut buf) {
                    if tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                        return;
                    }
                }
            }
        })?;
        Ok(Notifier { path: path.to_path_buf(), datagrams, stop, seen: vec![] })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next datagram, or None after `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Option<String> {
        let msg = self.datagrams.recv_timeout(timeout).ok()?;
        self.seen.push(msg.clone());
        Some(msg)
    }

    /// Reads datagrams until one has the line `line` and returns that datagram; fails after
    /// `timeout`, or once `child` has exited without sending it.
    pub fn wait_for(&mut self, line: &str, timeout: Duration, child: &mut Child) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            // Looked at before the read, so what the child sent before it exited is read first.
            let exited = child.try_wait()?;
            let left = deadline.saturating_duration_since(Instant::now());
            match self.recv(left.min(POLL)) {
                Some(msg) if msg.lines().any(|l| l == line) => return Ok(msg),
                Some(_) => {}
                None => {
                    if let Some(status) = exited {
                        bail!("snarkd exited with {status} before sending {line}; it sent {:?}", self.seen);
                    }
                    ensure!(!left.is_zero(), "snarkd sent no {line} within {timeout:?}; it sent {:?}", self.seen);
                }
            }
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A change to the finished command (see [`TempDaemonBuilder::wrap`]).
type Wrap = Box<dyn FnOnce(&mut Command)>;

/// What to start: [`TempDaemon::builder`] makes one, [`TempDaemonBuilder::start`] starts it.
pub struct TempDaemonBuilder {
    binary: Option<PathBuf>,
    params_dir: PathBuf,
    socket_lines: String,
    config: String,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    wrap: Option<Wrap>,
}

impl TempDaemonBuilder {
    /// The `snarkd` to start; by default the one beside the running executable, as `snarkctl`
    /// is installed.
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// Lines for the `[socket]` section, which the builder writes itself (it sets the path).
    pub fn socket_config(mut self, lines: &str) -> Self {
        self.socket_lines.push_str(lines);
        if !self.socket_lines.ends_with('\n') {
            self.socket_lines.push('\n');
        }
        self
    }

    /// TOML appended to the config, after the `[socket]`, `[params]` and `[log]` sections.
    pub fn config(mut self, toml: &str) -> Self {
        self.config.push_str(toml);
        self
    }

    /// Command-line arguments after `--config FILE`.
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Changes the finished command before it starts (to run it inside another program, say);
    /// its stdin, stdout and stderr are set afterwards.
    pub fn wrap(mut self, f: impl FnOnce(&mut Command) + 'static) -> Self {
        self.wrap = Some(Box::new(f));
        self
    }

    /// Starts `snarkd` and waits for its READY=1.
    pub fn start(self) -> anyhow::Result<TempDaemon> {
        let binary = match self.binary {
            Some(b) => b,
            None => std::env::current_exe()?.with_file_name("snarkd"),
        };
        let dir = tempfile::Builder::new().prefix("snarkd-").tempdir().context("cannot make a temporary directory")?;
        let socket = dir.path().join("run/snarkd.sock");
        let config = dir.path().join("snarkd.toml");
        let text = format!(
            "[socket]\npath = \"{}\"\n{}[params]\ndir = \"{}\"\n[log]\ntarget = \"text\"\nlevel = \"info\"\n{}",
            socket.display(),
            self.socket_lines,
            self.params_dir.display(),
            self.config
        );
        std::fs::write(&config, text).with_context(|| format!("cannot write {}", config.display()))?;
        let notify = Notifier::bind(&dir.path().join("notify.sock"))?;
        let log = dir.path().join("snarkd.log");
        let mut cmd = Command::new(&binary);
        cmd.arg("--config")
            .arg(&config)
            .args(&self.args)
            .envs(self.env)
            .env("NOTIFY_SOCKET", notify.path())
            .env_remove("JOURNAL_STREAM");
        if let Some(wrap) = self.wrap {
            wrap(&mut cmd);
        }
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.path().join("snarkd.out"))?)
            .stderr(std::fs::File::create(&log)?);
        let child = cmd.spawn().with_context(|| format!("cannot start {}", binary.display()))?;
        let mut daemon = TempDaemon { child, dir, socket, config, log, notify };
        daemon.wait_for("READY=1", READY_TIMEOUT)?;
        Ok(daemon)
    }
}

/// A `snarkd` child process on a temporary socket; killed, and its directory removed, on drop.
pub struct TempDaemon {
    child: Child,
    dir: tempfile::TempDir,
    /// The JSON-RPC socket (the gRPC one is beside it: [`TempDaemon::grpc_socket`]).
    pub socket: PathBuf,
    pub config: PathBuf,
    /// The daemon's stderr: its log, as text.
    pub log: PathBuf,
    pub notify: Notifier,
}

impl TempDaemon {
    /// Where it serves gRPC: the default `cuzk.sock` beside its JSON-RPC socket.
    pub fn grpc_socket(&self) -> PathBuf {
        self.socket.with_file_name(crate::config::DEFAULT_GRPC_SOCKET_NAME)
    }

    /// A daemon using the parameters in `params_dir`, to configure before it starts.
    pub fn builder(params_dir: &Path) -> TempDaemonBuilder {
        TempDaemonBuilder {
            binary: None,
            params_dir: params_dir.to_path_buf(),
            socket_lines: String::new(),
            config: String::new(),
            args: vec![],
            env: vec![],
            wrap: None,
        }
    }

    /// The temporary directory holding the config, the sockets and the log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn client(&self) -> Client {
        Client::new(&self.socket)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, sig: Signal) -> anyhow::Result<()> {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig)
            .with_context(|| format!("cannot send {sig} to snarkd"))
    }

    /// Reads notifications until one has the line `line`; see [`Notifier::wait_for`].
    pub fn wait_for(&mut self, line: &str, timeout: Duration) -> anyhow::Result<String> {
        self.notify.wait_for(line, timeout, &mut self.child).map_err(|e| anyhow!("{e:#}\n{}", self.log_tail()))
    }

    /// Waits for the daemon to exit; past `timeout` kills it and fails.
    pub fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                bail!("snarkd did not exit within {timeout:?}\n{}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then waits for the drain and a clean exit.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.signal(Signal::SIGTERM)?;
        let status = self.child.wait()?;
        ensure!(status.success(), "snarkd exited with {status}\n{}", self.log_tail());
        Ok(())
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The end of the log, for errors (the directory holding it goes when the daemon does).
    fn log_tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        format!("the end of snarkd's log:\n{}", lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n"))
    }
}

impl Drop for TempDaemon {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
