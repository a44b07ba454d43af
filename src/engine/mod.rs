//! The engine: accepts validated proof statements as jobs, schedules their partitions through the
//! synthesis and proving stages, and keeps results for clients to fetch.
//!
//! It is independent of the transport (rpc/) and of any GPU code: backends come in as
//! [`ProvingBackend`] trait objects, parameters through [`SrsSource`], so tests can drive it with
//! controllable fakes and the daemon with the real CPU and CUDA backends.

pub mod assembly;
pub mod budget;
mod gate;
pub mod job;
pub mod metrics;
mod pipeline;
mod precompile;
pub use precompile::PrecompiledStatus;
mod proving;
pub mod scheduler;
mod synthesis;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use blstrs::Bls12;
use serde::Serialize;

pub use budget::{Budget, BudgetStatus, WitnessBudget};
pub use job::{Job, JobId, JobInfo, JobState, Stage, Timings};
pub use proving::DeviceStatus;
pub use scheduler::Priority;

use crate::error::{ErrorCode, SnarkError};
use crate::groth16::{Proof, ProvingBackend};
use crate::proofs::{ProofKind, Statement};
use crate::srs::{CircuitId, Srs, SrsSource};
use crate::units::Bytes;
use pipeline::{Pipeline, WorkItem};

/// Checks a job's assembled partition proofs (true = every partition verifies).
pub type Verifier = Arc<dyn Fn(&dyn Statement, &Srs, &[Proof<Bls12>]) -> Result<bool, SnarkError> + Send + Sync>;

/// Settings a reload may change while jobs run.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    pub verify: bool,
    pub allow_priority_raise: bool,
    pub queue_limits: HashMap<ProofKind, u32>,
    pub job_retention: Duration,
    /// Synthesize each circuit with its precompiled record (`memory.precompile`).
    pub precompile: bool,
    /// Prove a critical partition between two steps of a running one (`proving.pause_for_critical`).
    pub pause_for_critical: bool,
}

impl EngineSettings {
    pub fn from_config(c: &crate::config::Config) -> EngineSettings {
        EngineSettings {
            verify: c.proving.verify,
            allow_priority_raise: c.proving.allow_priority_raise,
            queue_limits: ProofKind::ALL.into_iter().map(|k| (k, c.queue.limit(k))).collect(),
            job_retention: c.queue.job_retention,
            precompile: c.memory.precompile,
            pause_for_critical: c.proving.pause_for_critical,
        }
    }
}

/// How the stages are sized; derived once at start-up.
#[derive(Debug, Clone)]
pub struct Sizing {
    pub budget: WitnessBudget,
    pub synthesis_parallelism: usize,
    pub lookahead_per_device: usize,
}

/// A 32 GiB PoRep partition's witness estimate: 130.3 M constraints × (a, b, c) plus about as
/// many aux values, 32 B each. It sizes the default synthesis parallelism from the budget.
pub const REFERENCE_PARTITION_BYTES: u64 = 130_278_541 * 4 * 32;

impl Sizing {
    /// Parallelism follows from the budget (how many reference partitions fit) and the CPU count,
    /// unless the config sets it.
    pub fn derive(budget: WitnessBudget, configured_parallelism: u32) -> Sizing {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let by_budget = (budget.bytes.get() / REFERENCE_PARTITION_BYTES) as usize;
        let parallelism =
            if configured_parallelism > 0 { configured_parallelism as usize } else { by_budget.clamp(1, cpus) };
        Sizing { budget, synthesis_parallelism: parallelism, lookahead_per_device: parallelism }
    }
}

/// How long an idle engine worker may go without waking before the engine counts as stalled;
/// idle workers wake at least every 100 ms.
pub const STALL_LIMIT: Duration = Duration::from_secs(30);

/// What Submit takes besides the statement.
#[derive(Debug, Clone, Default)]
pub struct SubmitOptions {
    pub request_id: Option<String>,
    pub priority: Option<Priority>,
}

/// The outcome of waiting for a job.
pub enum AwaitOutcome {
    Done { info: JobInfo, proof: Vec<u8> },
    Pending(JobInfo),
}

/// Queue counts for Status.
#[derive(Debug, Clone, Serialize)]
pub struct QueueStatus {
    pub kind: ProofKind,
    pub queued: HashMap<&'static str, usize>,
    pub running: usize,
    pub limit: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct EngineStatus {
    pub draining: bool,
    pub devices: Vec<DeviceStatus>,
    pub queues: Vec<QueueStatus>,
    pub budget: BudgetStatus,
    pub budget_source: String,
    pub synthesis_parallelism: usize,
    pub lookahead: LookaheadStatus,
    /// Per circuit: the largest witness measured so far, and that plus headroom (a partition
    /// reserves at least this).
    pub estimates: Vec<EstimateStatus>,
    /// Each circuit's precompiled record: ready, recording or failed.
    pub precompiled: Vec<PrecompiledStatus>,
    pub jobs_retained: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct EstimateStatus {
    pub circuit: String,
    pub measured_peak: Bytes,
    pub reserve: Bytes,
}

#[derive(Debug, Clone, Serialize)]
pub struct LookaheadStatus {
    pub used: usize,
    pub limit: usize,
    pub peak: usize,
}

struct Jobs {
    by_id: HashMap<JobId, Arc<Job>>,
    by_request: HashMap<String, JobId>,
}

pub struct Engine {
    pipeline: Arc<Pipeline>,
    jobs: Mutex<Jobs>,
    settings: Arc<RwLock<EngineSettings>>,
    draining: std::sync::atomic::AtomicBool,
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    sizing: Sizing,
}

impl Engine {
    /// Starts the synthesis pool and one proving worker per backend.
    pub fn start(
        settings: EngineSettings,
        sizing: Sizing,
        backends: Vec<Arc<dyn ProvingBackend>>,
        srs: Arc<dyn SrsSource>,
        verifier: Verifier,
    ) -> Arc<Engine> {
        let settings = Arc::new(RwLock::new(settings));
        let metrics = Arc::new(metrics::Metrics::default());
        let pipeline = Pipeline::new(
            settings.clone(),
            backends,
            srs,
            verifier,
            Budget::new(&sizing.budget),
            sizing.synthesis_parallelism,
            sizing.lookahead_per_device,
            metrics,
        );
        pipeline.params_changed();
        let workers = pipeline.spawn_workers();
        let engine = Arc::new(Engine {
            pipeline,
            jobs: Mutex::new(Jobs { by_id: HashMap::new(), by_request: HashMap::new() }),
            settings,
            draining: std::sync::atomic::AtomicBool::new(false),
            workers: Mutex::new(workers),
            sizing,
        });
        let weak = Arc::downgrade(&engine);
        std::thread::Builder::new()
            .name("job-retention".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_secs(1));
                match weak.upgrade() {
                    Some(e) if !e.pipeline.stopping.load(std::sync::atomic::Ordering::Relaxed) => e.expire(),
                    _ => return,
                }
            })
            .expect("spawn retention thread");
        engine
    }

    /// Applies the live part of a reload.
    pub fn apply_settings(&self, settings: EngineSettings, budget: Option<WitnessBudget>) {
        let precompile = settings.precompile;
        *self.settings.write().unwrap() = settings;
        if !precompile {
            self.pipeline.records.clear();
            self.pipeline.params_changed();
        }
        if let Some(b) = budget {
            self.pipeline.budget.set_limit(&b);
        }
    }

    /// Records `statement`'s circuit now, on this thread, unless it has a record (or one is being
    /// made): what the engine otherwise does in the background on the circuit's first use.
    /// Returns the record, or why there is none.
    pub fn precompile(&self, statement: Arc<dyn Statement>) -> Result<Arc<crate::groth16::Precompiled>, String> {
        let id = statement.circuit();
        if self.pipeline.records.begin(&id) {
            self.pipeline.record(statement.as_ref(), &id);
        }
        self.pipeline.records.get(&id)
    }

    /// Drops `circuit`'s precompiled record (when an operator evicts the circuit) and gives its
    /// bytes back to the budget; the circuit's next proof records it again.
    pub fn forget_record(&self, circuit: &CircuitId) {
        self.pipeline.records.forget(circuit);
        self.pipeline.params_changed();
    }

    /// Takes the parameters resident now out of the budget (when it follows them): called after
    /// every load, preload and eviction, so parameters count however they arrived.
    pub fn params_changed(&self) {
        self.pipeline.params_changed();
    }

    /// Accepts a job, or returns the existing one for a repeated `request_id`.
    pub fn submit(&self, statement: Box<dyn Statement>, opts: SubmitOptions) -> Result<JobInfo, SnarkError> {
        if self.is_draining() {
            return Err(SnarkError::new(ErrorCode::Draining, "the daemon is draining for shutdown; submit elsewhere or retry after restart"));
        }
        let kind = statement.kind();
        let settings = self.settings.read().unwrap().clone();
        let mut jobs = self.jobs.lock().unwrap();
        if let Some(rid) = &opts.request_id {
            if let Some(job) = jobs.by_request.get(rid).and_then(|id| jobs.by_id.get(id)) {
                if job.kind != kind {
                    return Err(SnarkError::bad_input(format!(
                        "request_id: {rid:?} already names a {} job, not {kind}",
                        job.kind
                    )));
                }
                return Ok(job.info());
            }
        }
        let limit = settings.queue_limits.get(&kind).copied().unwrap_or(u32::MAX);
        let active = jobs.by_id.values().filter(|j| j.kind == kind && !j.state().is_terminal()).count();
        if active >= limit as usize {
            return Err(SnarkError::new(
                ErrorCode::QueueFull,
                format!("the {kind} queue is full ({active} of {limit} jobs); retry later or raise queue.{}", kind.name()),
            ));
        }
        let priority = Priority::effective(kind, opts.priority, settings.allow_priority_raise);
        self.pipeline.budget.check_fits(self.pipeline.estimate(statement.as_ref()), priority == Priority::Critical)?;
        let job = Arc::new(Job::new(statement, priority, opts.request_id.clone()));
        if let Some(rid) = &opts.request_id {
            jobs.by_request.insert(rid.clone(), job.id.clone());
        }
        jobs.by_id.insert(job.id.clone(), job.clone());
        drop(jobs);
        pipeline::log_stage(&job, Stage::Queued, "", &format!("{} partitions, priority {}", job.partitions(), priority.name()));
        for partition in 0..job.partitions() {
            self.pipeline.enqueue(WorkItem { job: job.clone(), partition, exclude: vec![], out_of_memory: vec![] });
        }
        Ok(job.info())
    }

    fn get(&self, id: &JobId) -> Result<Arc<Job>, SnarkError> {
        self.jobs.lock().unwrap().by_id.get(id).cloned().ok_or_else(|| {
            SnarkError::new(ErrorCode::NotFound, format!("no job {id}; it never existed or its result expired"))
        })
    }

    pub fn job(&self, id: &JobId) -> Result<JobInfo, SnarkError> {
        Ok(self.get(id)?.info())
    }

    /// Waits up to `timeout` for the job to end. A failed job returns its error.
    pub async fn await_job(&self, id: &JobId, timeout: Option<Duration>) -> Result<AwaitOutcome, SnarkError> {
        let job = self.get(id)?;
        let mut rx = job.subscribe();
        let wait = rx.wait_for(|s| s.is_terminal());
        let ended = match timeout {
            Some(t) => tokio::time::timeout(t, wait).await.is_ok(),
            None => wait.await.is_ok(),
        };
        if !ended {
            return Ok(AwaitOutcome::Pending(job.info()));
        }
        match job.outcome() {
            Some(Ok(proof)) => Ok(AwaitOutcome::Done { info: job.info(), proof }),
            Some(Err(e)) => Err(e),
            None => Ok(AwaitOutcome::Pending(job.info())),
        }
    }

    /// Cancels a queued job at once, a running one at its next stage boundary.
    pub fn cancel(&self, id: &JobId) -> Result<JobInfo, SnarkError> {
        self.cancel_from(id).map(|(info, _)| info)
    }

    /// [`Engine::cancel`], with the state the cancel found the job in (Curio's CancelProof
    /// answers whether the proof was running).
    pub fn cancel_from(&self, id: &JobId) -> Result<(JobInfo, JobState), SnarkError> {
        let job = self.get(id)?;
        let found = job.mark_cancelled();
        if !found.is_terminal() {
            self.pipeline.synth_queue.lock().unwrap().extract(|w| w.job.id != job.id);
            pipeline::fail_job(&job, SnarkError::new(ErrorCode::Cancelled, "job cancelled by request"), &self.pipeline.metrics);
        }
        Ok((job.info(), found))
    }

    pub fn set_draining(&self) {
        self.draining.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolves once every job accepted so far has ended. Waiting is on each job's own state
    /// channel; jobs accepted while it waits (none, once draining) are waited for too.
    pub async fn all_finished(&self) {
        loop {
            let unfinished: Vec<_> = self
                .jobs
                .lock()
                .unwrap()
                .by_id
                .values()
                .filter(|j| !j.state().is_terminal())
                .map(|j| j.subscribe())
                .collect();
            if unfinished.is_empty() {
                return;
            }
            for mut rx in unfinished {
                let _ = rx.wait_for(|s| s.is_terminal()).await;
            }
        }
    }

    /// Why the proving machinery is not making progress, if it is not: a worker thread that has
    /// exited, or an idle one that has not woken for [`STALL_LIMIT`]. The daemon withholds the
    /// watchdog ping while this says something.
    pub fn stalled(&self) -> Option<String> {
        if self.pipeline.stopped() {
            return None;
        }
        if let Some(dead) = self.workers.lock().unwrap().iter().find(|w| w.is_finished()) {
            return Some(format!("engine worker {} has exited", dead.thread().name().unwrap_or("?")));
        }
        let beats = self.pipeline.beats.lock().unwrap();
        beats.iter().find_map(|b| {
            b.silent_for()
                .filter(|&t| t > STALL_LIMIT)
                .map(|t| format!("engine worker {} has not woken for {:.0} s", b.thread, t.as_secs_f64()))
        })
    }

    /// Jobs not yet finished.
    pub fn in_flight(&self) -> usize {
        self.jobs.lock().unwrap().by_id.values().filter(|j| !j.state().is_terminal()).count()
    }

    /// Fails every unfinished job with `reason` (the end of a drain).
    pub fn fail_unfinished(&self, reason: &str) -> usize {
        let jobs: Vec<_> = self.jobs.lock().unwrap().by_id.values().cloned().collect();
        let mut n = 0;
        for job in jobs.iter().filter(|j| !j.state().is_terminal()) {
            job.mark_cancelled();
            pipeline::fail_job(job, SnarkError::new(ErrorCode::Cancelled, reason), &self.pipeline.metrics);
            n += 1;
        }
        self.pipeline.synth_queue.lock().unwrap().extract(|_| false);
        n
    }

    /// Stops every worker and waits for it; dropping the backends afterwards frees device contexts.
    pub fn shutdown(&self) {
        self.pipeline.stop();
        let workers: Vec<_> = self.workers.lock().unwrap().drain(..).collect();
        for w in workers {
            let _ = w.join();
        }
    }

    fn expire(&self) {
        let retention = self.settings.read().unwrap().job_retention;
        let mut jobs = self.jobs.lock().unwrap();
        let now = Instant::now();
        let expired: Vec<JobId> = jobs
            .by_id
            .values()
            .filter(|j| j.finished_at().is_some_and(|f| now.duration_since(f) > retention))
            .map(|j| j.id.clone())
            .collect();
        for id in expired {
            if let Some(job) = jobs.by_id.remove(&id) {
                if let Some(rid) = &job.request_id {
                    jobs.by_request.remove(rid);
                }
            }
        }
    }

    /// A one-line summary for systemd's STATUS=.
    pub fn summary(&self) -> String {
        let jobs = self.jobs.lock().unwrap();
        let queued = jobs.by_id.values().filter(|j| j.state() == JobState::Queued).count();
        let running = jobs.by_id.values().filter(|j| j.state() == JobState::Running).count();
        let b = self.pipeline.budget.status();
        format!(
            "{}{queued} queued, {running} running, {} devices, budget {} of {} reserved",
            if self.is_draining() { "draining: " } else { "" },
            self.pipeline.devices.len(),
            b.reserved,
            b.limit
        )
    }

    pub fn status(&self) -> EngineStatus {
        let jobs = self.jobs.lock().unwrap();
        let settings = self.settings.read().unwrap();
        let queues = ProofKind::ALL
            .into_iter()
            .map(|kind| {
                let mut queued = HashMap::new();
                for p in Priority::ALL {
                    let n = jobs
                        .by_id
                        .values()
                        .filter(|j| j.kind == kind && j.priority == p && j.state() == JobState::Queued)
                        .count();
                    queued.insert(p.name(), n);
                }
                let running =
                    jobs.by_id.values().filter(|j| j.kind == kind && j.state() == JobState::Running).count();
                QueueStatus { kind, queued, running, limit: settings.queue_limits.get(&kind).copied().unwrap_or(0) }
            })
            .collect();
        EngineStatus {
            draining: self.is_draining(),
            devices: self.pipeline.devices.iter().map(|d| d.status()).collect(),
            queues,
            budget: self.pipeline.budget.status(),
            budget_source: self.sizing.budget.source.clone(),
            synthesis_parallelism: self.pipeline.parallelism,
            lookahead: LookaheadStatus {
                used: self.pipeline.lookahead.used(),
                limit: self.pipeline.lookahead.limit(),
                peak: self.pipeline.lookahead.peak(),
            },
            estimates: {
                let mut e: Vec<_> = self
                    .pipeline
                    .measured
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(id, &peak)| EstimateStatus {
                        circuit: id.0.clone(),
                        measured_peak: Bytes(peak),
                        reserve: synthesis::with_headroom(peak),
                    })
                    .collect();
                e.sort_by(|a, b| a.circuit.cmp(&b.circuit));
                e
            },
            precompiled: self.pipeline.records.status(),
            jobs_retained: jobs.by_id.len(),
        }
    }

    /// Jobs finished since start, by whether they returned a proof.
    pub fn finished(&self) -> metrics::Finished {
        self.pipeline.metrics.finished()
    }

    pub fn metrics(&self) -> String {
        let status = self.status();
        let queued: Vec<_> = status
            .queues
            .iter()
            .flat_map(|q| Priority::ALL.into_iter().map(move |p| (q.kind, p.name(), q.queued[p.name()])))
            .collect();
        let running: Vec<_> = status.queues.iter().map(|q| (q.kind, q.running)).collect();
        let devices: Vec<_> =
            status.devices.iter().map(|d| (d.name.clone(), d.busy_seconds, d.proofs, d.degraded.is_some())).collect();
        self.pipeline.metrics.render(&metrics::Gauges {
            queued: &queued,
            running: &running,
            budget_limit: status.budget.limit.get(),
            budget_reserved: status.budget.reserved.get(),
            budget_in_use: status.budget.in_use.get(),
            devices: &devices,
            lookahead_used: status.lookahead.used,
            srs_bytes: self.pipeline.srs.resident_bytes(),
        })
    }
}
