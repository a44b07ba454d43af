//! What every method (JSON-RPC and gRPC) reaches: the engine, the access policy, the resident
//! parameters, and the running config with its reload. Reload lives here because it changes what
//! the methods see; the daemon only triggers it (SIGHUP) and owns the process around it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use serde::Serialize;

use super::server::AccessPolicy;
use super::types::ReloadReport;
use crate::config::{Config, ConfigSource};
use crate::engine::budget::{witness_budget, WitnessBudget};
use crate::engine::{Engine, EngineSettings, EngineStatus};
use crate::error::SnarkError;
use crate::srs::{CircuitId, Evicted, Preloaded, SrsAdmin, SrsStatus};
use crate::systemd::cgroup::MemoryLimit;
use crate::systemd::journal::LogHandle;
use crate::systemd::notify;
use crate::units::Bytes;

/// Everything the methods reach.
pub struct State {
    pub config: RwLock<Config>,
    pub(crate) source: ConfigSource,
    pub(crate) overrides: BTreeMap<String, toml::Value>,
    pub engine: Arc<Engine>,
    pub memory: MemoryLimit,
    pub access: Arc<RwLock<AccessPolicy>>,
    pub(crate) socket_gid: u32,
    pub(crate) srs: Arc<dyn SrsAdmin>,
    pub(crate) log: Option<LogHandle>,
    pub(crate) started: Instant,
    pub(crate) reload_lock: Mutex<()>,
    pub(crate) shutdown: tokio::sync::Notify,
    pub(crate) notes: Vec<String>,
    /// The CUDA build and driver line (`gpu::cuda_status`), worked out once by the daemon, so rpc
    /// does not import gpu.
    pub(crate) cuda: String,
}

/// `Snark.Status`.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub version: &'static str,
    pub cuda: String,
    pub uptime_seconds: u64,
    pub config_file: PathBuf,
    pub socket: PathBuf,
    pub memory: MemoryReport,
    pub engine: EngineStatus,
    pub params: ParamsReport,
    /// Where logs go: "journal", "text", or "inherited" when the daemon runs in-process.
    pub log: &'static str,
    /// One line per backend decision at start-up (which GPUs, why not, how many CPU workers).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    pub limit: Bytes,
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParamsReport {
    pub dir: PathBuf,
    pub resident: Vec<SrsStatus>,
}

impl State {
    pub fn status(&self) -> StatusReport {
        let config = self.config.read().unwrap();
        StatusReport {
            version: env!("CARGO_PKG_VERSION"),
            cuda: self.cuda.clone(),
            uptime_seconds: self.started.elapsed().as_secs(),
            config_file: self.source.path().to_path_buf(),
            socket: config.socket.path.clone(),
            memory: MemoryReport { limit: self.memory.bytes, source: self.memory.source.clone() },
            engine: self.engine.status(),
            params: ParamsReport { dir: config.params.dir.clone(), resident: self.srs.status() },
            log: self.log.as_ref().map(|l| l.target).unwrap_or("inherited"),
            notes: self.notes.clone(),
        }
    }

    /// Resolves `circuit` (a cache identifier or `<kind>:<sector size>`) and loads it.
    /// Loads a circuit's parameters; the witness budget shrinks by what they hold.
    pub fn preload(&self, circuit: &str) -> Result<Preloaded, SnarkError> {
        let out = self.srs.preload(&crate::proofs::circuit_id_for(circuit)?);
        self.engine.params_changed();
        out
    }

    /// Drops a circuit's parameters and its precompiled record; the witness budget grows by what
    /// they held.
    pub fn evict(&self, circuit: &str) -> Result<Evicted, SnarkError> {
        let id = crate::proofs::circuit_id_for(circuit)?;
        let out = self.srs.evict(&id);
        self.engine.forget_record(&id);
        out
    }

    pub fn resident(&self) -> Vec<SrsStatus> {
        self.srs.status()
    }

    pub fn is_resident(&self, id: &CircuitId) -> bool {
        self.srs.status().iter().any(|s| &s.id == id)
    }

    /// Starts a drain, as SIGTERM does.
    pub fn request_shutdown(&self) {
        self.shutdown.notify_one();
    }

    /// The witness budget the running config gives (the engine takes resident parameters out).
    pub fn budget(&self, config: &Config) -> WitnessBudget {
        witness_budget(config.memory.limit, &self.memory, config.memory.reserve)
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
        self.engine.apply_settings(EngineSettings::from_config(&applied), Some(self.budget(&applied)));
        for circuit in applied.params.preload.iter().filter(|c| !old.params.preload.contains(c)) {
            if let Err(e) = self.preload(circuit) {
                tracing::warn!("preload of {circuit} after reload failed: {}", e.message);
            }
        }
        *self.config.write().unwrap() = applied;
        Ok(ReloadReport { applied: diff.live, restart_required: diff.restart })
    }
}
