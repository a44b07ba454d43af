//! Configuration: one schema, layered as built-in defaults < `/etc/snarkd/snarkd.toml` (or
//! `--config`) < `SNARKD_<SECTION>__<KEY>` environment < command-line flags, through figment.
//!
//! Two steps, as ripgrep does it: [`load`] parses and validates without side effects, so that
//! `snarkd check-config` and `Snark.Reload` can reject a bad file and keep the old one; the daemon
//! then resolves the validated [`Config`] into live objects. Unknown keys are errors, never ignored.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::proofs::ProofKind;
use crate::units::Bytes;

/// Where the daemon looks for its config file when `--config` is not given.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/snarkd/snarkd.toml";
/// The socket path when neither the config nor a flag names one.
pub const DEFAULT_SOCKET_PATH: &str = "/run/snarkd/snarkd.sock";
/// The gRPC socket's file name, beside `socket.path` unless `socket.grpc_path` says otherwise.
pub const DEFAULT_GRPC_SOCKET_NAME: &str = "cuzk.sock";
/// The parameter directory when neither the config nor `FIL_PROOFS_PARAMETER_CACHE` names one.
pub const DEFAULT_PARAMS_DIR: &str = "/var/tmp/filecoin-proof-parameters";
/// The environment prefix; keys are `SNARKD_<SECTION>__<KEY>`, e.g. `SNARKD_PARAMS__DIR`.
pub const ENV_PREFIX: &str = "SNARKD_";

/// The whole daemon configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub socket: SocketConfig,
    pub access: AccessConfig,
    pub params: ParamsConfig,
    pub proving: ProvingConfig,
    pub queue: QueueConfig,
    pub memory: MemoryConfig,
    pub gpu: GpuConfig,
    pub log: LogConfig,
    pub metrics: MetricsConfig,
    pub daemon: DaemonConfig,
}

/// The Unix socket the daemon serves JSON-RPC on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SocketConfig {
    /// Path of the socket; the parent directory is created.
    pub path: PathBuf,
    /// File mode of the socket, octal.
    pub mode: FileMode,
    /// Group that owns the socket (name or number); empty keeps the daemon's group.
    pub group: String,
    /// Largest request body accepted (a 32 GiB C1 is about 50 MB).
    pub max_request_bytes: Bytes,
    /// Largest response body sent.
    pub max_response_bytes: Bytes,
    /// Concurrent connections; further connections get a JSON-RPC error.
    pub max_connections: u32,
    /// A request's headers, and then its body, must each arrive within this time; a connection
    /// idle this long between requests is closed.
    #[serde(with = "duration_text")]
    pub request_timeout: Duration,
    /// Also serve Curio's cuzk gRPC protocol, on its own socket.
    pub grpc: bool,
    /// Path of the gRPC socket; unset puts `cuzk.sock` beside `path`.
    pub grpc_path: Option<PathBuf>,
}

impl SocketConfig {
    /// Where the gRPC socket goes, or None when `socket.grpc` is off.
    pub fn grpc_socket(&self) -> Option<PathBuf> {
        if !self.grpc {
            return None;
        }
        Some(self.grpc_path.clone().unwrap_or_else(|| self.path.with_file_name(DEFAULT_GRPC_SOCKET_NAME)))
    }
}

/// Who may talk to the socket, checked on every connection by SO_PEERCRED.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessConfig {
    /// Peer uids allowed; root and the daemon's own uid are always allowed.
    pub allow_uids: Vec<u32>,
    /// Peer gids allowed (primary gid of the peer); the socket's group is always allowed.
    pub allow_gids: Vec<u32>,
}

/// Where Groth16 parameter files live and how they are loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParamsConfig {
    /// Directory of `v28-*.params` / `.vk` files.
    pub dir: PathBuf,
    /// Circuits to load at start-up, by cache identifier or as `<kind>:<sector size>`.
    pub preload: Vec<String>,
    /// How parameter points are checked at load: "on_curve" (cheap), "full" (also the subgroup;
    /// slow for large files) or "none" (files verified by digest).
    pub point_check: crate::srs::PointCheck,
}

/// What happens around each proof.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProvingConfig {
    /// Verify every proof against the verifying key before replying.
    pub verify: bool,
    /// Let a request raise its own priority above its kind's default.
    pub allow_priority_raise: bool,
    /// CPU proving workers; 0 means one when no GPU is used and none otherwise.
    pub cpu_workers: u32,
    /// Prove a critical partition between two steps of a running one on the same device.
    pub pause_for_critical: bool,
}

/// Queue limits and result retention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// Jobs waiting or running per proof kind before `queue full`.
    pub porep_c2: u32,
    pub snap_deals: u32,
    pub window_post: u32,
    pub winning_post: u32,
    /// How long a finished job's result stays fetchable with `Snark.Await` / `Snark.Job`.
    #[serde(with = "duration_text")]
    pub job_retention: Duration,
}

impl QueueConfig {
    pub fn limit(&self, kind: ProofKind) -> u32 {
        match kind {
            ProofKind::PorepC2 => self.porep_c2,
            ProofKind::SnapDeals => self.snap_deals,
            ProofKind::WindowPost => self.window_post,
            ProofKind::WinningPost => self.winning_post,
        }
    }
}

/// The memory budget for synthesized witnesses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// An explicit budget for witnesses alone; empty derives it from the cgroup limit (or
    /// MemAvailable) minus `reserve` minus the parameters resident at each moment, however they
    /// were loaded (first use, preload, Preload).
    pub limit: Option<Bytes>,
    /// Kept free for everything that is not a witness (heap, parameters being loaded, the OS).
    pub reserve: Bytes,
    /// Circuits synthesized at once; 0 derives it from the budget and the CPU count.
    pub synthesis_parallelism: u32,
    /// Record each circuit's A and B matrices on its first use and synthesize it without
    /// building them from then on; the records count in the budget like parameters.
    pub precompile: bool,
}

/// Which GPUs to use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpuConfig {
    /// "all", "none", or a list of device ordinals such as [0, 1].
    pub devices: GpuDevices,
    /// The most device memory snarkd's buffers take on each GPU; unset uses what the card has.
    pub memory_limit: Option<Bytes>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuDevices {
    All,
    None,
    List(Vec<u32>),
}

/// Logging destination and verbosity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// "auto" (journal when stderr is the journal), "journal" or "text".
    pub target: LogTarget,
    /// A tracing filter such as "info" or "snarkd=debug".
    pub level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogTarget {
    Auto,
    Journal,
    Text,
}

/// Optional Prometheus endpoint over TCP; off unless configured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Address such as "127.0.0.1:9464", or a bare port, which binds loopback; empty serves
    /// metrics only through `Snark.Metrics`.
    pub listen: String,
}

impl MetricsConfig {
    /// The address to serve on: `listen` as given, or loopback for a bare port; None when off.
    pub fn address(&self) -> Option<Result<std::net::SocketAddr, String>> {
        let text = self.listen.trim();
        if text.is_empty() {
            return None;
        }
        let parsed = match text.trim_start_matches(':').parse::<u16>() {
            Ok(port) => Ok(std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port))),
            Err(_) => text.parse::<std::net::SocketAddr>(),
        };
        Some(parsed.map_err(|_| format!("key `metrics.listen`: {text:?} is not an address such as 127.0.0.1:9464 or a port")))
    }
}

/// Process lifecycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// How long SIGTERM waits for in-flight jobs before failing them.
    #[serde(with = "duration_text")]
    pub drain_timeout: Duration,
}

impl Default for SocketConfig {
    fn default() -> Self {
        SocketConfig {
            path: PathBuf::from(DEFAULT_SOCKET_PATH),
            mode: FileMode(0o660),
            group: String::new(),
            max_request_bytes: Bytes(256 * Bytes::MIB),
            max_response_bytes: Bytes(16 * Bytes::MIB),
            max_connections: 64,
            request_timeout: Duration::from_secs(30),
            grpc: true,
            grpc_path: None,
        }
    }
}

impl Default for AccessConfig {
    fn default() -> Self {
        AccessConfig { allow_uids: vec![0], allow_gids: vec![] }
    }
}

impl Default for ParamsConfig {
    fn default() -> Self {
        let dir = std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_PARAMS_DIR));
        ParamsConfig { dir, preload: vec![], point_check: crate::srs::PointCheck::OnCurve }
    }
}

impl Default for ProvingConfig {
    fn default() -> Self {
        ProvingConfig { verify: true, allow_priority_raise: false, cpu_workers: 0, pause_for_critical: true }
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            porep_c2: 64,
            snap_deals: 64,
            window_post: 16,
            winning_post: 4,
            job_retention: Duration::from_secs(3600),
        }
    }
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { limit: None, reserve: Bytes(4 * Bytes::GIB), synthesis_parallelism: 0, precompile: true }
    }
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig { devices: GpuDevices::All, memory_limit: None }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig { target: LogTarget::Auto, level: "info".into() }
    }
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig { drain_timeout: Duration::from_secs(600) }
    }
}

/// A socket file mode, written in TOML as an octal string such as "0660".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMode(pub u32);

impl Serialize for FileMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:04o}", self.0))
    }
}

impl<'de> Deserialize<'de> for FileMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let mode = u32::from_str_radix(text.trim_start_matches("0o"), 8)
            .map_err(|_| serde::de::Error::custom(format!("{text:?} is not an octal file mode such as \"0660\"")))?;
        if mode > 0o777 {
            return Err(serde::de::Error::custom(format!("{text:?} has bits above 0777")));
        }
        Ok(FileMode(mode))
    }
}

impl Serialize for GpuDevices {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            GpuDevices::All => s.serialize_str("all"),
            GpuDevices::None => s.serialize_str("none"),
            GpuDevices::List(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for GpuDevices {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            List(Vec<u32>),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::List(v) => Ok(GpuDevices::List(v)),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// `all`, `none` or a comma-separated list of ordinals, as `gpu.devices` and `--devices` take it.
impl std::str::FromStr for GpuDevices {
    type Err = String;
    fn from_str(t: &str) -> Result<Self, String> {
        match t.trim() {
            "all" => Ok(GpuDevices::All),
            "none" => Ok(GpuDevices::None),
            other => other
                .split(',')
                .map(|p| p.trim().parse::<u32>())
                .collect::<Result<Vec<_>, _>>()
                .map(GpuDevices::List)
                .map_err(|_| format!("{t:?} is not \"all\", \"none\" or a device list such as 0,1")),
        }
    }
}

impl GpuDevices {
    /// The ordinals to open: `None` for every device. Not called for `GpuDevices::None`.
    pub fn ordinals(&self) -> Option<&[u32]> {
        match self {
            GpuDevices::List(v) => Some(v),
            GpuDevices::All | GpuDevices::None => None,
        }
    }
}

/// Durations in config files are text such as "30s", "10m", "1h" or "250ms".
pub mod duration_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn parse(text: &str) -> Option<Duration> {
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: u64 = num.parse().ok()?;
        Some(match unit.trim() {
            "ms" => Duration::from_millis(n),
            "" | "s" => Duration::from_secs(n),
            "m" | "min" => Duration::from_secs(n * 60),
            "h" => Duration::from_secs(n * 3600),
            _ => return None,
        })
    }

    pub fn format(d: &Duration) -> String {
        let ms = d.as_millis();
        if ms % 3_600_000 == 0 && ms > 0 {
            format!("{}h", ms / 3_600_000)
        } else if ms % 60_000 == 0 && ms > 0 {
            format!("{}m", ms / 60_000)
        } else if ms % 1000 == 0 {
            format!("{}s", ms / 1000)
        } else {
            format!("{ms}ms")
        }
    }

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Secs(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Secs(n) => Ok(Duration::from_secs(n)),
            Raw::Text(t) => {
                parse(&t).ok_or_else(|| serde::de::Error::custom(format!("{t:?} is not a duration such as \"30s\"")))
            }
        }
    }
}

/// Why a configuration was rejected. Rendered for humans; `snarkd` exits 78 on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Where the file layer comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--config PATH`: the file must exist.
    Explicit(PathBuf),
    /// The default path: a missing file means built-in defaults.
    Default(PathBuf),
}

impl ConfigSource {
    pub fn path(&self) -> &Path {
        match self {
            ConfigSource::Explicit(p) | ConfigSource::Default(p) => p,
        }
    }
}

/// Builds the effective configuration from every layer. `overrides` are the command-line flags,
/// as nested `section.key` values. Does no I/O beyond reading the file and the environment.
pub fn load(source: &ConfigSource, overrides: &BTreeMap<String, toml::Value>) -> Result<Config, ConfigError> {
    let path = source.path();
    if let ConfigSource::Explicit(p) = source {
        if !p.is_file() {
            return Err(ConfigError(format!("config file {} does not exist or is not a file", p.display())));
        }
    }
    // A file that exists but cannot be read must be an error, not silently defaults.
    if path.exists() {
        std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read config file {}: {e}", path.display())))?;
    }
    let mut figment = Figment::from(Serialized::defaults(Config::default()))
        .merge(Toml::file(path))
        .merge(Env::prefixed(ENV_PREFIX).filter(|k| k.as_str().contains("__")).split("__"));
    for (key, value) in overrides {
        figment = figment.merge(Serialized::default(key, value));
    }
    extract(figment)
}

/// The configuration a config file's text alone gives over the built-in defaults (no
/// environment, no flags), checked exactly as [`load`] checks a file.
pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
    extract(Figment::from(Serialized::defaults(Config::default())).merge(Toml::string(text)))
}

fn extract(figment: Figment) -> Result<Config, ConfigError> {
    let config: Config = figment.extract().map_err(|e| ConfigError(render_figment_error(e)))?;
    config.validate()?;
    Ok(config)
}

fn render_figment_error(err: figment::Error) -> String {
    err.into_iter()
        .map(|e| {
            let key = if e.path.is_empty() { String::new() } else { format!("key `{}`: ", e.path.join(".")) };
            let source = match &e.metadata {
                Some(md) => match &md.source {
                    Some(src) => format!(" (in {src})"),
                    None => format!(" (from {})", md.name),
                },
                None => String::new(),
            };
            format!("{key}{}{source}", e.kind)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Config {
    /// Checks what serde cannot: ranges and combinations.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut errors = Vec::new();
        if !self.socket.path.is_absolute() {
            errors.push(format!("key `socket.path`: {} is not an absolute path", self.socket.path.display()));
        }
        if let Some(grpc) = &self.socket.grpc_path {
            if !grpc.is_absolute() {
                errors.push(format!("key `socket.grpc_path`: {} is not an absolute path", grpc.display()));
            }
        }
        if self.socket.grpc_socket().as_ref() == Some(&self.socket.path) {
            errors.push(format!("key `socket.grpc_path`: {} is socket.path too; give the gRPC socket its own path", self.socket.path.display()));
        }
        if self.socket.max_connections == 0 {
            errors.push("key `socket.max_connections`: must be at least 1".to_string());
        }
        if self.socket.max_request_bytes.get() < 4096 || self.socket.max_request_bytes.get() > u32::MAX as u64 {
            errors.push("key `socket.max_request_bytes`: must be between 4 KiB and 4 GiB".to_string());
        }
        if self.socket.max_response_bytes.get() < 4096 || self.socket.max_response_bytes.get() > u32::MAX as u64 {
            errors.push("key `socket.max_response_bytes`: must be between 4 KiB and 4 GiB".to_string());
        }
        if self.socket.request_timeout.is_zero() {
            errors.push("key `socket.request_timeout`: must be positive".to_string());
        }
        for kind in ProofKind::ALL {
            if self.queue.limit(kind) == 0 {
                errors.push(format!("key `queue.{}`: must be at least 1", kind.name()));
            }
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            errors.push(format!("key `log.level`: {:?} is not a log filter: {e}", self.log.level));
        }
        if let Some(Err(e)) = self.metrics.address() {
            errors.push(e);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ConfigError(errors.join("; ")))
        }
    }

    /// The effective configuration as TOML, as `snarkd check-config` prints it.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("config serializes to toml")
    }

    /// The keys whose values differ between `self` (running) and `new`, split into those a
    /// reload applies live and those that need a restart.
    pub fn diff(&self, new: &Config) -> ConfigDiff {
        let old = flatten(&toml::Value::try_from(self).expect("config serializes"));
        let new_flat = flatten(&toml::Value::try_from(new).expect("config serializes"));
        let mut diff = ConfigDiff::default();
        for (key, value) in &new_flat {
            if old.get(key) != Some(value) {
                if RESTART_KEYS.iter().any(|p| key == p || key.starts_with(&format!("{p}."))) {
                    diff.restart.push(key.clone());
                } else {
                    diff.live.push(key.clone());
                }
            }
        }
        diff
    }

    /// `new` with every restart-only key taken from `self`: what a reload can actually apply.
    pub fn with_restart_keys_of(&self, new: &Config) -> Config {
        let mut applied = new.clone();
        applied.socket = self.socket.clone();
        applied.gpu = self.gpu.clone();
        applied.params.dir = self.params.dir.clone();
        applied.params.point_check = self.params.point_check;
        applied.proving.cpu_workers = self.proving.cpu_workers;
        applied.memory.synthesis_parallelism = self.memory.synthesis_parallelism;
        applied.log.target = self.log.target;
        applied.metrics = self.metrics.clone();
        applied
    }
}

/// Keys (or sections) that only take effect after a restart. The synthesis pool's threads are
/// started once, so its parallelism is one of them.
pub const RESTART_KEYS: &[&str] = &[
    "socket",
    "gpu",
    "params.dir",
    "params.point_check",
    "proving.cpu_workers",
    "memory.synthesis_parallelism",
    "log.target",
    "metrics",
];

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConfigDiff {
    pub live: Vec<String>,
    pub restart: Vec<String>,
}

/// Every leaf of a TOML table under its dotted key, e.g. `socket.path`.
pub fn flatten(value: &toml::Value) -> BTreeMap<String, toml::Value> {
    fn walk(prefix: &str, v: &toml::Value, out: &mut BTreeMap<String, toml::Value>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&key, v, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.clone());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snarkd.toml");
        std::fs::write(&path, text).unwrap();
        load(&ConfigSource::Explicit(path), &BTreeMap::new())
    }

    #[test]
    fn defaults_validate_and_round_trip() {
        let c = Config::default();
        c.validate().unwrap();
        let back: Config = toml::from_str(&c.to_toml()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn unknown_key_names_the_key_and_file() {
        let err = from_toml("[socket]\npaht = \"/x\"\n").unwrap_err().0;
        assert!(err.contains("paht"), "{err}");
        assert!(err.contains("snarkd.toml"), "{err}");
    }

    #[test]
    fn bad_value_names_the_key() {
        let err = from_toml("[socket]\nmode = \"999\"\n").unwrap_err().0;
        assert!(err.contains("socket.mode"), "{err}");
        let err = from_toml("[queue]\nporep_c2 = 0\n").unwrap_err().0;
        assert!(err.contains("queue.porep_c2"), "{err}");
        let err = from_toml("[daemon]\ndrain_timeout = \"soon\"\n").unwrap_err().0;
        assert!(err.contains("daemon.drain_timeout"), "{err}");
    }

    #[test]
    fn sizes_durations_and_devices_parse() {
        let c = from_toml(
            "[memory]\nlimit = \"64GiB\"\n[daemon]\ndrain_timeout = \"90s\"\n[gpu]\ndevices = [0, 2]\n[socket]\nmode = \"0600\"\n",
        )
        .unwrap();
        assert_eq!(c.memory.limit, Some(Bytes(64 << 30)));
        assert_eq!(c.daemon.drain_timeout, Duration::from_secs(90));
        assert_eq!(c.gpu.devices, GpuDevices::List(vec![0, 2]));
        assert_eq!(c.socket.mode, FileMode(0o600));
    }

    #[test]
    fn flags_override_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snarkd.toml");
        std::fs::write(&path, "[socket]\npath = \"/from/file.sock\"\n").unwrap();
        let mut flags = BTreeMap::new();
        flags.insert("socket.path".to_string(), toml::Value::String("/from/flag.sock".into()));
        let c = load(&ConfigSource::Explicit(path), &flags).unwrap();
        assert_eq!(c.socket.path, PathBuf::from("/from/flag.sock"));
    }

    #[test]
    fn diff_splits_live_and_restart_keys() {
        let old = Config::default();
        let mut new = old.clone();
        new.log.level = "debug".into();
        new.socket.mode = FileMode(0o600);
        let d = old.diff(&new);
        assert_eq!(d.live, vec!["log.level".to_string()]);
        assert_eq!(d.restart, vec!["socket.mode".to_string()]);
        let applied = old.with_restart_keys_of(&new);
        assert_eq!(applied.socket.mode, FileMode(0o660));
        assert_eq!(applied.log.level, "debug");
    }

    #[test]
    fn the_grpc_socket_sits_beside_the_json_rpc_one_and_needs_a_restart() {
        let c = from_toml("[socket]\npath = \"/srv/s/snarkd.sock\"\n").unwrap();
        assert_eq!(c.socket.grpc_socket(), Some(PathBuf::from("/srv/s/cuzk.sock")));
        let c = from_toml("[socket]\ngrpc_path = \"/srv/grpc.sock\"\n").unwrap();
        assert_eq!(c.socket.grpc_socket(), Some(PathBuf::from("/srv/grpc.sock")));
        assert_eq!(from_toml("[socket]\ngrpc = false\n").unwrap().socket.grpc_socket(), None);
        let err = from_toml("[socket]\ngrpc_path = \"cuzk.sock\"\n").unwrap_err().0;
        assert!(err.contains("socket.grpc_path") && err.contains("absolute"), "{err}");
        let err = from_toml("[socket]\ngrpc_path = \"/run/snarkd/snarkd.sock\"\n").unwrap_err().0;
        assert!(err.contains("socket.grpc_path") && err.contains("own path"), "{err}");
        let d = Config::default().diff(&c);
        assert_eq!(d.restart, vec!["socket.grpc_path".to_string()]);
    }

    /// Reload reports a key as applied only when a running daemon really changes it: the
    /// synthesis pool is sized once, while the drain timeout is read when the drain starts.
    #[test]
    fn reload_reports_only_what_it_applies() {
        let old = Config::default();
        let mut new = old.clone();
        new.memory.synthesis_parallelism = old.memory.synthesis_parallelism + 3;
        new.daemon.drain_timeout = old.daemon.drain_timeout * 2;
        let d = old.diff(&new);
        assert_eq!(d.restart, vec!["memory.synthesis_parallelism".to_string()]);
        assert_eq!(d.live, vec!["daemon.drain_timeout".to_string()]);
        let applied = old.with_restart_keys_of(&new);
        assert_eq!(applied.memory.synthesis_parallelism, old.memory.synthesis_parallelism);
        assert_eq!(applied.daemon.drain_timeout, new.daemon.drain_timeout);
    }
}
