//! The two stages and their hand-off: a CPU pool synthesizes work items into witnesses, and one
//! proving worker per device turns them into partition proofs; a job's last proof triggers
//! assembly and verification off the device's thread.
//!
//! Two rules from DESIGN.md are enforced here. Memory: a budget reservation is taken before
//! synthesis and released only as the backend frees each buffer. Backpressure: each synthesis
//! worker needs a lookahead slot, and slots (≥ the synthesis parallelism per device) are given
//! back when a device takes the witness, so synthesis overlaps proving without piling up.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use blstrs::Bls12;

use super::budget::{Budget, Reservation};
use super::job::{Job, JobState, Stage};
use super::metrics::Metrics;
use super::scheduler::{Place, Priority, PriorityQueue};
use super::{EngineSettings, SrsSource, Verifier};
use crate::error::{ErrorCode, SnarkError};
use crate::groth16::{BackendError, DeviceMemory, Proof, ProvingBackend, Witness};
use crate::proofs::Statement;
use crate::srs::{CircuitId, Srs};
use crate::units::Bytes;

/// One circuit (partition) of a job, on its way through the stages.
pub(crate) struct WorkItem {
    pub job: Arc<Job>,
    pub partition: usize,
    /// Devices that already failed this item; it is not sent to them again.
    pub exclude: Vec<usize>,
}

/// A synthesized witness waiting for its device, with the budget it holds.
pub(crate) struct Synthesized {
    item: WorkItem,
    witness: Witness,
    reservation: Reservation,
    srs: Arc<Srs>,
    /// The lookahead slot this witness holds until a device takes it; priority-lane witnesses
    /// hold none.
    slot: Option<LookaheadSlot>,
}

/// What Status shows per device.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceStatus {
    pub index: usize,
    pub name: String,
    pub queued: usize,
    pub current_job: Option<String>,
    pub degraded: Option<String>,
    pub proofs: u64,
    pub busy_seconds: f64,
    /// Free and total device memory; absent for the CPU backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<DeviceMemory>,
}

pub(crate) struct Device {
    pub index: usize,
    pub backend: Arc<dyn ProvingBackend>,
    pub name: String,
    queue: Mutex<PriorityQueue<Synthesized>>,
    ready: Condvar,
    current: Mutex<Option<String>>,
    /// Whether the device thread holds the partition after the current one (still queued, for
    /// Status and routing).
    on_deck: AtomicBool,
    degraded: Mutex<Option<String>>,
    proofs: AtomicU64,
    busy_micros: AtomicU64,
}

impl Device {
    fn is_degraded(&self) -> bool {
        self.degraded.lock().unwrap().is_some()
    }
    fn queued(&self) -> usize {
        self.queue.lock().unwrap().len() + usize::from(self.on_deck.load(Ordering::Relaxed))
    }
    fn load(&self) -> usize {
        self.queued() + usize::from(self.current.lock().unwrap().is_some())
    }
    pub fn status(&self) -> DeviceStatus {
        DeviceStatus {
            index: self.index,
            name: self.name.clone(),
            queued: self.queued(),
            current_job: self.current.lock().unwrap().clone(),
            degraded: self.degraded.lock().unwrap().clone(),
            proofs: self.proofs.load(Ordering::Relaxed),
            busy_seconds: self.busy_micros.load(Ordering::Relaxed) as f64 / 1e6,
            memory: self.backend.memory(),
        }
    }
}

/// One taken lookahead slot; dropping it gives the slot back, so no path can return it twice.
pub(crate) struct LookaheadSlot(Arc<Lookahead>);

impl Drop for LookaheadSlot {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Counts witnesses that are being synthesized or wait for a device: the lookahead.
pub(crate) struct Lookahead {
    limit: usize,
    used: Mutex<usize>,
    freed: Condvar,
    peak: AtomicUsize,
}

impl Lookahead {
    fn release(&self) {
        *self.used.lock().unwrap() -= 1;
        self.freed.notify_all();
    }
    pub fn used(&self) -> usize {
        *self.used.lock().unwrap()
    }
    pub fn limit(&self) -> usize {
        self.limit
    }
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

pub(crate) struct Pipeline {
    pub settings: Arc<std::sync::RwLock<EngineSettings>>,
    pub synth_queue: Mutex<PriorityQueue<WorkItem>>,
    pub synth_ready: Condvar,
    pub devices: Vec<Arc<Device>>,
    pub lookahead: Arc<Lookahead>,
    pub budget: Budget,
    pub srs: Arc<dyn SrsSource>,
    pub verifier: Verifier,
    pub metrics: Arc<Metrics>,
    pub stopping: AtomicBool,
    pub parallelism: usize,
    /// The largest witness measured per circuit; reservations grow to follow it.
    pub measured: Mutex<HashMap<CircuitId, u64>>,
}

/// What a partition reserves once its circuit's largest witness is `peak` bytes: 1/8 headroom.
pub(crate) fn with_headroom(peak: u64) -> Bytes {
    Bytes(peak + (peak >> 3))
}

/// Logs one stage change of a job as one journal entry with the filterable fields.
pub(crate) fn log_stage(job: &Job, stage: Stage, device: &str, detail: &str) {
    tracing::info!(
        job_id = %job.id,
        kind = job.kind.name(),
        stage = stage.name(),
        device = device,
        job_priority = job.priority.name(),
        "job {} {}: {}{}",
        job.id,
        job.kind,
        stage.name(),
        if detail.is_empty() { String::new() } else { format!(" ({detail})") }
    );
}

impl Pipeline {
    #[allow(clippy::too_many_arguments)] // one per shared service the pipeline is wired to
    pub fn new(
        settings: Arc<std::sync::RwLock<EngineSettings>>,
        backends: Vec<Arc<dyn ProvingBackend>>,
        srs: Arc<dyn SrsSource>,
        verifier: Verifier,
        budget: Budget,
        parallelism: usize,
        lookahead_per_device: usize,
        metrics: Arc<Metrics>,
    ) -> Arc<Pipeline> {
        let devices: Vec<_> = backends
            .into_iter()
            .enumerate()
            .map(|(index, backend)| {
                Arc::new(Device {
                    index,
                    name: backend.name(),
                    backend,
                    queue: Mutex::new(PriorityQueue::default()),
                    ready: Condvar::new(),
                    current: Mutex::new(None),
                    on_deck: AtomicBool::new(false),
                    degraded: Mutex::new(None),
                    proofs: AtomicU64::new(0),
                    busy_micros: AtomicU64::new(0),
                })
            })
            .collect();
        let lookahead_limit = lookahead_per_device.max(parallelism) * devices.len().max(1);
        Arc::new(Pipeline {
            settings,
            synth_queue: Mutex::new(PriorityQueue::default()),
            synth_ready: Condvar::new(),
            devices,
            lookahead: Arc::new(Lookahead {
                limit: lookahead_limit,
                used: Mutex::new(0),
                freed: Condvar::new(),
                peak: AtomicUsize::new(0),
            }),
            budget,
            measured: Mutex::new(HashMap::new()),
            srs,
            verifier,
            metrics,
            stopping: AtomicBool::new(false),
            parallelism,
        })
    }

    /// Starts the synthesis pool (plus one worker reserved for critical/high priority, so a
    /// WinningPoSt never waits behind long PoRep syntheses) and one worker per device.
    pub fn spawn_workers(self: &Arc<Self>) -> Vec<std::thread::JoinHandle<()>> {
        let mut handles = Vec::new();
        for i in 0..self.parallelism {
            let p = self.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("synth-{i}"))
                    .spawn(move || p.synthesis_worker(false))
                    .expect("spawn synthesis worker"),
            );
        }
        let p = self.clone();
        handles.push(
            std::thread::Builder::new()
                .name("synth-prio".into())
                .spawn(move || p.synthesis_worker(true))
                .expect("spawn priority synthesis worker"),
        );
        for d in &self.devices {
            let p = self.clone();
            let d = d.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("prove-{}", d.index))
                    .spawn(move || p.device_worker(d))
                    .expect("spawn device worker"),
            );
        }
        handles
    }

    pub fn enqueue(&self, item: WorkItem) {
        let priority = item.job.priority;
        self.synth_queue.lock().unwrap().push(priority, item);
        self.synth_ready.notify_all();
    }

    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.budget.close();
        self.synth_ready.notify_all();
        self.lookahead.freed.notify_all();
        for d in &self.devices {
            d.ready.notify_all();
        }
    }

    fn stopped(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Takes the next item this worker may run. Priority workers take only critical/high items
    /// and do not need a lookahead slot (their count is bounded by the number of such workers).
    fn next_item(&self, priority_lane: bool) -> Option<(WorkItem, Option<LookaheadSlot>)> {
        let mut q = self.synth_queue.lock().unwrap();
        loop {
            if self.stopped() {
                return None;
            }
            if priority_lane {
                if let Some((_, item)) = q.pop_where(|p| p <= Priority::High) {
                    return Some((item, None));
                }
            } else if !q.is_empty() {
                let mut used = self.lookahead.used.lock().unwrap();
                if *used < self.lookahead.limit {
                    let (_, item) = q.pop().expect("queue not empty");
                    *used += 1;
                    self.lookahead.peak.fetch_max(*used, Ordering::Relaxed);
                    return Some((item, Some(LookaheadSlot(self.lookahead.clone()))));
                }
                drop(used);
                // Wait for a device to take a witness; re-check the queue after.
                drop(q);
                let used = self.lookahead.used.lock().unwrap();
                let (used, _) = self.lookahead.freed.wait_timeout(used, Duration::from_millis(50)).unwrap();
                // Let go of the count before taking the queue: the branch above takes the queue
                // first and then the count, so holding both the other way round deadlocks.
                drop(used);
                q = self.synth_queue.lock().unwrap();
                continue;
            }
            q = self.synth_ready.wait_timeout(q, Duration::from_millis(100)).unwrap().0;
        }
    }

    fn synthesis_worker(self: Arc<Self>, priority_lane: bool) {
        while let Some((item, slot)) = self.next_item(priority_lane) {
            self.synthesize_one(item, slot);
        }
    }

    /// Synthesizes one item and hands it, with its lookahead slot, to a device; on any failure
    /// the slot drops here.
    fn synthesize_one(&self, item: WorkItem, slot: Option<LookaheadSlot>) {
        let job = item.job.clone();
        if job.should_stop() {
            return;
        }
        self.mark_running(&job);

        let load_started = Instant::now();
        let srs = match self.srs.get(&job.statement.circuit()) {
            Ok((srs, load)) => {
                if !load.is_zero() {
                    log_stage(&job, Stage::ParamsLoad, "", &format!("{:.1} s", load.as_secs_f64()));
                }
                job.progress.lock().unwrap().timings.params_load += load_started.elapsed();
                srs
            }
            Err(e) => {
                self.fail(&job, e);
                return;
            }
        };

        let estimate = self.estimate(job.statement.as_ref());
        let mut reservation = match self.budget.reserve(estimate, &|| job.should_stop()) {
            Ok(r) => r,
            Err(e) => {
                if e.code != ErrorCode::Cancelled {
                    self.fail(&job, e);
                }
                return;
            }
        };
        if job.should_stop() {
            return;
        }

        {
            let mut p = job.progress.lock().unwrap();
            p.stage = Stage::Synthesis;
        }
        log_stage(&job, Stage::Synthesis, "", &format!("partition {}/{}", item.partition + 1, job.partitions()));
        let started = Instant::now();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| job.statement.synthesize(item.partition)));
        let took = started.elapsed();
        self.metrics.observe_stage(job.kind, Stage::Synthesis, took);
        let witness = match result {
            Ok(Ok(w)) => w,
            Ok(Err(e)) => {
                self.fail(&job, e);
                return;
            }
            Err(panic) => {
                self.fail(&job, SnarkError::internal(format!("synthesis panicked: {}", panic_message(&panic))));
                return;
            }
        };
        let bytes = witness.bytes();
        reservation.set_in_use(Bytes(bytes));
        {
            let mut measured = self.measured.lock().unwrap();
            let peak = measured.entry(job.statement.circuit()).or_insert(0);
            *peak = (*peak).max(bytes);
        }
        job.progress.lock().unwrap().timings.synthesis += took;

        let Some(device) = self.pick_device(&item.exclude) else {
            self.fail(&job, SnarkError::internal("no healthy proving device is left"));
            return;
        };
        let priority = job.priority;
        device.queue.lock().unwrap().push(priority, Synthesized { item, witness, reservation, srs, slot });
        device.ready.notify_all();
    }

    /// The bytes one partition of `statement` reserves: its circuit's size-based estimate, raised
    /// to the largest witness measured for that circuit plus 1/8 when the estimate fell short. It
    /// is never lowered below the size-based figure, so a measurement cannot under-reserve.
    pub fn estimate(&self, statement: &dyn Statement) -> Bytes {
        let sized = statement.witness_bytes();
        match self.measured.lock().unwrap().get(&statement.circuit()) {
            Some(&peak) => Bytes(sized.get().max(with_headroom(peak).get())),
            None => sized,
        }
    }

    fn pick_device(&self, exclude: &[usize]) -> Option<Arc<Device>> {
        self.devices
            .iter()
            .filter(|d| !exclude.contains(&d.index) && !d.is_degraded())
            .min_by_key(|d| d.load())
            .cloned()
    }

    fn mark_running(&self, job: &Arc<Job>) {
        let mut p = job.progress.lock().unwrap();
        if p.started.is_none() {
            p.started = Some(Instant::now());
            p.timings.queue = job.submitted.elapsed();
            job.set_state(&mut p, JobState::Running);
            drop(p);
            self.metrics.observe_stage(job.kind, Stage::Queued, job.submitted.elapsed());
        }
    }

    fn device_worker(self: Arc<Self>, device: Arc<Device>) {
        // The partition that will follow, taken from the queue while the one before it is proved
        // so that the backend can move its inputs to the device meanwhile. It keeps its place:
        // a more urgent partition that arrives meanwhile still goes first, and it keeps its
        // lookahead slot until its own proof starts.
        let mut on_deck: Option<(Place, Synthesized)> = None;
        loop {
            // the partition on deck, unless a more urgent one arrived meanwhile: then it goes back
            let kept = on_deck.take().and_then(|(place, s)| {
                let mut q = device.queue.lock().unwrap();
                if q.first_before(place) {
                    q.put_back(place, s);
                    None
                } else {
                    Some(s)
                }
            });
            let next = kept.or_else(|| {
                let mut q = device.queue.lock().unwrap();
                loop {
                    if let Some((_, s)) = q.pop() {
                        break Some(s);
                    }
                    if self.stopped() {
                        break None;
                    }
                    q = device.ready.wait_timeout(q, Duration::from_millis(100)).unwrap().0;
                }
            });
            device.on_deck.store(false, Ordering::Relaxed);
            let Some(mut s) = next else { return };
            // The device owns the witness now; its slot, if it held one, goes to the next synthesis.
            drop(s.slot.take());
            on_deck = device.queue.lock().unwrap().pop_placed();
            device.on_deck.store(on_deck.is_some(), Ordering::Relaxed);
            self.prove_one(&device, s, on_deck.as_ref().map(|(_, n)| &n.witness));
        }
    }

    fn prove_one(&self, device: &Arc<Device>, s: Synthesized, next: Option<&Witness>) {
        let Synthesized { item, witness, reservation, srs, .. } = s;
        let job = item.job.clone();
        if job.should_stop() {
            return;
        }
        *device.current.lock().unwrap() = Some(job.id.to_string());
        {
            let mut p = job.progress.lock().unwrap();
            p.stage = Stage::Prove;
            p.device = Some(device.name.clone());
        }
        log_stage(&job, Stage::Prove, &device.name, &format!("partition {}/{}", item.partition + 1, job.partitions()));
        let reservation = Mutex::new(reservation);
        let release = |bytes: u64| reservation.lock().unwrap().release(bytes);
        let started = Instant::now();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| device.backend.prove_then(witness, &srs, &release, next)));
        let took = started.elapsed();
        drop(reservation);
        *device.current.lock().unwrap() = None;
        device.busy_micros.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        self.metrics.observe_stage(job.kind, Stage::Prove, took);

        match result {
            Ok(Ok((proof, t))) => {
                device.proofs.fetch_add(1, Ordering::Relaxed);
                let all_done = {
                    let mut p = job.progress.lock().unwrap();
                    p.timings.prove += took;
                    p.timings.prove_ntt += t.ntt;
                    p.timings.prove_msm += t.msm;
                    p.proofs[item.partition] = Some(proof);
                    p.partitions_done += 1;
                    p.partitions_done == job.partitions()
                };
                if all_done {
                    // Assembly and verification run off the device thread (DESIGN rule 3).
                    let metrics = self.metrics.clone();
                    let verifier = self.verifier.clone();
                    let verify = self.settings.read().unwrap().verify;
                    std::thread::spawn(move || finish(&job, &srs, verify, &verifier, &metrics));
                }
            }
            Ok(Err(BackendError::Device { device: name, call, reason })) => {
                let why = format!("{call} failed: {reason}");
                tracing::error!(device = %name, "device {name} degraded: {why}");
                *device.degraded.lock().unwrap() = Some(why.clone());
                self.retry_elsewhere(item, device.index, &why);
            }
            Ok(Err(e)) => self.fail(&job, SnarkError::internal(format!("proving failed on {}: {e}", device.name))),
            Err(panic) => self.fail(
                &job,
                SnarkError::internal(format!("proving backend {} panicked: {}", device.name, panic_message(&panic))),
            ),
        }
    }

    /// Sends an item that failed on a device back to synthesis, bound for another device.
    fn retry_elsewhere(&self, mut item: WorkItem, failed: usize, why: &str) {
        item.exclude.push(failed);
        if self.pick_device(&item.exclude).is_none() {
            let job = item.job.clone();
            self.fail(&job, SnarkError::internal(format!("device failed ({why}) and no other device is healthy")));
            return;
        }
        log_stage(&item.job, Stage::Queued, "", &format!("retrying partition {} after device failure", item.partition + 1));
        self.metrics.retries.fetch_add(1, Ordering::Relaxed);
        self.enqueue(item);
    }

    pub fn fail(&self, job: &Arc<Job>, err: SnarkError) {
        fail_job(job, err, &self.metrics);
    }
}

/// Marks a job failed (or cancelled) unless it already ended; wakes its waiters.
pub(crate) fn fail_job(job: &Job, err: SnarkError, metrics: &Metrics) {
    let mut p = job.progress.lock().unwrap();
    if p.state.is_terminal() {
        return;
    }
    let state = if err.code == ErrorCode::Cancelled { JobState::Cancelled } else { JobState::Failed };
    tracing::warn!(
        job_id = %job.id,
        kind = job.kind.name(),
        stage = p.stage.name(),
        device = p.device.as_deref().unwrap_or(""),
        "job {} {} {}: {}",
        job.id,
        job.kind,
        state.name(),
        err
    );
    p.error = Some(err.clone());
    job.set_state(&mut p, state);
    drop(p);
    metrics.count_outcome(job.kind, err.code.name());
}

/// Assembles the partition proofs in order, verifies them and completes the job.
fn finish(job: &Arc<Job>, srs: &Srs, verify: bool, verifier: &Verifier, metrics: &Metrics) {
    let proofs: Vec<Proof<Bls12>> = {
        let mut p = job.progress.lock().unwrap();
        p.stage = Stage::Verify;
        p.proofs.iter_mut().map(|x| x.take().expect("every partition proved")).collect()
    };
    if verify {
        log_stage(job, Stage::Verify, "", "");
        let started = Instant::now();
        let ok = verifier(job.statement.as_ref(), srs, &proofs);
        let took = started.elapsed();
        metrics.observe_stage(job.kind, Stage::Verify, took);
        job.progress.lock().unwrap().timings.verify = took;
        match ok {
            Ok(true) => {}
            Ok(false) => {
                return fail_job(
                    job,
                    SnarkError::new(
                        ErrorCode::VerificationFailed,
                        "the computed proof does not verify against the verifying key; no proof is returned",
                    ),
                    metrics,
                )
            }
            Err(e) => return fail_job(job, e, metrics),
        }
    }
    let mut bytes = Vec::with_capacity(192 * proofs.len());
    for proof in &proofs {
        if let Err(e) = proof.write(&mut bytes) {
            return fail_job(job, SnarkError::internal(format!("cannot serialize proof: {e}")), metrics);
        }
    }
    let mut p = job.progress.lock().unwrap();
    if p.state.is_terminal() {
        return;
    }
    p.proof_bytes = Some(bytes);
    p.stage = Stage::Done;
    job.set_state(&mut p, JobState::Done);
    let t = p.timings;
    drop(p);
    metrics.count_outcome(job.kind, "ok");
    metrics.observe_stage(job.kind, Stage::Done, t.total);
    tracing::info!(
        job_id = %job.id,
        kind = job.kind.name(),
        stage = Stage::Done.name(),
        device = "",
        "job {} {} done in {:.3} s (queue {:.3}, params {:.3}, synthesis {:.3}, prove {:.3} [ntt {:.3}, msm {:.3}], verify {:.3})",
        job.id,
        job.kind,
        t.total.as_secs_f64(),
        t.queue.as_secs_f64(),
        t.params_load.as_secs_f64(),
        t.synthesis.as_secs_f64(),
        t.prove.as_secs_f64(),
        t.prove_ntt.as_secs_f64(),
        t.prove_msm.as_secs_f64(),
        t.verify.as_secs_f64(),
    );
}

pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
