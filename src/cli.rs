//! Command-line definitions of both binaries, in one place, because they are the single source
//! for `--help`, the man pages and the config overrides (STYLE.md: one source of truth per flag).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{ConfigSource, DEFAULT_CONFIG_PATH};
use crate::proofs::ProofKind;

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
    /// seed corpus (fuzz-seeds/); or, with --synthetic, write requests of the real shape at any
    /// size in seconds, without sealing, for benchmarks
    Testdata {
        /// Sector size: 2KiB (8MiB, 512MiB, 32GiB and 64GiB also seal, slowly; --synthetic makes
        /// any of them in seconds)
        #[arg(long, default_value = "2KiB", value_parser = sector_size_arg)]
        sector_size: u64,
        /// Synthetic requests: real shapes and constraint counts, random data, commitments made
        /// up so the daemon's checks pass; they attest to no sector and are for benchmarks only
        #[arg(long)]
        synthetic: bool,
        /// With --synthetic: the kinds to write
        #[arg(long, value_enum, default_value = "porep,snap,window,winning", value_delimiter = ',', requires = "synthetic")]
        kinds: Vec<KindArg>,
        /// With --synthetic: the seed of every random value (same seed, same bytes)
        #[arg(long, default_value_t = 1, requires = "synthetic")]
        seed: u64,
        /// Output directory [default: testdata-<bytes> or synthetic-<bytes> in the parameter directory]
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// Check a proof file with filecoin-proofs-api's verifier against a testdata manifest
    Verify {
        /// Directory holding manifest.json (from `snarkctl testdata`)
        #[arg(long)]
        testdata: PathBuf,
        #[arg(long, value_enum)]
        kind: KindArg,
        /// Raw proof bytes
        #[arg(long)]
        proof: PathBuf,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// Make parameters and test data if missing, start a daemon on a temporary socket, prove all
    /// four kinds through it, verify each, and print the timings per stage
    Demo {
        #[arg(long, default_value = "2KiB", value_parser = sector_size_arg)]
        sector_size: u64,
        #[command(flatten)]
        params: ParamsDir,
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
    /// Benchmarks; each compares implementations or versions in the same run
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Write the man pages snarkd(8), snarkctl(1) and snarkd.toml(5), generated from this code
    Man {
        /// Directory to write the pages into
        #[arg(long, default_value = "man")]
        out: PathBuf,
    },
}

/// Where the developer tools keep parameters: one definition for every subcommand that reads or
/// generates them (2 KiB test parameters are generated there when missing).
#[derive(Debug, Clone, Args)]
pub struct ParamsDir {
    /// Parameter directory
    #[arg(long = "params-dir", alias = "dir", env = "SNARKD_TEST_PARAMS", default_value = DEFAULT_TEST_PARAMS, value_name = "DIR")]
    pub path: PathBuf,
}

/// The default of [`ParamsDir`]: outside any checkout, so sessions and CI runs share it.
pub const DEFAULT_TEST_PARAMS: &str = "/var/tmp/snarkd-test-params";

/// A proof kind on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    #[value(alias = "porep_c2")]
    Porep,
    #[value(alias = "snap_deals")]
    Snap,
    #[value(alias = "window_post")]
    Window,
    #[value(alias = "winning_post")]
    Winning,
}

impl From<KindArg> for ProofKind {
    fn from(k: KindArg) -> ProofKind {
        match k {
            KindArg::Porep => ProofKind::PorepC2,
            KindArg::Snap => ProofKind::SnapDeals,
            KindArg::Window => ProofKind::WindowPost,
            KindArg::Winning => ProofKind::WinningPost,
        }
    }
}

/// Scalars of the L, A and B MSMs in the GPU benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MixArg {
    /// As measured in real PoRep and SnapDeals witnesses: 51 % zeros, 47 % ones, 1.7 % uniform
    Witness,
    /// A pessimistic 50 % zeros, 40 % ones, 10 % uniform
    Filecoin,
    /// Uniform, as in WindowPoSt's Poseidon-heavy witness
    Random,
}

impl From<MixArg> for crate::gpu::Distribution {
    fn from(m: MixArg) -> Self {
        match m {
            MixArg::Witness => Self::Witness,
            MixArg::Filecoin => Self::Filecoin,
            MixArg::Random => Self::Random,
        }
    }
}

/// A partition shape for `bench partition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PartitionShapeArg {
    /// One 32 GiB PoRep partition: 130,278,541 constraints, domain 2^27
    #[value(name = "porep-32g")]
    Porep32g,
}

impl From<PartitionShapeArg> for crate::gpu::Shape {
    fn from(s: PartitionShapeArg) -> Self {
        match s {
            PartitionShapeArg::Porep32g => crate::gpu::POREP_32G,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// snarkd's provers (CPU, and each GPU) against filecoin-proofs-api's on real test data:
    /// synthesis + prove + verify with parameters resident, medians and ratios
    Proof {
        #[arg(value_enum)]
        kind: KindArg,
        #[arg(long, default_value = "2KiB", value_parser = sector_size_arg)]
        sector_size: u64,
        /// Timed runs of each prover (after one warm-up)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// GPU MSM kernels: random, Filecoin-mix and witness-mix scalars, and G2; medians of warm
    /// runs timed with device events, pinned and pageable uploads side by side
    Msm {
        /// log2 of the number of points
        #[arg(long, default_value_t = 24)]
        log_size: u32,
    },
    /// GPU NTT and h (seven transforms and the pointwise step)
    Ntt {
        /// log2 of the domain
        #[arg(long, default_value_t = 24)]
        log_size: u32,
    },
    /// One partition's whole device work (uploads, h, the H, L, A, B_G1 and B_G2 MSMs) on
    /// synthetic data of a real shape, step by step, alone and back to back
    Partition {
        #[arg(long, value_enum, default_value = "porep-32g")]
        shape: PartitionShapeArg,
        /// The witness scalars of the L, A and B MSMs
        #[arg(long, value_enum, default_value = "witness")]
        mix: MixArg,
    },
    /// Concurrent clients against a daemon on a temporary socket: every proof must verify, every
    /// bad request get its code, and memory, descriptors and threads return to baseline
    Soak {
        /// Concurrent clients
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// How long clients keep sending, such as 90s or 30m
        #[arg(long, default_value = "5m", value_parser = duration_arg)]
        duration: std::time::Duration,
        /// Every n-th request of a client is malformed (0: none)
        #[arg(long, default_value_t = 4)]
        malformed_every: usize,
        #[arg(long, default_value = "2KiB", value_parser = sector_size_arg)]
        sector_size: u64,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// The real engine (scheduler, budget, synthesis pool, device workers, verification)
    /// in-process on synthetic inputs of a full-size shape and bench-only parameters (random
    /// points, in memory only, so every proof ends in verification_failed): one proof alone, then
    /// --proofs together with a WinningPoSt submitted mid-run; seconds per proof, synthesis and
    /// prove time per partition, device busy %, peak RSS against the budget
    Pipeline {
        /// Kind and sector size: porep-32g, snap-32g, window-32g, winning-32g, porep-64g, ...
        #[arg(long, value_parser = bench_shape_arg)]
        shape: BenchShape,
        /// Proofs submitted together for the sustained figure
        #[arg(long, default_value_t = 4)]
        proofs: usize,
        /// The memory limit the budget is derived from, as a cgroup's memory.max would set it
        #[arg(long, default_value = "120GiB", value_parser = sector_size_arg)]
        memory_limit: u64,
        /// Prove on the CPU backend instead of the GPUs
        #[arg(long)]
        cpu: bool,
        /// Use each GPU as a card of this size (gpu.memory_limit), e.g. 40GiB: bases that do not
        /// fit beside a partition are streamed from host memory
        #[arg(long, value_parser = sector_size_arg)]
        gpu_memory_limit: Option<u64>,
        /// Skip the WinningPoSts submitted during the sustained run (three, one after another,
        /// with proving.pause_for_critical on, off and on)
        #[arg(long)]
        no_winning: bool,
        /// Synthesize in full, without recording the circuits first (memory.precompile = false)
        #[arg(long)]
        no_precompile: bool,
        /// Synthetic inputs [default: synthetic-<bytes> in the parameter directory, made if missing]
        #[arg(long)]
        inputs: Option<PathBuf>,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// One partition's synthesis, sequential against parallel (forks of the partition on every
    /// core), on synthetic inputs of a shape; checks the two witnesses are byte-identical
    Synthesis {
        /// Kind and sector size: porep-32g, snap-2k, ...
        #[arg(long, value_parser = bench_shape_arg)]
        shape: BenchShape,
        /// The partition to synthesize
        #[arg(long, default_value_t = 0)]
        partition: usize,
        /// Timed runs of each
        #[arg(long, default_value_t = 2)]
        runs: usize,
        /// Synthetic inputs [default: synthetic-<bytes> in the parameter directory, made if missing]
        #[arg(long)]
        inputs: Option<PathBuf>,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// The same proof through JSON-RPC Prove and gRPC (cuzk) Prove, alternately on one daemon:
    /// medians and gRPC's time as a fraction of JSON-RPC's
    Transport {
        #[arg(value_enum, default_value = "window")]
        kind: KindArg,
        /// Proofs through each transport
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        #[arg(long, default_value = "2KiB", value_parser = sector_size_arg)]
        sector_size: u64,
        #[command(flatten)]
        params: ParamsDir,
    },
}

/// A proof kind at a sector size, written `porep-32g`, `window-64g`, `snap-2k`: what `bench
/// pipeline` and `bench synthesis` run on (synthetic inputs of that shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchShape {
    pub kind: KindArg,
    pub sector_size: u64,
}

impl std::fmt::Display for BenchShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = self.kind.to_possible_value().expect("no skipped kinds");
        let (n, unit) = [(30, "g"), (20, "m"), (10, "k")]
            .into_iter()
            .find(|&(shift, _)| self.sector_size >= 1 << shift && self.sector_size % (1 << shift) == 0)
            .map_or((self.sector_size, ""), |(shift, unit)| (self.sector_size >> shift, unit));
        write!(f, "{}-{n}{unit}", kind.get_name())
    }
}

fn bench_shape_arg(text: &str) -> Result<BenchShape, String> {
    let bad = || format!("{text:?} is not a shape such as porep-32g, snap-32g, window-64g or winning-2k");
    let (kind, size) = text.rsplit_once('-').ok_or_else(bad)?;
    let kind = KindArg::from_str(kind, true).map_err(|_| bad())?;
    let sector_size = sector_size_arg(size).map_err(|_| bad())?;
    Ok(BenchShape { kind, sector_size })
}

fn sector_size_arg(text: &str) -> Result<u64, String> {
    crate::units::Bytes::parse(text).map(|b| b.get()).ok_or_else(|| format!("{text:?} is not a size such as 2KiB or 32GiB"))
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
        #[arg(long, default_value = "2KiB", value_parser = sector_size_arg)]
        sector_size: u64,
        /// Comma-separated kinds
        #[arg(long, value_enum, default_value = "porep,snap,window,winning", value_delimiter = ',')]
        kinds: Vec<KindArg>,
        #[command(flatten)]
        params: ParamsDir,
    },
}
