//! One proof job as the engine tracks it: identity, state machine, per-stage timings, partition
//! proofs in order, and a watch channel that `Snark.Await` callers wait on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use blstrs::Bls12;
use serde::{Deserialize, Serialize};

use super::scheduler::Priority;
use crate::error::SnarkError;
use crate::groth16::Proof;
use crate::proofs::{ProofKind, Statement};

/// A job's identifier: 128 random bits in hex.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub String);

impl JobId {
    pub fn random() -> JobId {
        use rand::RngCore;
        let mut b = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut b);
        JobId(hex::encode(b))
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn is_terminal(self) -> bool {
        matches!(self, JobState::Done | JobState::Failed | JobState::Cancelled)
    }
    pub fn name(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }
}

/// The stage a job is in; each change is one journal entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Queued,
    ParamsLoad,
    Synthesis,
    Prove,
    Verify,
    Done,
}

impl Stage {
    pub const ALL: [Stage; 6] =
        [Stage::Queued, Stage::ParamsLoad, Stage::Synthesis, Stage::Prove, Stage::Verify, Stage::Done];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Queued => "queued",
            Stage::ParamsLoad => "params_load",
            Stage::Synthesis => "synthesis",
            Stage::Prove => "prove",
            Stage::Verify => "verify",
            Stage::Done => "done",
        }
    }
}

/// Where a job's time went. Partition stages are summed over partitions; `total` is wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Timings {
    #[serde(with = "crate::units::millis")]
    pub queue: Duration,
    #[serde(with = "crate::units::millis")]
    pub params_load: Duration,
    #[serde(with = "crate::units::millis")]
    pub synthesis: Duration,
    #[serde(with = "crate::units::millis")]
    pub prove: Duration,
    #[serde(with = "crate::units::millis")]
    pub prove_ntt: Duration,
    #[serde(with = "crate::units::millis")]
    pub prove_msm: Duration,
    #[serde(with = "crate::units::millis")]
    pub verify: Duration,
    #[serde(with = "crate::units::millis")]
    pub total: Duration,
}

/// A snapshot of a job for `Snark.Job`, `Snark.Submit` and `Snark.Await`.
#[derive(Debug, Clone, Serialize)]
pub struct JobInfo {
    pub job_id: JobId,
    pub request_id: Option<String>,
    pub kind: ProofKind,
    pub priority: Priority,
    pub state: JobState,
    pub stage: Stage,
    pub partitions: usize,
    pub partitions_done: usize,
    pub device: Option<String>,
    pub submitted_at_unix_ms: u64,
    pub timings: Timings,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<JobError>,
}

/// A failed job's error, as the wire shows it.
#[derive(Debug, Clone, Serialize)]
pub struct JobError {
    pub code: i32,
    pub name: &'static str,
    pub message: String,
}

impl From<&SnarkError> for JobError {
    fn from(e: &SnarkError) -> Self {
        JobError { code: e.code.code(), name: e.code.name(), message: e.message.clone() }
    }
}

pub(crate) struct Progress {
    pub state: JobState,
    pub stage: Stage,
    pub proofs: Vec<Option<Proof<Bls12>>>,
    pub partitions_done: usize,
    pub started: Option<Instant>,
    pub finished: Option<Instant>,
    pub timings: Timings,
    pub device: Option<String>,
    pub error: Option<SnarkError>,
    pub proof_bytes: Option<Vec<u8>>,
}

pub struct Job {
    pub id: JobId,
    pub request_id: Option<String>,
    pub kind: ProofKind,
    pub priority: Priority,
    /// The inputs, until the job ends: a 32 GiB PoRep's vanilla proofs are tens of megabytes,
    /// and a finished job is retained for `queue.job_retention` with only its result.
    statement: Mutex<Option<Arc<dyn Statement>>>,
    partitions: usize,
    pub(crate) submitted: Instant,
    submitted_at: SystemTime,
    pub(crate) progress: Mutex<Progress>,
    cancelled: AtomicBool,
    watch: tokio::sync::watch::Sender<JobState>,
}

impl Job {
    pub(crate) fn new(
        statement: Box<dyn Statement>,
        priority: Priority,
        request_id: Option<String>,
    ) -> Job {
        let partitions = statement.partitions();
        Job {
            id: JobId::random(),
            request_id,
            kind: statement.kind(),
            priority,
            statement: Mutex::new(Some(Arc::from(statement))),
            partitions,
            submitted: Instant::now(),
            submitted_at: SystemTime::now(),
            progress: Mutex::new(Progress {
                state: JobState::Queued,
                stage: Stage::Queued,
                proofs: vec![None; partitions],
                partitions_done: 0,
                started: None,
                finished: None,
                timings: Timings::default(),
                device: None,
                error: None,
                proof_bytes: None,
            }),
            cancelled: AtomicBool::new(false),
            watch: tokio::sync::watch::channel(JobState::Queued).0,
        }
    }

    pub fn partitions(&self) -> usize {
        self.partitions
    }

    /// The job's inputs while it can still use them; `None` once it has ended.
    pub fn statement(&self) -> Option<Arc<dyn Statement>> {
        self.statement.lock().unwrap().clone()
    }

    /// True once the job was cancelled or has failed: work on it stops at the next boundary.
    pub fn should_stop(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed) || self.state().is_terminal()
    }

    /// Marks the job cancelled and returns its state at that moment: the mark and the read are
    /// made under the progress lock, where a queued job becomes running, and a job marked
    /// cancelled never does, so the state returned is the one the cancel met.
    pub(crate) fn mark_cancelled(&self) -> JobState {
        let p = self.progress.lock().unwrap();
        self.cancelled.store(true, Ordering::Relaxed);
        p.state
    }

    pub fn state(&self) -> JobState {
        *self.watch.borrow()
    }

    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<JobState> {
        self.watch.subscribe()
    }

    pub(crate) fn set_state(&self, p: &mut Progress, state: JobState) {
        p.state = state;
        if state.is_terminal() {
            p.finished = Some(Instant::now());
            p.timings.total = self.submitted.elapsed();
            // work still running on it holds its own reference
            self.statement.lock().unwrap().take();
        }
        self.watch.send_replace(state);
    }

    pub fn finished_at(&self) -> Option<Instant> {
        self.progress.lock().unwrap().finished
    }

    /// The proof bytes (192 B per partition) of a finished job, or the error it failed with.
    pub fn outcome(&self) -> Option<Result<Vec<u8>, SnarkError>> {
        let p = self.progress.lock().unwrap();
        match p.state {
            JobState::Done => p.proof_bytes.clone().map(Ok),
            JobState::Failed | JobState::Cancelled => p.error.clone().map(Err),
            _ => None,
        }
    }

    pub fn info(&self) -> JobInfo {
        let p = self.progress.lock().unwrap();
        let mut timings = p.timings;
        if !p.state.is_terminal() {
            timings.total = self.submitted.elapsed();
            if p.started.is_none() {
                timings.queue = self.submitted.elapsed();
            }
        }
        JobInfo {
            job_id: self.id.clone(),
            request_id: self.request_id.clone(),
            kind: self.kind,
            priority: self.priority,
            state: p.state,
            stage: p.stage,
            partitions: self.partitions(),
            partitions_done: p.partitions_done,
            device: p.device.clone(),
            submitted_at_unix_ms: self
                .submitted_at
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            timings,
            error: p.error.as_ref().map(JobError::from),
        }
    }
}
