//! Command-line definitions of both binaries, in one place, because they are the single source
//! for `--help`, the man pages and the config overrides (STYLE.md: one source of truth per flag).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{ConfigSource, DEFAULT_CONFIG_PATH};

/// Exit codes, decided in one place.
pub mod exit {
    pub const OK: i32 = 0;
    /// Any failure that is not a config error.
    pub const FAILURE: i32 = 1;
    /// EX_CONFIG: the configuration was rejected. systemd's RestartPreventExitStatus=78 stops a
    /// restart loop on it.
    pub const CONFIG: i32 = 78;
}

/// snarkd: Filecoin Groth16 proving daemon for Lotus and Curio.
///
/// Serves JSON-RPC (namespace Snark) on a Unix socket, proves PoRep C2, WindowPoSt, WinningPoSt
/// and SnapDeals, verifies every proof before replying, and follows the systemd notify protocol.
#[derive(Debug, Parser)]
#[command(name = "snarkd", version, about, long_about = None)]
pub struct SnarkdCli {
    /// Config file (default /etc/snarkd/snarkd.toml; missing is fine unless given here)
    #[arg(long, short = 'c', global = true, env = "SNARKD_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: ConfigFlags,
    #[command(subcommand)]
    pub command: Option<SnarkdCommand>,
}

#[derive(Debug, Subcommand)]
pub enum SnarkdCommand {
    /// Run the daemon (the default)
    Run,
    /// Validate the configuration and print the effective config as TOML
    CheckConfig,
}

/// Flags that override config keys; each names the key it sets.
#[derive(Debug, Args, Default)]
pub struct ConfigFlags {
    /// Socket path (socket.path)
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Parameter directory (params.dir)
    #[arg(long, global = true, value_name = "DIR")]
    pub params_dir: Option<PathBuf>,
    /// Log filter such as info or snarkd=debug (log.level)
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Log destination: auto, journal or text (log.target)
    #[arg(long, global = true, value_name = "TARGET")]
    pub log_target: Option<String>,
    /// GPUs to use: all, none, or a list such as 0,1 (gpu.devices)
    #[arg(long, global = true, value_name = "DEVICES")]
    pub gpu_devices: Option<String>,
    /// Explicit witness memory budget such as 64GiB (memory.limit)
    #[arg(long, global = true, value_name = "SIZE")]
    pub memory_limit: Option<String>,
    /// Disable verification of proofs before replying (proving.verify = false)
    #[arg(long, global = true)]
    pub no_verify: bool,
}

impl ConfigFlags {
    /// The flags as `section.key` overrides for the config loader.
    pub fn to_overrides(&self) -> BTreeMap<String, toml::Value> {
        use toml::Value::String as S;
        let mut m = BTreeMap::new();
        let path = |p: &PathBuf| S(p.display().to_string());
        if let Some(v) = &self.socket {
            m.insert("socket.path".into(), path(v));
        }
        if let Some(v) = &self.params_dir {
            m.insert("params.dir".into(), path(v));
        }
        if let Some(v) = &self.log_level {
            m.insert("log.level".into(), S(v.clone()));
        }
        if let Some(v) = &self.log_target {
            m.insert("log.target".into(), S(v.clone()));
        }
        if let Some(v) = &self.gpu_devices {
            m.insert("gpu.devices".into(), S(v.clone()));
        }
        if let Some(v) = &self.memory_limit {
            m.insert("memory.limit".into(), S(v.clone()));
        }
        if self.no_verify {
            m.insert("proving.verify".into(), toml::Value::Boolean(false));
        }
        m
    }
}

impl SnarkdCli {
    pub fn config_source(&self) -> ConfigSource {
        match &self.config {
            Some(p) => ConfigSource::Explicit(p.clone()),
            None => ConfigSource::Default(PathBuf::from(DEFAULT_CONFIG_PATH)),
        }
    }
}

/// snarkctl: client and tools for snarkd.
///
/// Talks JSON-RPC to the daemon's Unix socket, and makes test parameters and test data,
/// verifies proofs with filecoin-proofs-api, runs the demo and the benchmarks.
#[derive(Debug, Parser)]
#[command(name = "snarkctl", version, about, long_about = None)]
pub struct SnarkctlCli {
    /// Daemon socket
    #[arg(long, global = true, env = "SNARKD_SOCKET", default_value = crate::config::DEFAULT_SOCKET_PATH, value_name = "PATH")]
    pub socket: PathBuf,
    /// Print results as JSON
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: CtlCommand,
}

#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// Show the daemon's version and whether CUDA is built in
    Version,
    /// Show devices, queues, memory budget and resident parameters
    Status,
    /// Print the daemon's Prometheus metrics
    Metrics,
    /// Make the daemon re-read its config; fails with the reason when the config is rejected
    Reload,
    /// Submit a proof request and print the job
    Submit(RequestArgs),
    /// Wait for a job and write its proof
    Await {
        /// Job id from submit
        job_id: String,
        /// Give up waiting after this many milliseconds (the job keeps running)
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// Write the raw proof bytes here
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
    },
    /// Submit a proof request and wait for its proof
    Prove {
        #[command(flatten)]
        request: RequestArgs,
        /// Give up waiting after this many milliseconds (the job keeps running)
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// Write the raw proof bytes here
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
    },
    /// Cancel a job
    Cancel { job_id: String },
    /// Show a job's state, stage, partitions and timings
    Job { job_id: String },
    /// Load a circuit's parameters into the daemon and keep them resident
    Preload { circuit: String },
    /// Drop a circuit's resident parameters
    Evict { circuit: String },
    /// Make test parameters, under the production file names
    #[command(subcommand)]
    Params(ParamsCommand),
    /// Seal a real sector offline and write every proof kind's inputs, a manifest and the fuzz
    /// seed corpus (fuzz-seeds/)
    Testdata {
        /// Sector size: 2KiB (8MiB, 512MiB, 32GiB and 64GiB also seal, slowly)
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        #[arg(long)]
        out: PathBuf,
        /// Parameter directory, used for the verifying keys
        #[arg(long, env = "SNARKD_TEST_PARAMS", default_value = "/var/tmp/snarkd-test-params")]
        params_dir: PathBuf,
    },
    /// Check a proof file with filecoin-proofs-api's verifier against a testdata manifest
    Verify {
        /// Directory holding manifest.json (from `snarkctl testdata`)
        #[arg(long)]
        testdata: PathBuf,
        /// porep_c2, window_post, winning_post or snap_deals
        #[arg(long)]
        kind: String,
        /// Raw proof bytes
        #[arg(long)]
        proof: PathBuf,
        #[arg(long, env = "SNARKD_TEST_PARAMS", default_value = "/var/tmp/snarkd-test-params")]
        params_dir: PathBuf,
    },
    /// Make parameters and test data if missing, start a daemon on a temporary socket, prove all
    /// four kinds through it, verify each, and print the timings per stage
    Demo {
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        #[arg(long, env = "SNARKD_TEST_PARAMS", default_value = "/var/tmp/snarkd-test-params")]
        params_dir: PathBuf,
    },
    /// Check every GPU kernel against the CPU reference on fresh random inputs and edge cases
    Selftest {
        /// Run the GPU self-test (the only one there is; required so the intent is explicit)
        #[arg(long)]
        gpu: bool,
        /// GPUs to test: all or a list such as 0,1
        #[arg(long, default_value = "all")]
        devices: crate::config::GpuDevices,
    },
    /// Benchmarks; each compares implementations in the same run
    Bench {
        /// porep, snap, window or winning: snarkd's provers (cpu, and each GPU) against
        /// filecoin-proofs-api's on real test data; msm, ntt or prove: GPU kernels, medians of
        /// warm runs timed with device events; soak: concurrent clients against a daemon on a
        /// temporary socket, checking that nothing is lost and nothing leaks
        kind: String,
        /// For soak: concurrent clients
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// For soak: how long clients keep sending, such as 90s or 30m
        #[arg(long, default_value = "5m", value_parser = duration_arg)]
        duration: std::time::Duration,
        /// For soak: every n-th request of a client is malformed (0: none)
        #[arg(long, default_value_t = 4)]
        malformed_every: usize,
        /// For msm/ntt: log2 of the size (msm: points, ntt: domain)
        #[arg(long, default_value_t = 24)]
        log_size: u32,
        /// For prove: the synthetic partition shape (porep-32g: domain 2^27)
        #[arg(long, default_value = "porep-32g")]
        shape: String,
        /// For prove: the witness scalars of the L, A and B MSMs. witness: as measured in real
        /// PoRep and SnapDeals witnesses (51 % zeros, 47 % ones, 1.7 % uniform); filecoin: a
        /// pessimistic 50 % / 40 % / 10 %; random: uniform (as in WindowPoSt's Poseidon-heavy witness)
        #[arg(long, default_value = "witness")]
        mix: String,
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Timed runs of each prover (after one warm-up)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[arg(long, env = "SNARKD_TEST_PARAMS", default_value = "/var/tmp/snarkd-test-params")]
        params_dir: PathBuf,
    },
    /// Write the man pages snarkd(8), snarkctl(1) and snarkd.toml(5), generated from this code
    Man {
        /// Directory to write the pages into
        #[arg(long, default_value = "man")]
        out: PathBuf,
    },
}

fn duration_arg(text: &str) -> Result<std::time::Duration, String> {
    crate::config::duration_text::parse(text).ok_or_else(|| format!("{text:?} is not a duration such as 90s, 30m or 1h"))
}

/// A proof request: a JSON request file, a raw C1 output, or Curio's C1 wrapper file.
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// JSON file ("-" for stdin): a request object with "kind", Curio's
    /// {"SectorNum","Phase1Out","SectorSize"} wrapper, or raw SealCommitPhase1Output JSON
    pub file: PathBuf,
    /// Miner actor id (for C1 files)
    #[arg(long)]
    pub miner_id: Option<u64>,
    /// Sector number (for raw C1 files; Curio's wrapper carries it)
    #[arg(long)]
    pub sector_number: Option<u64>,
    /// Idempotency key: a resubmission returns the existing job
    #[arg(long)]
    pub request_id: Option<String>,
    /// Lower (or, when granted by config, raise) the job's priority: critical, high, normal, low
    #[arg(long)]
    pub priority: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ParamsCommand {
    /// Generate insecure test parameters (.params, .vk, .meta) for small sectors
    Generate {
        /// Sector size, e.g. 2KiB
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Comma-separated kinds: porep, snap, window, winning
        #[arg(long, default_value = "porep,snap,window,winning", value_delimiter = ',')]
        kinds: Vec<String>,
        /// Output directory
        #[arg(long, env = "SNARKD_TEST_PARAMS", default_value = "/var/tmp/snarkd-test-params")]
        dir: PathBuf,
    },
}
