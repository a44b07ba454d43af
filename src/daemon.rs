//! The daemon's lifecycle, in the order systemd sees it: detect limits, start backends and the
//! engine, bind the sockets (JSON-RPC, and gRPC for Curio), preload parameters, `READY=1`; then
//! serve, reload on SIGHUP or `Snark.Reload`, and on SIGTERM/SIGINT drain, fail what remains, drop
//! every backend (which destroys device contexts), remove the sockets and exit 0.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};


use tokio::signal::unix::{signal, SignalKind};

use crate::config::{Config, ConfigSource, SocketConfig};
use crate::engine::budget::witness_budget;
use crate::engine::{Engine, EngineSettings, Sizing, Verifier};
use crate::groth16::ProvingBackend;
use crate::rpc::server::{self, AccessPolicy, BindError};
use crate::rpc::state::State;
use crate::srs::SrsAdmin;
use crate::systemd::cgroup;
use crate::systemd::journal::LogHandle;
use crate::systemd::notify;

/// What the daemon proves with: the backends (one per device) and where parameters come from.
/// `run` builds the real ones; tests may pass their own.
pub struct DaemonParts {
    pub backends: Vec<Arc<dyn ProvingBackend>>,
    pub srs: Arc<dyn SrsAdmin>,
    pub verifier: Verifier,
    /// One line per backend decision, for the log and Status (e.g. "cuda: no device, using cpu").
    pub notes: Vec<String>,
}

/// Why the daemon could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("{0}")]
    Bind(#[from] BindError),
    #[error("{0}")]
    Startup(String),
}

/// The real proving parts for `config`: parameter files from `params.dir`, the backends
/// [`crate::backends::for_config`] chooses, and the Groth16 verifier.
pub fn default_parts(config: &Config) -> DaemonParts {
    let srs = Arc::new(crate::srs::ResidentSrs::new(config.params.dir.clone(), config.params.point_check));
    let (backends, notes) = crate::backends::for_config(config);
    DaemonParts { backends, srs, verifier: crate::engine::assembly::groth16_verifier(), notes }
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
    // The gRPC socket is always the daemon's own (snarkd.socket passes only the JSON-RPC one),
    // with the same mode and group.
    let grpc_listener = match config.socket.grpc_socket() {
        Some(path) => {
            let (listener, _) = server::bind(&SocketConfig { path: path.clone(), ..config.socket.clone() })
                .map_err(|e| DaemonError::Startup(format!("socket.grpc_path: {e}")))?;
            Some((listener, path))
        }
        None => None,
    };

    let sizing = Sizing::derive(witness_budget(config.memory.limit, &memory, config.memory.reserve), config.memory.synthesis_parallelism);
    tracing::info!(
        "witness budget {} from {}; synthesis parallelism {}, lookahead {} per device, {} proving workers",
        sizing.budget.bytes,
        sizing.budget.source,
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
        cuda: crate::gpu::cuda_status(),
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
    let grpc = grpc_listener.map(|(listener, path)| {
        tracing::info!("serving Curio's cuzk gRPC protocol on {}", path.display());
        crate::grpc::serve(listener, path, state.clone())
    });

    // A stop request during a long preload ends startup there (nothing is in flight yet).
    let mut stopped_early = false;
    for circuit in &config.params.preload {
        notify::status(&format!("preloading {circuit}"));
        let (st, id) = (state.clone(), circuit.clone());
        let load = tokio::task::spawn_blocking(move || st.preload(&id));
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
            engine.apply_settings(EngineSettings::from_config(&config), Some(state.budget(&config)));
        }
        if let Some(Ok(address)) = config.metrics.address() {
            crate::rpc::metrics_http::serve(address, engine.clone()).await.map_err(DaemonError::Startup)?;
        }
        tracing::info!("snarkd {} ready on {}", env!("CARGO_PKG_VERSION"), config.socket.path.display());
        notify::ready(&engine.summary());
        serve_until_signal(&state, signals).await;
    }

    drain(&state).await;
    // Clients waiting on Await got their answers when the drain ended every job; a connection
    // gets as long to take its reply as it had to send its request.
    let grace = config.socket.request_timeout;
    match grpc {
        Some(grpc) => {
            tokio::join!(rpc.stop(grace), grpc.stop(grace));
        }
        None => rpc.stop(grace).await,
    }
    let engine2 = engine.clone();
    tokio::task::spawn_blocking(move || engine2.shutdown()).await.ok();
    drop(state);
    drop(engine);
    tracing::info!("snarkd stopped");
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
            _ = ping.tick(), if watchdog.is_some() => match state.engine.stalled() {
                // No ping while a worker is dead or stuck: systemd's watchdog then restarts a
                // daemon whose socket still answers but whose proving has stopped.
                Some(why) => tracing::error!("not pinging the watchdog: {why}"),
                None => notify::watchdog(),
            },
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

/// Stops taking jobs, waits for in-flight ones up to `daemon.drain_timeout` as the running
/// config has it (extending systemd's stop timeout meanwhile), then fails the rest. Waiting is on
/// the jobs' own state channels, not a poll. A second signal exits at once.
async fn drain(state: &Arc<State>) {
    let engine = &state.engine;
    let drain_timeout = state.config.read().unwrap().daemon.drain_timeout;
    engine.set_draining();
    notify::stopping(&format!("draining {} jobs", engine.in_flight()));
    tokio::spawn(async {
        let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        tracing::warn!("second signal during drain: exiting now, unfinished jobs are lost");
        std::process::exit(1);
    });
    let deadline = tokio::time::Instant::now() + drain_timeout;
    let extend = Duration::from_secs(30);
    let mut keep_alive = tokio::time::interval(extend / 3);
    let finished = engine.all_finished();
    tokio::pin!(finished);
    loop {
        tokio::select! {
            _ = &mut finished => break,
            _ = tokio::time::sleep_until(deadline) => break,
            _ = keep_alive.tick() => notify::extend_timeout(extend, &format!("draining {} jobs", engine.in_flight())),
        }
    }
    let left = engine.fail_unfinished(&format!(
        "the daemon stopped before the job finished (drain_timeout {}); resubmit it",
        crate::config::duration_text::format(&drain_timeout)
    ));
    if left > 0 {
        tracing::warn!("drain timeout: failed {left} unfinished jobs");
    }
}
