//! Prometheus metrics kept by the engine: outcomes per kind, stage-time histograms, queue depths,
//! budget bytes, device utilisation and RSS, rendered in the text exposition format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

use super::job::Stage;
use crate::proofs::ProofKind;

/// Histogram bucket bounds in seconds, from a WinningPoSt on a GPU to a 32 GiB C2 on a CPU.
const BUCKETS: [f64; 14] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0];

#[derive(Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

#[derive(Default)]
pub struct Metrics {
    outcomes: Mutex<BTreeMap<(ProofKind, &'static str), u64>>,
    stages: Mutex<BTreeMap<(ProofKind, &'static str), Histogram>>,
    pub retries: AtomicU64,
}

/// The outcome a job that returned a proof is counted under; every other outcome is an error name.
pub const OK: &str = "ok";

/// Counts of finished jobs, from the outcome counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Finished {
    pub completed: u64,
    pub failed: u64,
}

/// Point-in-time values the engine supplies when rendering.
pub struct Gauges<'a> {
    pub queued: &'a [(ProofKind, &'static str, usize)],
    pub running: &'a [(ProofKind, usize)],
    pub budget_limit: u64,
    pub budget_reserved: u64,
    pub budget_in_use: u64,
    pub devices: &'a [(String, f64, u64, bool)],
    pub lookahead_used: usize,
    pub srs_bytes: u64,
}

impl Metrics {
    pub fn count_outcome(&self, kind: ProofKind, outcome: &'static str) {
        *self.outcomes.lock().unwrap().entry((kind, outcome)).or_default() += 1;
    }

    /// Jobs finished so far: those that returned a proof, and those that ended otherwise (failed
    /// or cancelled).
    pub fn finished(&self) -> Finished {
        let outcomes = self.outcomes.lock().unwrap();
        let completed = outcomes.iter().filter(|((_, o), _)| *o == OK).map(|(_, n)| n).sum();
        let failed = outcomes.iter().filter(|((_, o), _)| *o != OK).map(|(_, n)| n).sum();
        Finished { completed, failed }
    }

    pub fn observe_stage(&self, kind: ProofKind, stage: Stage, took: Duration) {
        let secs = took.as_secs_f64();
        let mut stages = self.stages.lock().unwrap();
        let h = stages.entry((kind, stage.name())).or_default();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                h.counts[i] += 1;
            }
        }
        h.sum += secs;
        h.count += 1;
    }

    pub fn render(&self, g: &Gauges<'_>) -> String {
        let mut out = String::new();
        out.push_str("# HELP snarkd_jobs_total Jobs finished, by proof kind and outcome.\n");
        out.push_str("# TYPE snarkd_jobs_total counter\n");
        for ((kind, outcome), n) in self.outcomes.lock().unwrap().iter() {
            let _ = writeln!(out, "snarkd_jobs_total{{kind=\"{}\",outcome=\"{outcome}\"}} {n}", kind.name());
        }
        out.push_str("# HELP snarkd_stage_seconds Time spent per stage (partition stages per partition, done = job total).\n");
        out.push_str("# TYPE snarkd_stage_seconds histogram\n");
        for ((kind, stage), h) in self.stages.lock().unwrap().iter() {
            let labels = format!("kind=\"{}\",stage=\"{stage}\"", kind.name());
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(out, "snarkd_stage_seconds_bucket{{{labels},le=\"{bound}\"}} {}", h.counts[i]);
            }
            let _ = writeln!(out, "snarkd_stage_seconds_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "snarkd_stage_seconds_sum{{{labels}}} {}", h.sum);
            let _ = writeln!(out, "snarkd_stage_seconds_count{{{labels}}} {}", h.count);
        }
        out.push_str("# HELP snarkd_queue_depth Jobs waiting, by proof kind and priority.\n");
        out.push_str("# TYPE snarkd_queue_depth gauge\n");
        for (kind, prio, n) in g.queued {
            let _ = writeln!(out, "snarkd_queue_depth{{kind=\"{}\",priority=\"{prio}\"}} {n}", kind.name());
        }
        out.push_str("# HELP snarkd_jobs_running Jobs past the queue and not yet finished.\n");
        out.push_str("# TYPE snarkd_jobs_running gauge\n");
        for (kind, n) in g.running {
            let _ = writeln!(out, "snarkd_jobs_running{{kind=\"{}\"}} {n}", kind.name());
        }
        for (name, help, v) in [
            ("snarkd_budget_limit_bytes", "Memory budget for witnesses.", g.budget_limit),
            ("snarkd_budget_reserved_bytes", "Witness bytes reserved.", g.budget_reserved),
            ("snarkd_budget_in_use_bytes", "Witness bytes measured alive.", g.budget_in_use),
            ("snarkd_lookahead_witnesses", "Witnesses synthesizing or waiting for a device.", g.lookahead_used as u64),
            ("snarkd_srs_resident_bytes", "Parameter bytes resident in host memory.", g.srs_bytes),
            ("snarkd_resident_memory_bytes", "Resident set size of the daemon.", rss_bytes()),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        out.push_str("# HELP snarkd_device_busy_seconds_total Time each device spent proving.\n");
        out.push_str("# TYPE snarkd_device_busy_seconds_total counter\n");
        for (name, busy, _, _) in g.devices {
            let _ = writeln!(out, "snarkd_device_busy_seconds_total{{device=\"{}\"}} {busy}", escape(name));
        }
        out.push_str("# HELP snarkd_device_proofs_total Partition proofs each device produced.\n");
        out.push_str("# TYPE snarkd_device_proofs_total counter\n");
        for (name, _, proofs, _) in g.devices {
            let _ = writeln!(out, "snarkd_device_proofs_total{{device=\"{}\"}} {proofs}", escape(name));
        }
        out.push_str("# HELP snarkd_device_degraded Whether a device was taken out after a failure.\n");
        out.push_str("# TYPE snarkd_device_degraded gauge\n");
        for (name, _, _, degraded) in g.devices {
            let _ = writeln!(out, "snarkd_device_degraded{{device=\"{}\"}} {}", escape(name), u8::from(*degraded));
        }
        let retries = self.retries.load(std::sync::atomic::Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP snarkd_retries_total Partitions re-run after a device failure.\n# TYPE snarkd_retries_total counter\nsnarkd_retries_total {retries}"
        );
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Resident set size from /proc/self/statm (pages × page size).
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    pages * page_size()
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}
