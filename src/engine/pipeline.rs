//! The hand-off between the stages: the shared state that the synthesis stage
//! ([`super::synthesis`]), the proving stage ([`super::proving`]) and assembly
//! ([`super::assembly`]) work on, the worker threads, and a job's failure path.
//!
//! Two rules from DESIGN.md are enforced across it. Memory: a budget reservation is taken before
//! synthesis and released only as the backend frees each buffer. Backpressure: each synthesis
//! worker needs a lookahead slot, and slots (≥ the synthesis parallelism per device) are given
//! back when a device takes the witness, so synthesis overlaps proving without piling up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::budget::{Budget, Reservation};
use super::gate::OrderedGate;
use super::job::{Job, JobState, Stage};
use super::metrics::Metrics;
use super::proving::Device;
use super::scheduler::PriorityQueue;
use super::{EngineSettings, Verifier};
use crate::error::{ErrorCode, SnarkError};
use crate::groth16::{ProvingBackend, Witness};
use crate::srs::{CircuitId, Srs, SrsSource};

/// One circuit (partition) of a job, on its way through the stages.
pub(crate) struct WorkItem {
    pub job: Arc<Job>,
    pub partition: usize,
    /// Devices that already failed this item; it is not sent to them again.
    pub exclude: Vec<usize>,
    /// Devices this item ran out of memory on once (a second time there excludes the device).
    pub out_of_memory: Vec<usize>,
}

/// A synthesized witness waiting for its device, with the budget it holds.
pub(crate) struct Synthesized {
    pub item: WorkItem,
    pub witness: Witness,
    pub reservation: Reservation,
    pub srs: Arc<Srs>,
    /// The lookahead slot this witness holds until a device takes it; priority-lane witnesses
    /// hold none.
    pub slot: Option<LookaheadSlot>,
}


/// One taken lookahead slot; dropping it gives the slot back, so no path can return it twice.
pub(crate) struct LookaheadSlot(pub Arc<Lookahead>);

impl Drop for LookaheadSlot {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Counts witnesses that are being synthesized or wait for a device: the lookahead.
pub(crate) struct Lookahead {
    pub limit: usize,
    pub used: Mutex<usize>,
    pub freed: Condvar,
    pub peak: AtomicUsize,
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
    /// Each circuit's precompiled record (engine/precompile.rs).
    pub records: super::precompile::Records,
    /// The threads synthesis forks run on ([`crate::groth16::WitnessCs::fork_map`]): a pool per
    /// ordinary synthesis worker, in worker order, apart from rayon's global pool. The GPU stage
    /// copies witnesses into pinned memory on the global pool, and those copies must not queue
    /// behind minutes of synthesis work (they did: a 32 GiB PoRep partition's device stage took
    /// 6.7 s in the engine against 1.6 s alone). Each pool has a thread per CPU (fewer on big
    /// hosts: [`fork_pool_threads`]), and the CPU gate below lets no more fork items run than
    /// there are CPUs, the most urgent partition's first; a pool of its own per worker lets a
    /// worker's threads wait at the gate without holding up another worker's items. Their threads run [`SYNTHESIS_NICE`] steps nicer than the daemon,
    /// so that when the CPUs are all busy the copies that feed the GPU and the urgent forks go first.
    pub fork_pools: Vec<rayon::ThreadPool>,
    /// Critical and high priority items' pool, ungated and not niced: a WinningPoSt's forks
    /// would otherwise wait behind a PoRep's.
    pub urgent_pool: rayon::ThreadPool,
    /// One permit per CPU for the ordinary pools' fork items (engine/gate.rs).
    pub cpu_gate: Arc<OrderedGate<GateKey>>,
    /// One per worker thread, in the order [`Pipeline::spawn_workers`] starts them.
    pub beats: Mutex<Vec<Arc<Beat>>>,
}

/// A worker thread's sign of life, for the watchdog. An idle worker beats each time its wait on a
/// queue times out (every 100 ms at most), so one that stops beating is stuck on a lock; a busy
/// one (synthesizing or proving, which may take minutes) is judged only by its thread being alive.
pub(crate) struct Beat {
    pub thread: String,
    born: Instant,
    last_ms: AtomicU64,
    busy: AtomicBool,
}

impl Beat {
    fn new(thread: String) -> Arc<Beat> {
        Arc::new(Beat { thread, born: Instant::now(), last_ms: AtomicU64::new(0), busy: AtomicBool::new(false) })
    }
    pub fn idle(&self) {
        self.last_ms.store(self.born.elapsed().as_millis() as u64, Ordering::Relaxed);
        self.busy.store(false, Ordering::Relaxed);
    }
    pub fn busy(&self) {
        self.busy.store(true, Ordering::Relaxed);
    }
    /// How long an idle worker has gone without a beat; `None` while it works.
    pub fn silent_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::Relaxed) {
            return None;
        }
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        Some(self.born.elapsed().saturating_sub(last))
    }
}


/// How much nicer than the daemon ordinary synthesis threads run (each step is ~1.25× less CPU
/// weight, so 5 gives the GPU's copies and urgent forks about three times the share).
const SYNTHESIS_NICE: i32 = 5;

/// Makes the calling thread `steps` nicer than it is (Linux priorities are per thread); a failure
/// leaves it as it was, which costs only the preference.
fn lower_priority(steps: i32) {
    if steps == 0 {
        return;
    }
    // SAFETY: gettid, getpriority and setpriority only read or set this thread's scheduling value.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if libc::setpriority(libc::PRIO_PROCESS, tid, now + steps) != 0 {
            tracing::debug!("cannot lower a synthesis thread's priority: {}", std::io::Error::last_os_error());
        }
    }
}

/// Threads enough for a 32 GiB PoRep partition's 18 challenges, or a SnapDeals partition's
/// chunks on a third of a 96-core host, each on a core of its own.
const MIN_FORK_POOL_THREADS: usize = 32;

/// Threads in each of the `pools` ordinary fork pools on `cpus` CPUs. A thread per CPU lets one
/// partition take every core, but on a big host whose budget allows many partitions at once it
/// adds up: 192 CPUs and 70 pools would be 13,440 threads, past systemd's default TasksMax (4,915
/// where pid_max is 32768). So each pool gets its share of twice the CPUs, at least
/// [`MIN_FORK_POOL_THREADS`] and at most a thread per CPU. The gate lets no more items run than
/// there are CPUs, so the cap costs only when a partition has more items than its pool's threads
/// while other pools idle.
pub(crate) fn fork_pool_threads(cpus: usize, pools: usize) -> usize {
    let cpus = cpus.max(1);
    let share = (2 * cpus).div_ceil(pools.max(1));
    cpus.min(share.max(MIN_FORK_POOL_THREADS))
}

/// A rayon pool of `threads` threads named `name-i`, `nice` steps nicer than the daemon.
fn synthesis_pool(name: String, threads: usize, nice: i32) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .start_handler(move |_| lower_priority(nice))
        .build()
        .unwrap_or_else(|e| panic!("cannot start a synthesis pool of {threads} threads ({e}); check the unit's TasksMax= and ulimit -u"))
}

/// Where a partition's fork items queue at the CPU gate: priority, then the job's submission,
/// then the partition; the smallest goes first.
pub(crate) type GateKey = (super::scheduler::Priority, Instant, usize);

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
        let devices: Vec<_> =
            backends.into_iter().enumerate().map(|(index, backend)| Arc::new(Device::new(index, backend))).collect();
        let lookahead_limit = lookahead_per_device.max(parallelism) * devices.len().max(1);
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
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
            records: Default::default(),
            fork_pools: (0..parallelism.max(1))
                .map(|i| synthesis_pool(format!("synth-{i}-fork"), fork_pool_threads(cpus, parallelism), SYNTHESIS_NICE))
                .collect(),
            urgent_pool: synthesis_pool("synth-urgent".into(), cpus, 0),
            cpu_gate: OrderedGate::new(cpus),
            srs,
            verifier,
            metrics,
            stopping: AtomicBool::new(false),
            parallelism,
            beats: Mutex::new(Vec::new()),
        })
    }

    /// Starts the synthesis pool (plus one worker reserved for critical/high priority, so a
    /// WinningPoSt never waits behind long PoRep syntheses) and one worker per device.
    pub fn spawn_workers(self: &Arc<Self>) -> Vec<std::thread::JoinHandle<()>> {
        let mut handles = Vec::new();
        type Work = Box<dyn FnOnce(Arc<Pipeline>, &Beat) + Send>;
        let mut spawn = |name: String, work: Work| {
            let beat = Beat::new(name.clone());
            self.beats.lock().unwrap().push(beat.clone());
            let p = self.clone();
            let handle = std::thread::Builder::new().name(name).spawn(move || work(p, &beat)).expect("spawn engine worker");
            handles.push(handle);
        };
        for i in 0..self.parallelism {
            spawn(format!("synth-{i}"), Box::new(move |p, beat| p.synthesis_worker(Some(i), beat)));
        }
        spawn("synth-prio".into(), Box::new(|p, beat| p.synthesis_worker(None, beat)));
        for d in &self.devices {
            let d = d.clone();
            spawn(format!("prove-{}", d.index), Box::new(move |p, beat| p.device_worker(d, beat)));
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

    pub(crate) fn stopped(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
    /// Takes the parameters and precompiled records resident now out of the budget (when it
    /// follows them).
    pub fn params_changed(&self) {
        self.budget.set_params(self.srs.resident_bytes() + self.records.bytes());
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


pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

#[cfg(test)]
mod tests {
    use super::fork_pool_threads;

    #[test]
    fn fork_pools_keep_a_thread_per_cpu_until_their_threads_add_up_on_big_hosts() {
        // the measured configuration (16 CPUs, 7 workers) and small hosts: a thread per CPU
        assert_eq!(fork_pool_threads(16, 7), 16);
        assert_eq!(fork_pool_threads(2, 1), 2);
        assert_eq!(fork_pool_threads(64, 2), 64);
        // 192 CPUs and 70 partitions at once: 32 a pool, 2,240 in all instead of 13,440
        assert_eq!(fork_pool_threads(192, 70), 32);
        // a pool's share of twice the CPUs when that is more than the floor
        assert_eq!(fork_pool_threads(192, 8), 48);
        for (cpus, pools) in [(1, 1), (16, 16), (96, 96), (192, 192), (384, 30)] {
            let t = fork_pool_threads(cpus, pools);
            assert!(t >= 1 && t <= cpus, "{cpus} cpus, {pools} pools: {t}");
            assert!(t * pools >= cpus, "{cpus} cpus, {pools} pools: {t} each cannot keep every CPU busy");
        }
    }
}
