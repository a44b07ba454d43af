//! The daemon's lifecycle, in the order systemd sees it: detect limits, start backends and the
//! engine, bind the socket, preload parameters, `READY=1`; then serve, reload on SIGHUP or
//! `Snark.Reload`, and on SIGTERM/SIGINT drain, fail what remains, drop every backend (which
//! destroys device contexts), remove the socket and exit 0.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::signal::unix::{signal, SignalKind};

use crate::config::{Config, ConfigSource};
use crate::engine::{Engine, EngineSettings, Sizing, SrsSource, Verifier};
use crate::error::{ErrorCode, SnarkError};
use crate::groth16::ProvingBackend;
use crate::rpc::server::{self, AccessPolicy, BindError};
use crate::rpc::types::ReloadReport;
use crate::systemd::cgroup::{self, MemoryLimit};
use crate::systemd::journal::LogHandle;
use crate::systemd::notify;
use crate::units::Bytes;

/// Loads, evicts and lists resident parameters, for Preload/Evict/Status.
pub trait SrsAdmin: SrsSource {
    /// Loads `circuit` (a cache identifier or `<kind>:<sector size>`) and keeps it resident.
    fn preload(&self, circuit: &str) -> Result<Value, SnarkError>;
    fn evict(&self, circuit: &str) -> Result<Value, SnarkError>;
    fn status(&self) -> Value;
}

/// What the daemon proves with: the backends (one per device) and where parameters come from.
/// `run` builds the real ones; tests may pass their own.
pub struct DaemonParts {
    pub backends: Vec<Arc<dyn ProvingBackend>>,
    pub srs: Arc<dyn SrsAdmin>,
    pub verifier: Verifier,
    /// One line per backend decision, for the log and Status (e.g. "cuda: no device, using cpu").
    pub notes: Vec<String>,
}

/// Everything the RPC methods reach.
pub struct State {
    pub config: RwLock<Config>,
    source: ConfigSource,
    overrides: BTreeMap<String, toml::Value>,
    pub engine: Arc<Engine>,
    pub memory: MemoryLimit,
    pub access: Arc<RwLock<AccessPolicy>>,
    socket_gid: u32,
    srs: Arc<dyn SrsAdmin>,
    log: Option<LogHandle>,
    started: Instant,
    reload_lock: Mutex<()>,
    shutdown: tokio::sync::Notify,
    notes: Vec<String>,
}

/// Why the daemon could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("{0}")]
    Bind(#[from] BindError),
    #[error("{0}")]
    Startup(String),
}

/// The witness budget: an explicit `memory.limit`, else the detected limit minus resident
/// parameters minus `memory.reserve`.
pub fn budget(config: &Config, memory: &MemoryLimit, srs_resident: u64) -> (Bytes, String) {
    match config.memory.limit {
        Some(limit) => (limit, "memory.limit".into()),
        None => {
            let b = memory.bytes.saturating_sub(Bytes(srs_resident)).saturating_sub(config.memory.reserve);
            (b, format!("{} ({}) - resident params {} - memory.reserve {}", memory.source, memory.bytes, Bytes(srs_resident), config.memory.reserve))
        }
    }
}

impl State {
    pub fn status(&self) -> Value {
        let config = self.config.read().unwrap();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "cuda": crate::gpu::cuda_status(),
            "uptime_seconds": self.started.elapsed().as_secs(),
            "config_file": self.source.path(),
            "socket": config.socket.path,
            "memory": { "limit": self.memory.bytes, "source": self.memory.source },
            "engine": self.engine.status(),
            "params": { "dir": config.params.dir, "resident": self.srs.status() },
            "log": self.log.as_ref().map(|l| l.target).unwrap_or("inherited"),
            "notes": self.notes,
        })
    }

    pub fn preload(&self, circuit: &Value) -> Result<Value, SnarkError> {
        let name = circuit.as_str().ok_or_else(|| SnarkError::bad_input("circuit: expected a string (params[0])"))?;
        self.srs.preload(name)
    }

    pub fn evict(&self, circuit: &Value) -> Result<Value, SnarkError> {
        let name = circuit.as_str().ok_or_else(|| SnarkError::bad_input("circuit: expected a string (params[0])"))?;
        self.srs.evict(name)
    }

    /// Starts a drain, as SIGTERM does.
    pub fn request_shutdown(&self) {
        self.shutdown.notify_one();
    }

    /// Re-reads the config. A rejected config keeps the old one and returns why.
    pub fn reload(&self) -> Result<ReloadReport, SnarkError> {
        let _guard = self.reload_lock.lock().unwrap();
        notify::reloading();
        let result = self.apply_reload();
        match &result {
            Ok(r) => tracing::info!(
                "reloaded {}: applied [{}], needs restart [{}]",
                self.source.path().display(),
                r.applied.join(", "),
                r.restart_required.join(", ")
            ),
            Err(e) => tracing::error!("reload rejected, keeping the running config: {}", e.message),
        }
        notify::ready(&self.engine.summary());
        result
    }

    fn apply_reload(&self) -> Result<ReloadReport, SnarkError> {
        let new = crate::config::load(&self.source, &self.overrides)
            .map_err(|e| SnarkError::bad_input(format!("config rejected: {e}")))?;
        let old = self.config.read().unwrap().clone();
        let diff = old.diff(&new);
        let applied = old.with_restart_keys_of(&new);
        if let Some(log) = &self.log {
            log.set_level(&applied.log.level).map_err(|e| SnarkError::bad_input(format!("config rejected: key `log.level`: {e}")))?;
        }
        *self.access.write().unwrap() = AccessPolicy::new(&applied.access, self.socket_gid);
        let (b, _) = budget(&applied, &self.memory, self.srs.resident_bytes());
        self.engine.apply_settings(EngineSettings::from_config(&applied), Some(b));
        for circuit in applied.params.preload.iter().filter(|c| !old.params.preload.contains(c)) {
            if let Err(e) = self.srs.preload(circuit) {
                tracing::warn!("preload of {circuit} after reload failed: {}", e.message);
            }
        }
        *self.config.write().unwrap() = applied;
        Ok(ReloadReport { applied: diff.live, restart_required: diff.restart })
    }
}

/// Runs the daemon until it has drained; returns once the socket is gone.
pub async fn run(
    config: Config,
    source: ConfigSource,
    overrides: BTreeMap<String, toml::Value>,
    log: Option<LogHandle>,
    parts: DaemonParts,
) -> Result<(), DaemonError> {
    let memory = cgroup::detect();
    tracing::info!("memory available to the service: {} ({})", memory.bytes, memory.source);
    for note in &parts.notes {
        tracing::info!("{note}");
    }

    let activated = server::from_systemd(&config.socket)?;
    let passed_by_systemd = activated.is_some();
    let (listener, socket_gid) = match activated {
        Some(l) => {
            tracing::info!("using the socket passed by systemd (LISTEN_FDS)");
            l
        }
        None => server::bind(&config.socket)?,
    };

    let (budget_bytes, budget_source) = budget(&config, &memory, 0);
    let sizing = Sizing::derive(budget_bytes, budget_source, config.memory.synthesis_parallelism);
    tracing::info!(
        "witness budget {} from {}; synthesis parallelism {}, lookahead {} per device, {} proving workers",
        sizing.budget,
        sizing.budget_source,
        sizing.synthesis_parallelism,
        sizing.lookahead_per_device,
        parts.backends.len()
    );
    let engine = Engine::start(
        EngineSettings::from_config(&config),
        sizing,
        parts.backends,
        parts.srs.clone(),
        parts.verifier,
    );

    let state = Arc::new(State {
        access: Arc::new(RwLock::new(AccessPolicy::new(&config.access, socket_gid))),
        config: RwLock::new(config.clone()),
        source,
        overrides,
        engine: engine.clone(),
        memory,
        socket_gid,
        srs: parts.srs,
        log,
        started: Instant::now(),
        reload_lock: Mutex::new(()),
        shutdown: tokio::sync::Notify::new(),
        notes: parts.notes,
    });

    // Handlers go in before the socket answers anyone: a client (or systemd, once it sees
    // READY=1) may send SIGTERM as soon as it has an answer, and the default action of SIGHUP and
    // SIGTERM is to kill the process.
    let mut signals = Signals::install();
    let mut rpc = server::serve(listener, &config.socket, crate::rpc::methods::module(state.clone()), state.access.clone());
    if passed_by_systemd {
        // snarkd.socket owns the file and keeps listening across restarts.
        rpc = rpc.keep_socket_file();
    }

    // A stop request during a long preload ends startup there (nothing is in flight yet).
    let mut stopped_early = false;
    for circuit in &config.params.preload {
        notify::status(&format!("preloading {circuit}"));
        let (srs, id) = (state.srs.clone(), circuit.clone());
        let load = tokio::task::spawn_blocking(move || srs.preload(&id));
        tokio::select! {
            r = load => match r {
                Ok(Err(e)) => tracing::error!("preload of {circuit} failed: {}", e.message),
                Err(e) => tracing::error!("preload of {circuit} failed: {e}"),
                Ok(Ok(_)) => {}
            },
            _ = signals.term.recv() => { tracing::info!("SIGTERM during preload: stopping"); stopped_early = true; break; }
            _ = signals.int.recv() => { tracing::info!("SIGINT during preload: stopping"); stopped_early = true; break; }
        }
    }
    if !stopped_early {
        if !config.params.preload.is_empty() {
            let (b, _) = budget(&config, &state.memory, state.srs.resident_bytes());
            engine.apply_settings(EngineSettings::from_config(&config), Some(b));
        }
        if let Some(Ok(address)) = config.metrics.address() {
            serve_metrics(address, engine.clone()).await?;
        }
        tracing::info!("snarkd {} ready on {}", env!("CARGO_PKG_VERSION"), config.socket.path.display());
        notify::ready(&engine.summary());
        serve_until_signal(&state, signals).await;
    }

    drain(&state, &config).await;
    rpc.stop(Duration::from_secs(5)).await;
    let engine2 = engine.clone();
    tokio::task::spawn_blocking(move || engine2.shutdown()).await.ok();
    drop(state);
    drop(engine);
    tracing::info!("snarkd stopped");
    Ok(())
}

/// Serves Prometheus text on `metrics.listen` (validated as an address by the config): one
/// response per connection, whatever the request line, so any scraper works.
async fn serve_metrics(listen: std::net::SocketAddr, engine: Arc<Engine>) -> Result<(), DaemonError> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| DaemonError::Startup(format!("metrics.listen: cannot bind {listen}: {e}")))?;
    tracing::info!("serving Prometheus metrics on http://{listen}/metrics");
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut conn, _)) = listener.accept().await else { continue };
            let engine = engine.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf)).await;
                let body = engine.metrics();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(body.as_bytes()).await;
            });
        }
    });
    Ok(())
}

/// The signals the daemon handles, installed once.
struct Signals {
    hup: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Signals {
        Signals {
            hup: signal(SignalKind::hangup()).expect("install SIGHUP handler"),
            term: signal(SignalKind::terminate()).expect("install SIGTERM handler"),
            int: signal(SignalKind::interrupt()).expect("install SIGINT handler"),
        }
    }
}

async fn serve_until_signal(state: &Arc<State>, signals: Signals) {
    let Signals { mut hup, mut term, mut int } = signals;
    let watchdog = notify::watchdog_interval().map(|d| d / 2);
    let mut ping = tokio::time::interval(watchdog.unwrap_or(Duration::from_secs(3600)));
    let mut status = tokio::time::interval(Duration::from_secs(5));
    let mut last_status = String::new();
    loop {
        tokio::select! {
            _ = hup.recv() => {
                tracing::info!("SIGHUP: reloading configuration");
                let s = state.clone();
                let _ = tokio::task::spawn_blocking(move || s.reload()).await;
            }
            _ = term.recv() => { tracing::info!("SIGTERM: draining"); return; }
            _ = int.recv() => { tracing::info!("SIGINT: draining"); return; }
            _ = state.shutdown.notified() => { tracing::info!("shutdown requested over RPC: draining"); return; }
            _ = ping.tick(), if watchdog.is_some() => notify::watchdog(),
            _ = status.tick() => {
                let line = state.engine.summary();
                if line != last_status {
                    notify::status(&line);
                    last_status = line;
                }
            }
        }
    }
}

/// Stops taking jobs, waits for in-flight ones up to `drain_timeout` (extending systemd's stop
/// timeout meanwhile), then fails the rest. A second signal exits at once.
async fn drain(state: &Arc<State>, config: &Config) {
    let engine = &state.engine;
    engine.set_draining();
    notify::stopping(&format!("draining {} jobs", engine.in_flight()));
    tokio::spawn(async {
        let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        tracing::warn!("second signal during drain: exiting now, unfinished jobs are lost");
        std::process::exit(1);
    });
    let deadline = Instant::now() + config.daemon.drain_timeout;
    let extend = Duration::from_secs(30);
    let mut last_extend = Instant::now() - extend;
    while engine.in_flight() > 0 && Instant::now() < deadline {
        if last_extend.elapsed() >= extend / 3 {
            notify::extend_timeout(extend, &format!("draining {} jobs", engine.in_flight()));
            last_extend = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = engine.fail_unfinished(&format!(
        "the daemon stopped before the job finished (drain_timeout {}); resubmit it",
        crate::config::duration_text::format(&config.daemon.drain_timeout)
    ));
    if left > 0 {
        tracing::warn!("drain timeout: failed {left} unfinished jobs");
    }
    // Let waiting clients receive their results before the socket closes.
    tokio::time::sleep(Duration::from_millis(200)).await;
}

impl SrsSource for crate::srs::ResidentSrs {
    fn get(&self, id: &crate::srs::CircuitId) -> Result<(Arc<crate::srs::Srs>, Duration), SnarkError> {
        self.get_or_load(id)
    }
    fn resident_bytes(&self) -> u64 {
        self.status().iter().map(|s| s.bytes.get()).sum()
    }
}

impl SrsAdmin for crate::srs::ResidentSrs {
    fn preload(&self, circuit: &str) -> Result<Value, SnarkError> {
        let id = crate::proofs::circuit_id_for(circuit)?;
        let (srs, took) = self.get_or_load(&id)?;
        tracing::info!("parameters {id} resident ({}, loaded in {:.1} s)", Bytes(srs.bytes()), took.as_secs_f64());
        Ok(json!({ "circuit": id, "bytes": srs.bytes(), "load_seconds": took.as_secs_f64() }))
    }
    fn evict(&self, circuit: &str) -> Result<Value, SnarkError> {
        let id = crate::proofs::circuit_id_for(circuit)?;
        if crate::srs::ResidentSrs::evict(self, &id) {
            Ok(json!({ "circuit": id, "evicted": true }))
        } else {
            Err(SnarkError::new(ErrorCode::NotFound, format!("{id} is not resident")))
        }
    }
    fn status(&self) -> Value {
        serde_json::to_value(crate::srs::ResidentSrs::status(self)).unwrap_or_default()
    }
}

/// Verifies every partition proof against the verifying key with the statement's public inputs.
pub fn groth16_verifier() -> Verifier {
    Arc::new(|statement, srs, proofs| {
        for (partition, proof) in proofs.iter().enumerate() {
            let inputs = statement.public_inputs(partition)?;
            if !crate::groth16::verify(&srs.pvk, proof, &inputs)? {
                return Ok(false);
            }
        }
        Ok(true)
    })
}

/// The real proving parts for `config`: parameter files from `params.dir`, the CUDA backend per
/// configured GPU when built in and present, and the CPU backend otherwise.
pub fn default_parts(config: &Config) -> DaemonParts {
    let srs = Arc::new(crate::srs::ResidentSrs::new(config.params.dir.clone(), config.params.point_check));
    let mut notes = vec![crate::gpu::cuda_status()];
    let mut backends: Vec<Arc<dyn ProvingBackend>> = vec![];
    let selection = match &config.gpu.devices {
        crate::config::GpuDevices::None => None,
        crate::config::GpuDevices::All => Some("all".to_string()),
        crate::config::GpuDevices::List(v) => Some(v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")),
    };
    match selection {
        None => notes.push("gpu.devices = none: not using GPUs".into()),
        Some(_) if !crate::gpu::BUILT_IN => notes.push("CUDA kernels are not built in: proving on the cpu".into()),
        Some(sel) => match crate::gpu::Gpu::enumerate(&sel) {
            Ok(devices) if devices.is_empty() => notes.push("no GPU found: proving on the cpu".into()),
            Ok(devices) => {
                for dev in devices {
                    notes.push(format!("proving on {}", dev.label()));
                    backends.push(Arc::new(crate::gpu::GpuBackend::new(dev, crate::gpu::B2Placement::Gpu)));
                }
            }
            Err(e) => notes.push(format!("GPUs unavailable ({e}): proving on the cpu")),
        },
    }
    let cpu_workers = match config.proving.cpu_workers {
        0 if backends.is_empty() => 1,
        n => n,
    };
    for _ in 0..cpu_workers {
        backends.push(Arc::new(crate::groth16::CpuBackend::new()));
    }
    notes.push(format!("{cpu_workers} cpu proving worker(s)"));
    inject_faults(&mut backends, &mut notes);
    DaemonParts { backends, srs, verifier: groth16_verifier(), notes }
}

/// Applies `SNARKD_FAULTS` (testing only), loudly.
fn inject_faults(backends: &mut [Arc<dyn ProvingBackend>], notes: &mut Vec<String>) {
    let Ok(spec) = std::env::var(crate::groth16::fault::ENV) else { return };
    match crate::groth16::fault::parse(&spec) {
        Ok(faults) => {
            for (idx, fault) in faults {
                if let Some(b) = backends.get_mut(idx) {
                    *b = Arc::new(crate::groth16::fault::FaultInjecting::new(b.clone(), fault));
                    notes.push(format!("FAULT INJECTION: worker {idx} gets {fault:?} ({}={spec})", crate::groth16::fault::ENV));
                }
            }
        }
        Err(e) => notes.push(format!("ignoring malformed fault injection: {e}")),
    }
}
