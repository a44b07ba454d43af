//! The proving stage: one worker thread per device (a GPU or a CPU backend) takes synthesized
//! witnesses from its own priority queue and turns each into a partition proof. The backend
//! releases the witness's budget buffer by buffer as it frees them (DESIGN rule 1). A device
//! error degrades that device and sends the partition back to synthesis for another one; the
//! job's last proof starts assembly off the device's thread.

use std::panic::AssertUnwindSafe;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::job::Stage;
use super::pipeline::{log_stage, panic_message, Beat, Pipeline, Synthesized, WorkItem};
use super::scheduler::{Place, Priority, PriorityQueue};
use crate::error::SnarkError;
use crate::srs::{CircuitId, Srs};
use crate::groth16::{BackendError, DeviceMemory, Interlude, Precompiled, Proof, ProveTimings, ProvingBackend, ReleaseFn, Witness};
use blstrs::Bls12;

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
    pub queue: Mutex<PriorityQueue<Synthesized>>,
    pub ready: Condvar,
    current: Mutex<Option<String>>,
    /// Whether the device thread holds the partition after the current one (still queued, for
    /// Status and routing).
    on_deck: AtomicBool,
    /// A circuit whose first witness is being synthesized for this device, to move onto it while
    /// the device has nothing else to do ([`ProvingBackend::warm`]).
    warm: Mutex<Option<Warm>>,
    degraded: Mutex<Option<String>>,
    proofs: AtomicU64,
    busy_micros: AtomicU64,
}

/// A circuit's parameters to move onto a device, with the record its witnesses defer to.
type Warm = (Arc<Srs>, Option<Arc<Precompiled>>);

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

impl Device {
    pub(crate) fn new(index: usize, backend: Arc<dyn ProvingBackend>) -> Device {
        Device {
            index,
            name: backend.name(),
            backend,
            queue: Mutex::new(PriorityQueue::default()),
            ready: Condvar::new(),
            current: Mutex::new(None),
            on_deck: AtomicBool::new(false),
            warm: Mutex::new(None),
            degraded: Mutex::new(None),
            proofs: AtomicU64::new(0),
            busy_micros: AtomicU64::new(0),
        }
    }
}

/// An upload of a circuit's bases in partitions' device time: a 32 GiB PoRep's ~47 GB take about
/// as long over PCIe as two of its partitions' device proofs.
const UPLOAD_COST: usize = 2;

impl Pipeline {

    /// The healthy device (not in `exclude`) that will prove a partition of `circuit` soonest:
    /// the least loaded, where a device without the circuit's bases resident counts
    /// [`UPLOAD_COST`] partitions busier, so that a circuit stays on the devices that hold it
    /// unless they are queued deeper than an upload costs.
    pub(crate) fn pick_device(&self, exclude: &[usize], circuit: &CircuitId) -> Option<Arc<Device>> {
        self.healthy(exclude).min_by_key(|d| d.load() + if d.backend.holds(circuit) { 0 } else { UPLOAD_COST }).cloned()
    }

    /// Asks the device that will most likely prove a partition of `srs`'s circuit to move the
    /// bases (and `record`, for deferred witnesses) onto itself meanwhile, unless it holds them.
    pub(crate) fn warm_device(&self, exclude: &[usize], srs: &Arc<Srs>, record: Option<&Arc<Precompiled>>) {
        let Some(device) = self.pick_device(exclude, &srs.id) else { return };
        if !device.backend.holds(&srs.id) {
            *device.warm.lock().unwrap() = Some((srs.clone(), record.cloned()));
            device.ready.notify_all();
        }
    }

    /// Whether every healthy device evaluates A and B from `record` itself, against `srs`, so
    /// that a synthesis may leave them to the device ([`crate::groth16::Fill::Deferred`]).
    pub(crate) fn devices_fill_from(&self, srs: &Srs, record: &Arc<Precompiled>) -> bool {
        let mut devices = self.healthy(&[]).peekable();
        devices.peek().is_some() && devices.all(|d| d.backend.fills_from_record(srs, record))
    }

    fn has_device(&self, exclude: &[usize]) -> bool {
        self.healthy(exclude).next().is_some()
    }

    fn healthy<'a>(&'a self, exclude: &'a [usize]) -> impl Iterator<Item = &'a Arc<Device>> + 'a {
        self.devices.iter().filter(|d| !exclude.contains(&d.index) && !d.is_degraded())
    }


    pub(crate) fn device_worker(self: Arc<Self>, device: Arc<Device>, beat: &Beat) {
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
                    beat.idle();
                    if let Some((_, s)) = q.pop() {
                        break Some(s);
                    }
                    if self.stopped() {
                        break None;
                    }
                    let warm = device.warm.lock().unwrap().take();
                    if let Some((srs, record)) = warm {
                        drop(q);
                        beat.busy();
                        if let Err(e) = device.backend.warm(&srs, record.as_ref()) {
                            tracing::info!(device = %device.name, circuit = %srs.id, "the bases of {} were not moved ahead of its first witness ({e}); its first proof moves them", srs.id);
                        }
                        q = device.queue.lock().unwrap();
                        continue;
                    }
                    q = device.ready.wait_timeout(q, Duration::from_millis(100)).unwrap().0;
                }
            });
            device.on_deck.store(false, Ordering::Relaxed);
            let Some(mut s) = next else { return };
            beat.busy();
            // The device owns the witness now; its slot, if it held one, goes to the next synthesis.
            drop(s.slot.take());
            on_deck = device.queue.lock().unwrap().pop_placed();
            device.on_deck.store(on_deck.is_some(), Ordering::Relaxed);
            self.prove_one(&device, s, on_deck.as_ref().map(|(_, n)| &n.witness));
        }
    }

    /// Proves `s` on `device`. A critical partition that arrives meanwhile is proved between two
    /// of its steps, where the backend can pause (a WinningPoSt then waits for one MSM of a
    /// 32 GiB PoRep partition, not for the whole partition).
    fn prove_one(&self, device: &Arc<Device>, s: Synthesized, next: Option<&Witness>) {
        let paused = Cell::new(Duration::ZERO);
        let pausable = s.item.job.priority != Priority::Critical;
        // named only when a partition is proved in the middle of it
        let (job, partition) = (s.item.job.clone(), s.item.partition);
        let mut urgent = |between: &dyn Interlude| -> bool {
            // read at each pause, so a reload applies to the partition on the device too
            if !pausable || !self.settings.read().unwrap().pause_for_critical {
                return false;
            }
            let mut proved = false;
            loop {
                let taken = {
                    let mut q = device.queue.lock().unwrap();
                    let first_fits = q.iter().next().is_some_and(|(p, first)| p == Priority::Critical && between.fits(&first.witness, &first.srs));
                    if first_fits { q.pop().map(|(_, s)| s) } else { None }
                };
                let Some(urgent) = taken else { break };
                let started = Instant::now();
                let outer = format!("job {}'s partition {}/{}", job.id, partition + 1, job.partitions());
                self.prove_with(device, urgent, Some(&outer), &Cell::new(Duration::ZERO), |w, srs, release| between.prove(w, srs, release));
                paused.set(paused.get() + started.elapsed());
                proved = true;
            }
            proved
        };
        self.prove_with(device, s, None, &paused, |w, srs, release| device.backend.prove_then(w, srs, release, next, &mut urgent));
    }

    /// One partition's proof through `prove`, and what follows it: the job's progress, the
    /// device's counters, assembly after the job's last partition, or the failure's handling.
    /// `paused` is device time spent meanwhile on partitions proved between its steps, which is
    /// not its own; `pausing` names the partition this one is proved in the middle of.
    fn prove_with(
        &self,
        device: &Arc<Device>,
        s: Synthesized,
        pausing: Option<&str>,
        paused: &Cell<Duration>,
        prove: impl FnOnce(Witness, &Srs, ReleaseFn<'_>) -> Result<(Proof<Bls12>, ProveTimings), BackendError>,
    ) {
        let Synthesized { item, witness, reservation, srs, .. } = s;
        let job = item.job.clone();
        if job.should_stop() {
            return;
        }
        let before = device.current.lock().unwrap().replace(job.id.to_string());
        {
            let mut p = job.progress.lock().unwrap();
            p.stage = Stage::Prove;
            p.device = Some(device.name.clone());
        }
        let between = pausing.map(|outer| format!(", between two steps of {outer}")).unwrap_or_default();
        log_stage(&job, Stage::Prove, &device.name, &format!("partition {}/{}{between}", item.partition + 1, job.partitions()));
        let reservation = Mutex::new(reservation);
        let release = |bytes: u64| reservation.lock().unwrap().release(bytes);
        let started = Instant::now();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| prove(witness, &srs, &release)));
        let took = started.elapsed().saturating_sub(paused.get());
        drop(reservation);
        *device.current.lock().unwrap() = before;
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
                    std::thread::spawn(move || super::assembly::finish(&job, &srs, verify, &verifier, &metrics));
                }
            }
            Ok(Err(BackendError::Device { device: name, call, reason })) => {
                let why = format!("{call} failed: {reason}");
                tracing::error!(device = %name, "device {name} degraded: {why}");
                *device.degraded.lock().unwrap() = Some(why.clone());
                self.retry_elsewhere(item, device.index, &why);
            }
            // beside a paused proof, memory is short only for now: not the device's fault
            Ok(Err(BackendError::OutOfMemory { .. })) if pausing.is_some() => {
                self.requeue(item, "after running out of device memory beside a paused partition");
            }
            Ok(Err(e @ BackendError::OutOfMemory { .. })) => self.retry_after_out_of_memory(item, device.index, &e.to_string()),
            Ok(Err(e)) => self.fail(&job, SnarkError::internal(format!("proving failed on {}: {e}", device.name))),
            Err(panic) => self.fail(
                &job,
                SnarkError::internal(format!("proving backend {} panicked: {}", device.name, panic_message(&panic))),
            ),
        }
    }

    /// An out-of-memory is not a device fault: the device stays healthy and the backend has freed
    /// its cache, so the item goes back to synthesis once more for any device; a second one on
    /// the same device sends it elsewhere, and with nowhere left the job fails saying so.
    fn retry_after_out_of_memory(&self, mut item: WorkItem, device: usize, why: &str) {
        if item.out_of_memory.contains(&device) {
            item.exclude.push(device);
            if !self.has_device(&item.exclude) {
                let job = item.job.clone();
                let msg = format!("partition {} does not fit in device memory ({why}), twice, and no other device is left", item.partition + 1);
                self.fail(&job, SnarkError::internal(msg));
                return;
            }
        } else {
            item.out_of_memory.push(device);
        }
        tracing::warn!(job_id = %item.job.id, "partition {} ran out of device memory, retrying: {why}", item.partition + 1);
        self.requeue(item, "after running out of device memory");
    }

    /// Sends an item back to synthesis, logged as a retry.
    fn requeue(&self, item: WorkItem, after: &str) {
        log_stage(&item.job, Stage::Queued, "", &format!("retrying partition {} {after}", item.partition + 1));
        self.metrics.retries.fetch_add(1, Ordering::Relaxed);
        self.enqueue(item);
    }

    /// Sends an item that failed on a device back to synthesis, bound for another device.
    fn retry_elsewhere(&self, mut item: WorkItem, failed: usize, why: &str) {
        item.exclude.push(failed);
        if !self.has_device(&item.exclude) {
            let job = item.job.clone();
            self.fail(&job, SnarkError::internal(format!("device failed ({why}) and no other device is healthy")));
            return;
        }
        self.requeue(item, "after device failure");
    }

}
