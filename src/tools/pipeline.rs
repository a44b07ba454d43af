//! `snarkctl bench pipeline`: the real engine (scheduler, budget, synthesis pool, device workers,
//! verification) run in-process on full-size inputs, so 32 and 64 GiB proofs can be measured
//! without sealing a sector or fetching the published parameters.
//!
//! The inputs are synthetic (`tools::synthetic`: real shapes, random values) and the parameters
//! bench-only ([`BenchSrs`]: random points of the circuit's query lengths, in memory only), so
//! every proof fails verification with `verification_failed` — which is the expected end of each
//! job here and proves that nothing made from bench parameters can be returned. Everything before
//! that point runs exactly as in the daemon. The query lengths come from one warm-up synthesis of
//! each circuit, which is also the figure for a partition synthesized alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use serde::Serialize;

use crate::config::Config;
use crate::engine::{Engine, EngineSettings, JobInfo, JobState, Sizing, SubmitOptions};
use crate::error::ErrorCode;
use crate::groth16::Witness;
use crate::proofs::{ProofKind, ProofRequest, Statement};
use crate::srs::bench::{BenchSrs, QueryLengths};
use crate::srs::SrsSource;
use crate::systemd::cgroup::MemoryLimit;
use crate::units::Bytes;

/// What to run.
#[derive(Debug, Clone)]
pub struct PipelineOptions {
    /// Proofs of the main request submitted together for the sustained figure.
    pub proofs: usize,
    /// The memory limit the budget is derived from, as a cgroup's `memory.max` would give it.
    pub memory_limit: Bytes,
    /// Use the GPUs (`gpu.devices = all`); false proves on the CPU backend.
    pub gpu: bool,
    /// Record the circuits before the runs and synthesize with the records (`memory.precompile`).
    pub precompile: bool,
    /// `gpu.memory_limit`: each GPU used as a card of this size (bases that do not fit are streamed).
    pub gpu_memory_limit: Option<Bytes>,
}

/// The figures `bench pipeline` prints.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineReport {
    pub kind: ProofKind,
    pub partitions: usize,
    pub proofs: usize,
    pub cpus: usize,
    pub devices: Vec<String>,
    pub query_lengths: QueryLengths,
    pub bench_srs_bytes: Bytes,
    pub budget: Bytes,
    pub budget_source: String,
    pub synthesis_parallelism: usize,
    /// One partition synthesized with nothing else running (the warm-up).
    pub warmup_synthesis_s: f64,
    /// Recording the main circuit (one thread), the record's size, and one partition
    /// synthesized alone with it; absent without precompiling.
    pub record_s: Option<f64>,
    pub record_bytes: Option<Bytes>,
    pub precompiled_synthesis_s: Option<f64>,
    /// One proof submitted alone: submit to its end.
    pub one_proof_s: f64,
    /// `proofs` proofs submitted together: wall time over the count.
    pub sustained_s_per_proof: f64,
    /// Per partition, from the jobs' timings: synthesis and proving (device) seconds.
    pub synthesis_s_per_partition: f64,
    pub prove_s_per_partition: f64,
    /// The device stage's two parts: h (a, b uploads, NTTs) and the MSMs (aux upload included).
    pub prove_h_s_per_partition: f64,
    pub prove_msm_s_per_partition: f64,
    /// Device busy time over wall time during the sustained run, per device.
    pub device_busy_pct: Vec<f64>,
    pub peak_rss: Bytes,
    pub peak_budget_reserved: Bytes,
    /// WinningPoSts submitted one after another while the sustained run is proving, with
    /// `proving.pause_for_critical` on and off in turn, so the pause is compared in one run.
    pub winning_mid_run: Vec<MidRunWinning>,
    /// Those latencies per setting, the first WinningPoSt (its circuit's first upload) left out.
    pub winning_mid_run_by_pause: Vec<PauseLatencies>,
    /// `--gpu-memory-limit`, and per device the queries its proofs streamed from host memory.
    pub gpu_memory_limit: Option<Bytes>,
    pub streamed: Vec<String>,
    /// How each job ended (verification_failed is the expected end with bench parameters).
    pub outcomes: Vec<String>,
}

/// One WinningPoSt submitted during the sustained run.
#[derive(Debug, Clone, Serialize)]
pub struct MidRunWinning {
    /// Whether it could be proved between two steps of the partition on the device.
    pub pause_for_critical: bool,
    /// Submit to its end.
    pub latency_s: f64,
    /// Its own stages: what of its latency was synthesis, the device, and verification; the
    /// rest is its wait for the device.
    pub timings: crate::engine::Timings,
    pub outcome: String,
}

/// The mid-run WinningPoSts' latencies with one setting of `proving.pause_for_critical`.
#[derive(Debug, Clone, Serialize)]
pub struct PauseLatencies {
    pub pause_for_critical: bool,
    pub samples: usize,
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
}

impl PauseLatencies {
    /// Per setting, from the samples after the first; a setting without samples is left out.
    fn of(samples: &[MidRunWinning]) -> Vec<PauseLatencies> {
        [true, false]
            .into_iter()
            .filter_map(|pause_for_critical| {
                let mut s: Vec<f64> = samples.iter().skip(1).filter(|w| w.pause_for_critical == pause_for_critical).map(|w| w.latency_s).collect();
                s.sort_by(f64::total_cmp);
                let n = s.len();
                let median_s = match n {
                    0 => return None,
                    _ if n % 2 == 1 => s[n / 2],
                    _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
                };
                Some(PauseLatencies { pause_for_critical, samples: n, median_s, min_s: s[0], max_s: s[n - 1] })
            })
            .collect()
    }
}

/// The mid-run WinningPoSts' settings of `proving.pause_for_critical`, in order: the first pays
/// its circuit's first upload to the device and is left out of the comparison; the rest alternate,
/// so each setting is sampled as often as the other and at as many points of a partition.
const MID_RUN_PAUSES: [bool; 11] = [true, false, true, false, true, false, true, false, true, false, true];

/// Pauses after each mid-run WinningPoSt, uneven so that the next lands at another point of the
/// partition on the device rather than in step with it (cycled).
const MID_RUN_GAPS: [Duration; 5] =
    [Duration::from_millis(300), Duration::from_millis(1100), Duration::from_millis(700), Duration::from_millis(1500), Duration::from_millis(500)];

/// Runs `main` alone once, then `opts.proofs` of it together, with `winning` (when given)
/// submitted once the sustained run has its first partition proved.
pub fn run(main: &ProofRequest, winning: Option<&ProofRequest>, opts: &PipelineOptions, progress: &dyn Fn(&str)) -> anyhow::Result<PipelineReport> {
    ensure!(opts.proofs > 0, "--proofs must be at least 1");
    let statement: Arc<dyn Statement> = Arc::from(crate::proofs::prepare(main).context("the main request does not parse")?);
    let srs = Arc::new(BenchSrs::new());

    progress(&format!("warm-up: synthesizing partition 1/{} of {} to size the bench-only parameters", statement.partitions(), main.kind()));
    let started = Instant::now();
    let witness = statement.synthesize(0).context("warm-up synthesis")?;
    let warmup_synthesis_s = started.elapsed().as_secs_f64();
    let query_lengths = lengths_of(&witness);
    progress(&format!("warm-up: {warmup_synthesis_s:.1} s, {} constraints, {} aux, witness {}", witness.a.len(), witness.aux.len(), Bytes(witness.bytes())));
    drop(witness);
    let started = Instant::now();
    srs.insert(&statement.circuit(), query_lengths, 1);
    progress(&format!("bench-only parameters for {}: {} in {:.1} s", statement.circuit(), Bytes(srs.resident_bytes()), started.elapsed().as_secs_f64()));

    let winning = match winning {
        Some(req) => {
            let st: Arc<dyn Statement> = Arc::from(crate::proofs::prepare(req).context("the WinningPoSt request does not parse")?);
            ensure!(st.kind() == ProofKind::WinningPost, "the mid-run request must be a WinningPoSt, not {}", st.kind());
            let w = st.synthesize(0).context("WinningPoSt warm-up synthesis")?;
            srs.insert(&st.circuit(), lengths_of(&w), 2);
            Some((req, st))
        }
        None => None,
    };

    let mut config = Config::default();
    if !opts.gpu {
        config.gpu.devices = crate::config::GpuDevices::None;
    }
    config.memory.precompile = opts.precompile;
    config.gpu.memory_limit = opts.gpu_memory_limit;
    let (backends, notes) = crate::backends::for_config(&config);
    for n in &notes {
        progress(n);
    }
    let memory = MemoryLimit { bytes: opts.memory_limit, source: "bench: cgroup-style limit".into() };
    let sizing = Sizing::derive(crate::engine::budget::witness_budget(config.memory.limit, &memory, config.memory.reserve), config.memory.synthesis_parallelism);
    let mut settings = EngineSettings::from_config(&config);
    for limit in settings.queue_limits.values_mut() {
        *limit = (*limit).max(opts.proofs as u32 + 1);
    }
    let backends_seen = backends.clone();
    let engine = Engine::start(settings.clone(), sizing.clone(), backends, srs.clone() as Arc<dyn SrsSource>, crate::engine::assembly::groth16_verifier());
    let devices: Vec<String> = engine.status().devices.iter().map(|d| d.name.clone()).collect();
    // what witnesses may reserve, resident parameters taken out
    let (mut record_s, mut record_bytes, mut precompiled_synthesis_s) = (None, None, None);
    if opts.precompile {
        progress(&format!("recording the {} circuit", main.kind()));
        let started = Instant::now();
        let record = engine.precompile(statement.clone()).map_err(|why| anyhow::anyhow!("recording the circuit failed: {why}"))?;
        record_s = Some(started.elapsed().as_secs_f64());
        record_bytes = Some(Bytes(record.bytes()));
        let started = Instant::now();
        let w = crate::groth16::precompiled(record.clone(), || statement.synthesize(0)).context("precompiled warm-up synthesis")?;
        precompiled_synthesis_s = Some(started.elapsed().as_secs_f64());
        drop(w);
        progress(&format!(
            "recorded in {:.1} s, {}; one partition synthesized with it alone: {:.1} s",
            record_s.unwrap_or_default(),
            Bytes(record.bytes()),
            precompiled_synthesis_s.unwrap_or_default()
        ));
        if let Some((_, st)) = &winning {
            engine.precompile(st.clone()).map_err(|why| anyhow::anyhow!("recording WinningPoSt failed: {why}"))?;
        }
    }
    // what witnesses may reserve, resident parameters and records taken out
    let engine_budget = engine.status().budget.limit;

    let watch = Watch::start(engine.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut outcomes = vec![];

    // One proof alone.
    progress(&format!("one {} proof alone ({} partitions)", main.kind(), statement.partitions()));
    let started = Instant::now();
    let job = submit(&engine, main)?;
    let info = runtime.block_on(wait(&engine, &job, progress))?;
    let one_proof_s = started.elapsed().as_secs_f64();
    outcomes.push(outcome(&info));
    progress(&format!("one proof: {one_proof_s:.1} s ({})", outcomes[0]));

    // The sustained run, with the WinningPoSt submitted once the first partition is proved.
    progress(&format!("{} proofs together", opts.proofs));
    let busy_before: Vec<f64> = engine.status().devices.iter().map(|d| d.busy_seconds).collect();
    let started = Instant::now();
    let jobs: Vec<_> = (0..opts.proofs).map(|_| submit(&engine, main)).collect::<anyhow::Result<_>>()?;
    let mut winning_mid_run = vec![];
    if let Some((req, _)) = winning {
        while engine.job(&jobs[0])?.partitions_done == 0 && !engine.job(&jobs[0])?.state.is_terminal() {
            std::thread::sleep(Duration::from_millis(50));
        }
        for (i, pause_for_critical) in MID_RUN_PAUSES.into_iter().enumerate() {
            if engine.job(jobs.last().unwrap_or(&jobs[0]))?.state.is_terminal() {
                progress("the sustained run ended before every mid-run WinningPoSt was submitted");
                break;
            }
            engine.apply_settings(EngineSettings { pause_for_critical, ..settings.clone() }, None);
            let submitted = Instant::now();
            let w = submit(&engine, req)?;
            let info = runtime.block_on(wait(&engine, &w, &|_| {}))?;
            let latency_s = submitted.elapsed().as_secs_f64();
            let sample = MidRunWinning { pause_for_critical, latency_s, timings: info.timings, outcome: outcome(&info) };
            progress(&format!("WinningPoSt submitted mid-run: {}", sample.describe()));
            winning_mid_run.push(sample);
            std::thread::sleep(MID_RUN_GAPS[i % MID_RUN_GAPS.len()]);
        }
        engine.apply_settings(settings, None);
    }
    let mut infos = vec![];
    for j in &jobs {
        infos.push(runtime.block_on(wait(&engine, j, progress))?);
    }
    let wall = started.elapsed().as_secs_f64();
    let busy: Vec<f64> = engine
        .status()
        .devices
        .iter()
        .zip(busy_before.iter().chain(std::iter::repeat(&0.0)))
        .map(|(d, before)| 100.0 * (d.busy_seconds - before) / wall)
        .collect();
    let (peak_rss, peak_reserved) = watch.stop();
    engine.shutdown();
    let streamed = backends_seen
        .iter()
        .map(|b| (b.name(), b.streamed(&statement.circuit())))
        .filter(|(_, q)| !q.is_empty())
        .map(|(name, q)| format!("{name}: {}", q.join(", ")))
        .collect();

    let parts = (infos.len() * statement.partitions()).max(1) as f64;
    let synthesis: f64 = infos.iter().map(|i| i.timings.synthesis.as_secs_f64()).sum();
    let prove: f64 = infos.iter().map(|i| i.timings.prove.as_secs_f64()).sum();
    outcomes.extend(infos.iter().map(outcome));
    Ok(PipelineReport {
        kind: main.kind(),
        partitions: statement.partitions(),
        proofs: opts.proofs,
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        devices,
        query_lengths,
        bench_srs_bytes: Bytes(srs.resident_bytes()),
        budget: engine_budget,
        budget_source: sizing.budget.source.clone(),
        synthesis_parallelism: sizing.synthesis_parallelism,
        warmup_synthesis_s,
        one_proof_s,
        sustained_s_per_proof: wall / opts.proofs as f64,
        synthesis_s_per_partition: synthesis / parts,
        prove_s_per_partition: prove / parts,
        prove_h_s_per_partition: infos.iter().map(|i| i.timings.prove_ntt.as_secs_f64()).sum::<f64>() / parts,
        prove_msm_s_per_partition: infos.iter().map(|i| i.timings.prove_msm.as_secs_f64()).sum::<f64>() / parts,
        record_s,
        record_bytes,
        precompiled_synthesis_s,
        device_busy_pct: busy,
        peak_rss,
        peak_budget_reserved: peak_reserved,
        winning_mid_run_by_pause: PauseLatencies::of(&winning_mid_run),
        winning_mid_run,
        gpu_memory_limit: opts.gpu_memory_limit,
        streamed,
        outcomes,
    })
}

impl PipelineReport {
    pub fn summary(&self) -> String {
        format!(
            "{kind}, {parts} partitions, {cpus} cpus, devices [{devices}]\n\
             bench-only parameters {srs}; budget {budget} ({source}); synthesis parallelism {par}\n\
             warm-up synthesis of one partition alone: {warm:.1} s; {record}\n\
             one proof alone: {one:.1} s\n\
             {n} proofs together: {sus:.1} s per proof\n\
             per partition: synthesis {syn:.1} s, prove {prove:.2} s (h {h:.2} s, msm {msm:.2} s); device busy {busy}\n\
             peak RSS {rss}, peak budget reserved {res}\n\
             WinningPoSt during the run: {win}\n\
             GPU memory: {gpu_mem}; bases streamed from host memory: {streamed}\n\
             outcomes: {outcomes} (verification_failed is expected: bench-only parameters)",
            kind = self.kind,
            parts = self.partitions,
            cpus = self.cpus,
            devices = self.devices.join(", "),
            srs = self.bench_srs_bytes,
            budget = self.budget,
            source = self.budget_source,
            par = self.synthesis_parallelism,
            warm = self.warmup_synthesis_s,
            record = match (self.record_s, self.record_bytes, self.precompiled_synthesis_s) {
                (Some(r), Some(b), Some(s)) => format!("circuit recorded in {r:.1} s ({b}), then one partition alone {s:.1} s"),
                _ => "not precompiled".into(),
            },
            one = self.one_proof_s,
            gpu_mem = self.gpu_memory_limit.map_or("the whole card".to_string(), |l| format!("at most {l} (--gpu-memory-limit)")),
            streamed = if self.streamed.is_empty() { "none".to_string() } else { self.streamed.join("; ") },
            n = self.proofs,
            sus = self.sustained_s_per_proof,
            syn = self.synthesis_s_per_partition,
            prove = self.prove_s_per_partition,
            h = self.prove_h_s_per_partition,
            msm = self.prove_msm_s_per_partition,
            busy = self.device_busy_pct.iter().map(|p| format!("{p:.0} %")).collect::<Vec<_>>().join(", "),
            rss = self.peak_rss,
            res = self.peak_budget_reserved,
            win = if self.winning_mid_run.is_empty() {
                "not run".to_string()
            } else {
                let each: String = self.winning_mid_run.iter().map(|w| format!("\n  {}", w.describe())).collect();
                let by_pause: String = self
                    .winning_mid_run_by_pause
                    .iter()
                    .map(|p| {
                        format!(
                            "\n  pause {}: median {:.2} s, {:.2}-{:.2} s over {} (the first left out)",
                            if p.pause_for_critical { "on" } else { "off" },
                            p.median_s,
                            p.min_s,
                            p.max_s,
                            p.samples
                        )
                    })
                    .collect();
                each + &by_pause
            },
            outcomes = self.outcomes.join(", "),
        )
    }
}

impl MidRunWinning {
    fn describe(&self) -> String {
        let t = &self.timings;
        format!(
            "{:.2} s with proving.pause_for_critical {} (synthesis {:.2} s, device {:.2} s, verification {:.2} s; the rest waiting; {})",
            self.latency_s,
            if self.pause_for_critical { "on" } else { "off" },
            t.synthesis.as_secs_f64(),
            t.prove.as_secs_f64(),
            t.verify.as_secs_f64(),
            self.outcome
        )
    }
}

/// The query lengths a witness implies (the relations `groth16::prover::check_shape` checks).
pub fn lengths_of(w: &Witness) -> QueryLengths {
    let b = w.b_input_density.count_ones() + w.b_aux_density.count_ones();
    QueryLengths {
        inputs: w.input.len(),
        h: w.a.len().next_power_of_two() - 1,
        l: w.aux.len(),
        a: w.input.len() + w.a_aux_density.count_ones(),
        b,
    }
}

fn submit(engine: &Engine, req: &ProofRequest) -> anyhow::Result<crate::engine::JobId> {
    let statement = crate::proofs::prepare(req)?;
    Ok(engine.submit(statement, SubmitOptions::default())?.job_id)
}

/// Waits for a job to end, printing its progress every 10 s.
async fn wait(engine: &Engine, job: &crate::engine::JobId, progress: &dyn Fn(&str)) -> anyhow::Result<JobInfo> {
    loop {
        match engine.await_job(job, Some(Duration::from_secs(10))).await {
            Ok(crate::engine::AwaitOutcome::Pending(info)) => {
                progress(&format!("  {} {}: {}/{} partitions, stage {:?}", info.kind, info.job_id, info.partitions_done, info.partitions, info.stage));
            }
            Ok(crate::engine::AwaitOutcome::Done { info, .. }) => return Ok(info),
            Err(e) if e.code == ErrorCode::VerificationFailed => return Ok(engine.job(job)?),
            Err(e) => bail!("job {job} failed before verification: {e}"),
        }
    }
}

fn outcome(info: &JobInfo) -> String {
    match (&info.state, &info.error) {
        (_, Some(e)) => e.name.to_string(),
        (JobState::Done, None) => "verified".into(),
        (state, None) => format!("{state:?}"),
    }
}

/// Samples the process's RSS and the budget's reservation every 100 ms.
struct Watch {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(Bytes, Bytes)>,
}

impl Watch {
    fn start(engine: Arc<Engine>) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let (mut rss, mut reserved) = (0u64, 0u64);
            while !flag.load(Ordering::Relaxed) {
                rss = rss.max(crate::engine::metrics::rss_bytes());
                reserved = reserved.max(engine.status().budget.reserved.get());
                std::thread::sleep(Duration::from_millis(100));
            }
            (Bytes(rss), Bytes(reserved))
        });
        Watch { stop, handle }
    }

    fn stop(self) -> (Bytes, Bytes) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(pause_for_critical: bool, latency_s: f64) -> MidRunWinning {
        MidRunWinning { pause_for_critical, latency_s, timings: Default::default(), outcome: "verification_failed".into() }
    }

    #[test]
    fn mid_run_latencies_are_summed_up_per_setting_without_the_first() {
        let samples = [sample(true, 9.0), sample(false, 1.6), sample(true, 0.3), sample(false, 0.4), sample(true, 0.1), sample(false, 1.0), sample(false, 2.0)];
        let by = PauseLatencies::of(&samples);
        assert_eq!(by.len(), 2);
        let (on, off) = (&by[0], &by[1]);
        assert!(on.pause_for_critical && !off.pause_for_critical);
        // the first (9.0 s, the circuit's first upload) is left out
        assert_eq!((on.samples, on.median_s, on.min_s, on.max_s), (2, 0.2, 0.1, 0.3));
        assert_eq!((off.samples, off.median_s, off.min_s, off.max_s), (4, 1.3, 0.4, 2.0));
        assert!(PauseLatencies::of(&samples[..1]).is_empty());
    }
}
