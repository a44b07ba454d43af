//! The documentation of every config key, in one table, because `snarkd.toml(5)` and the shipped
//! `/etc/snarkd/snarkd.toml` are both generated from it and must not drift from the schema in
//! `config.rs`. Defaults are never written here: they come from `Config::default()` at run time.
//! The tests check that every key of the default config is documented and vice versa.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{self, Config, DEFAULT_PARAMS_DIR, ENV_PREFIX, RESTART_KEYS};
use crate::units::Bytes;

/// One `[section]` of the file.
pub struct Section {
    pub name: &'static str,
    pub doc: &'static str,
}

/// One key, as `section.key`.
pub struct Key {
    pub key: &'static str,
    pub doc: &'static str,
    pub format: Format,
}

/// How a key's default is written.
pub enum Format {
    /// As serde writes it.
    Plain,
    /// A byte count, written as text such as "256MiB" when it is a whole number of units.
    Size,
    /// No default (the key is absent unless set); `example` is a value to show instead.
    Unset { example: &'static str },
}

pub const SECTIONS: &[Section] = &[
    Section { name: "socket", doc: "The Unix socket the daemon serves JSON-RPC on (HTTP and WebSocket on the same socket), and the one it serves Curio's cuzk gRPC protocol on. Both get the same mode, group and allow-list." },
    Section { name: "access", doc: "Who may call, checked on every connection by the peer's credentials (SO_PEERCRED). Root, the daemon's own uid and members of the socket's group are always allowed." },
    Section { name: "params", doc: "Where the Groth16 parameter files (the SRS) live and how they are loaded." },
    Section { name: "proving", doc: "What happens around each proof." },
    Section { name: "queue", doc: "Per proof kind, how many jobs may wait or run before Submit answers queue_full, and how long results are kept." },
    Section { name: "memory", doc: "The memory budget for synthesized witnesses: a reservation is taken before synthesis and released as the GPU stage frees each buffer, so no witness exists outside the budget." },
    Section { name: "gpu", doc: "Which GPUs to prove on." },
    Section { name: "log", doc: "Logging destination and verbosity." },
    Section { name: "metrics", doc: "An optional Prometheus endpoint over TCP." },
    Section { name: "daemon", doc: "Process lifecycle." },
];

pub const KEYS: &[Key] = &[
    Key { key: "socket.path", format: Format::Plain, doc: "Path of the socket; the parent directory is created. The packaged unit expects /run/snarkd/snarkd.sock: when you move it, set SNARKD_SOCKET to the same path in a unit drop-in so that systemctl reload (snarkctl reload) still reaches the daemon." },
    Key { key: "socket.mode", format: Format::Plain, doc: "File mode of the socket, as an octal string. 0660 lets the owner and the socket's group connect." },
    Key { key: "socket.group", format: Format::Plain, doc: "Group that owns the socket, by name or number; empty keeps the daemon's group (snarkd under the packaged unit). Members of this group may connect and call." },
    Key { key: "socket.max_request_bytes", format: Format::Size, doc: "Largest request body accepted. A 32 GiB PoRep C1 output is about 50 MB, more once base64-encoded; larger requests get a JSON-RPC error." },
    Key { key: "socket.max_response_bytes", format: Format::Size, doc: "Largest response body sent." },
    Key { key: "socket.max_connections", format: Format::Plain, doc: "Concurrent connections; further connections get a JSON-RPC error instead of an HTTP failure. The gRPC socket has its own count of the same size and closes connections beyond it." },
    Key { key: "socket.request_timeout", format: Format::Plain, doc: "A request's headers, and then its body, must each arrive within this time, and a connection idle this long between requests is closed; a stalled (slow-loris) client never reaches the engine." },
    Key { key: "socket.grpc", format: Format::Plain, doc: "Also serve Curio's cuzk gRPC protocol (ProvingEngine: Prove, SubmitProof, AwaitProof, GetStatus, ...) on socket.grpc_path, so Curio's [Cuzk] Address = \"unix:///run/snarkd/cuzk.sock\" reaches this daemon. Messages up to 256 MiB are accepted either way. false serves JSON-RPC only." },
    Key { key: "socket.grpc_path", format: Format::Unset { example: "\"/run/snarkd/cuzk.sock\"" }, doc: "Path of the gRPC socket. Unset (the default) puts cuzk.sock in the directory of socket.path, /run/snarkd/cuzk.sock under the packaged unit. The daemon binds it itself, also when systemd passes the JSON-RPC socket." },
    Key { key: "access.allow_uids", format: Format::Plain, doc: "Peer uids allowed to call, e.g. the uid Curio or Lotus runs as. Root and the daemon's own uid are always allowed." },
    Key { key: "access.allow_gids", format: Format::Plain, doc: "Peer gids allowed to call (primary or supplementary). The socket's group is always allowed." },
    Key { key: "params.dir", format: Format::Plain, doc: "Directory of the v28-*.params and .vk files. The built-in default is $FIL_PROOFS_PARAMETER_CACHE when that is set, else /var/tmp/filecoin-proof-parameters, which the packaged unit binds read-only into its private /var/tmp. Another directory is readable under the unit's ProtectSystem=strict as long as it is not under /home or /tmp." },
    Key { key: "params.preload", format: Format::Plain, doc: "Circuits to load at start-up, before READY=1, by cache identifier or as <kind>:<sector size> such as \"porep_c2:32GiB\". Resident parameters count against the memory budget; a circuit not preloaded is loaded on its first request." },
    Key { key: "params.point_check", format: Format::Plain, doc: "How parameter points are checked when a file is loaded: \"on_curve\" (cheap; catches corrupted coordinates), \"full\" (also the subgroup check; tens of minutes for a 32 GiB PoRep file) or \"none\" (for files verified by digest, e.g. by paramfetch). Every proof is verified before it is returned whatever this says." },
    Key { key: "proving.verify", format: Format::Plain, doc: "Verify every proof against the verifying key before replying; a proof that fails is never returned (verification_failed)." },
    Key { key: "proving.cpu_workers", format: Format::Plain, doc: "CPU proving workers. 0 runs one CPU worker when no GPU is used and none next to GPUs; more than one only helps on hosts with many cores and no GPU." },
    Key { key: "proving.allow_priority_raise", format: Format::Plain, doc: "Let a request raise its own priority above its kind's default (winning > window > porep/snap > low). Lowering is always allowed." },
    Key { key: "proving.pause_for_critical", format: Format::Plain, doc: "Prove a WinningPoSt partition between two steps of the partition a GPU or the CPU backend is proving (on a GPU while its h runs, and after its H, L, A or B_G1 stage; on the CPU after each of h, H, L, A, B_G1) when it fits in the device memory left beside it, so it waits for the step in progress (a WinningPoSt beside a 32 GiB PoRep on an H100 took at most 0.59 s, ten measured) instead of the whole partition. Read at each step, so a reload applies to the partition being proved. false: it waits for the running partition to end." },
    Key { key: "queue.porep_c2", format: Format::Plain, doc: "PoRep C2 jobs waiting or running." },
    Key { key: "queue.snap_deals", format: Format::Plain, doc: "SnapDeals (PRU2) jobs waiting or running." },
    Key { key: "queue.window_post", format: Format::Plain, doc: "WindowPoSt partition jobs waiting or running." },
    Key { key: "queue.winning_post", format: Format::Plain, doc: "WinningPoSt jobs waiting or running." },
    Key { key: "queue.job_retention", format: Format::Plain, doc: "How long a finished job's result stays fetchable with Snark.Await and Snark.Job, so a client that lost its connection can reattach." },
    Key { key: "memory.limit", format: Format::Unset { example: "\"64GiB\"" }, doc: "An explicit witness budget. Unset (the default) derives it: the service's memory limit (cgroup memory.max/memory.high, else MemAvailable) minus resident parameters minus memory.reserve. Prefer setting MemoryMax= on the unit, so the kernel and the daemon agree." },
    Key { key: "memory.reserve", format: Format::Size, doc: "Kept free of witnesses for everything else: heap, parameters being loaded, the OS." },
    Key { key: "memory.synthesis_parallelism", format: Format::Plain, doc: "Circuits synthesized at once; 0 derives it from the budget and the CPU count (honouring the unit's CPU quota)." },
    Key { key: "memory.precompile", format: Format::Plain, doc: "Record each circuit's A and B matrices on a thread of its own when the circuit is first proved (a 32 GiB PoRep's take a few minutes and some GiB, counted in the budget like parameters), then synthesize its partitions without building them; false frees the records on reload." },
    Key { key: "gpu.devices", format: Format::Plain, doc: "\"all\", \"none\" (CPU proving only), or a list of CUDA device ordinals such as [0, 1]." },
    Key { key: "gpu.memory_limit", format: Format::Unset { example: "\"40GiB\"" }, doc: "The most device memory snarkd's buffers take on each GPU, for a card shared with another process (the CUDA context's few hundred MiB come on top). Unset uses the whole card. A circuit's parameters that do not fit beside a partition's work are streamed from host memory by each proof instead of held on the card: slower, but a 32 GiB PoRep proves on a card of 24-48 GiB." },
    Key { key: "log.target", format: Format::Plain, doc: "\"auto\" (native journal entries when stderr is the journal, text otherwise), \"journal\" or \"text\"." },
    Key { key: "log.level", format: Format::Plain, doc: "A tracing filter such as \"info\", \"debug\" or \"snarkd=debug,jsonrpsee=warn\"." },
    Key { key: "metrics.listen", format: Format::Plain, doc: "TCP address such as \"127.0.0.1:9464\" to serve Prometheus metrics on; a bare port such as \"9464\" binds loopback only; empty serves them only through Snark.Metrics (snarkctl metrics)." },
    Key { key: "daemon.drain_timeout", format: Format::Plain, doc: "How long SIGTERM waits for in-flight jobs before failing them (clients get cancelled and should resubmit). The daemon extends systemd's stop timeout while it drains, so a longer value needs no unit change." },
];

/// Advice per machine class, shown in the config file and the man page.
pub const SIZING: &[(&str, &str)] = &[
    ("How the budget works", "A 32 GiB PoRep C2 has 10 partitions, and each needs about 16 GiB of witness from the start of its synthesis until its GPU work frees it. The budget (memory.limit, or the service's memory limit minus resident parameters minus memory.reserve) divided by the witness size of one partition is the number of partitions in flight. Keep it at least twice the number of GPUs, or GPUs wait for synthesis. Resident 32 GiB PoRep parameters take tens of GiB of RAM."),
    ("PoSt host: 64-128 GiB RAM, 1 GPU with 8-16 GiB", "Preload the PoSt circuits (params.preload = [\"window_post:32GiB\", \"winning_post:32GiB\"]) so a deadline never waits for a parameter load, and keep sealing work small (queue.porep_c2 = 2, queue.snap_deals = 2) so it cannot crowd out WindowPoSt."),
    ("Sealing host: 256 GiB RAM, 1-2 GPUs with 16-24 GiB", "The defaults fit. Preload \"porep_c2:32GiB\" so the first C2 after a restart does not pay for the load, and set MemoryMax= on the unit (systemctl edit snarkd) a little below the RAM left after other services."),
    ("Large sealing host: 512 GiB-1 TiB RAM, 4-8 GPUs with 24-80 GiB", "Leave memory.limit unset and memory.synthesis_parallelism at 0 so both follow the memory limit and the CPU count, and raise memory.reserve to \"16GiB\". A GPU proves one partition at a time, so GPU memory decides which sector sizes a card can take, not throughput: list only the cards that fit your sector size in gpu.devices. More hosts scale out through Curio's task scheduler, one snarkd per host."),
];

/// The built-in defaults as documented: `params.dir` without the environment's say.
pub fn defaults() -> Config {
    let mut c = Config::default();
    c.params.dir = PathBuf::from(DEFAULT_PARAMS_DIR);
    c
}

/// Every key of the default config with its value, by dotted key.
pub fn default_values() -> BTreeMap<String, toml::Value> {
    config::flatten(&toml::Value::try_from(defaults()).expect("config serializes"))
}

impl Key {
    pub fn section(&self) -> &'static str {
        self.key.split_once('.').map(|(s, _)| s).unwrap_or(self.key)
    }

    pub fn name(&self) -> &'static str {
        self.key.split_once('.').map(|(_, k)| k).unwrap_or(self.key)
    }

    /// The environment variable that sets this key.
    pub fn env(&self) -> String {
        format!("{ENV_PREFIX}{}__{}", self.section(), self.name()).to_ascii_uppercase()
    }

    /// Whether a reload leaves this key alone until the next restart.
    pub fn needs_restart(&self) -> bool {
        RESTART_KEYS.iter().any(|p| self.key == *p || self.key.starts_with(&format!("{p}.")))
    }

    /// The default as TOML value text, or `None` when the key has no default.
    pub fn default_text(&self, values: &BTreeMap<String, toml::Value>) -> Option<String> {
        let value = values.get(self.key)?;
        match (&self.format, value) {
            (Format::Size, toml::Value::Integer(n)) => Some(size_text(*n as u64)),
            _ => Some(value.to_string()),
        }
    }

    /// The line shown in the example file and the man page: the default, or an example.
    pub fn assignment(&self, values: &BTreeMap<String, toml::Value>) -> String {
        let value = match (&self.format, self.default_text(values)) {
            (_, Some(text)) => text,
            (Format::Unset { example }, None) => example.to_string(),
            (_, None) => panic!("{} has no default and no example", self.key),
        };
        format!("{} = {value}", self.name())
    }
}

fn size_text(n: u64) -> String {
    for (unit, name) in [(Bytes::GIB, "GiB"), (Bytes::MIB, "MiB"), (Bytes::KIB, "KiB")] {
        if n >= unit && n % unit == 0 {
            return format!("\"{}{name}\"", n / unit);
        }
    }
    n.to_string()
}

pub fn keys_of(section: &str) -> impl Iterator<Item = &'static Key> + '_ {
    KEYS.iter().filter(move |k| k.section() == section)
}

/// Word-wraps `text` into lines of at most `width` characters, each starting with `prefix`.
fn wrap(text: &str, prefix: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::from(prefix);
    for word in text.split_whitespace() {
        if line.len() > prefix.len() && line.len() + 1 + word.len() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(prefix);
        }
        if line.len() > prefix.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The shipped `/etc/snarkd/snarkd.toml`: every key commented out at its default.
pub fn example_toml() -> String {
    let values = default_values();
    let mut out = String::new();
    out.push_str(HEADER);
    for (class, advice) in SIZING {
        out.push_str(&format!("#\n# {class}:\n"));
        out.push_str(&wrap(advice, "#  ", 96));
    }
    for section in SECTIONS {
        out.push_str(&format!("\n[{}]\n", section.name));
        out.push_str(&wrap(section.doc, "# ", 96));
        for key in keys_of(section.name) {
            out.push('\n');
            let restart = if key.needs_restart() { " Needs a restart." } else { "" };
            let unset = if key.default_text(&values).is_none() { " Unset by default." } else { "" };
            out.push_str(&wrap(&format!("{}{restart}{unset} Environment: {}.", key.doc, key.env()), "# ", 96));
            out.push_str(&format!("#{}\n", key.assignment(&values)));
        }
    }
    out
}

const HEADER: &str = "\
# /etc/snarkd/snarkd.toml: the configuration of snarkd, the Filecoin SNARK proving daemon.
#
# Generated from the config schema (src/config_doc.rs in the snarkd source); the test suite
# checks that this file matches it. Every key is listed, commented out, at its built-in
# default: uncomment a line to change it. Reference: man 5 snarkd.toml
#
# Layers, later wins: built-in defaults < this file < SNARKD_<SECTION>__<KEY> environment
# variables (e.g. SNARKD_QUEUE__POREP_C2=8) < command-line flags. Unknown keys are errors.
# Sizes are bytes or text such as \"4GiB\"; durations are text such as \"30s\", \"10m\", \"1h\".
#
# Check a change:  snarkd --config /etc/snarkd/snarkd.toml check-config  (exit 78: rejected)
# Apply it:        systemctl reload snarkd  (keys that need a restart say so)
#
# Sizing by machine class (rules of thumb; watch snarkctl status under real load)
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommented_example_is_the_default_config() {
        let values = default_values();
        let unset: Vec<String> = KEYS
            .iter()
            .filter(|k| k.default_text(&values).is_none())
            .map(|k| format!("#{}", k.assignment(&values)))
            .collect();
        let text: String = example_toml()
            .lines()
            .filter(|l| !unset.iter().any(|u| u == l))
            .map(|l| match l.strip_prefix('#') {
                Some(rest) if rest.contains(" = ") && !rest.starts_with(' ') => format!("{rest}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        let parsed: Config = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(parsed, defaults());
    }

    #[test]
    fn sizes_read_as_text() {
        assert_eq!(size_text(256 << 20), "\"256MiB\"");
        assert_eq!(size_text(4 << 30), "\"4GiB\"");
        assert_eq!(size_text(1000), "1000");
    }
}
