//! The synthesis stage: a CPU pool takes work items in priority order, loads the circuit's
//! parameters, reserves the witness's bytes in the budget, runs the circuit into a [`Witness`] and
//! hands it to the least loaded healthy device. One extra worker serves only critical and high
//! priority items, so a WinningPoSt never waits behind long PoRep syntheses.
//!
//! Backpressure (DESIGN rule 2): a normal worker needs a lookahead slot before it starts, and the
//! slot goes back when a device takes the witness, so synthesis overlaps proving without piling up.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::job::{Job, JobState, Stage};
use super::pipeline::{log_stage, panic_message, Beat, LookaheadSlot, Pipeline, Synthesized, WorkItem};
use super::scheduler::Priority;
use crate::error::{ErrorCode, SnarkError};
use crate::groth16::Fill;
use crate::proofs::Statement;
use crate::units::Bytes;

/// What a partition reserves once its circuit's largest witness is `peak` bytes: 1/8 headroom.
pub(crate) fn with_headroom(peak: u64) -> Bytes {
    Bytes(peak + (peak >> 3))
}

impl Pipeline {

    /// Takes the next item this worker may run. Priority workers take only critical/high items
    /// and do not need a lookahead slot (their count is bounded by the number of such workers).
    fn next_item(&self, priority_lane: bool, beat: &Beat) -> Option<(WorkItem, Option<LookaheadSlot>)> {
        let mut q = self.synth_queue.lock().unwrap();
        loop {
            beat.idle();
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

    /// An ordinary worker (`Some` of its index, which names its fork pool) or the priority lane's.
    pub(crate) fn synthesis_worker(self: Arc<Self>, worker: Option<usize>, beat: &Beat) {
        while let Some((item, slot)) = self.next_item(worker.is_none(), beat) {
            beat.busy();
            self.synthesize_one(item, slot, worker);
        }
    }

    /// Synthesizes one item and hands it, with its lookahead slot, to a device; on any failure
    /// the slot drops here.
    fn synthesize_one(self: &Arc<Self>, item: WorkItem, slot: Option<LookaheadSlot>, worker: Option<usize>) {
        let job = item.job.clone();
        let Some(statement) = job.statement().filter(|_| !job.should_stop()) else {
            return;
        };
        self.mark_running(&job);

        let load_started = Instant::now();
        let srs = match self.srs.get(&statement.circuit()) {
            Ok((srs, load)) => {
                if !load.is_zero() {
                    log_stage(&job, Stage::ParamsLoad, "", &format!("{:.1} s", load.as_secs_f64()));
                    self.params_changed();
                }
                job.progress.lock().unwrap().timings.params_load += load_started.elapsed();
                srs
            }
            Err(e) => {
                self.fail(&job, e);
                return;
            }
        };

        // With the circuit's record, A and B are filled from it: on the device when every device
        // evaluates them itself (the witness then reserves its assignments alone), else here.
        let record = self.precompiled_for(&statement);
        let fill = record.as_ref().map(|r| if self.devices_fill_from(&srs, r) { Fill::Deferred } else { Fill::Host });
        // the device's upload of the circuit's bases overlaps this synthesis
        self.warm_device(&item.exclude, &srs, record.as_ref().filter(|_| fill == Some(Fill::Deferred)));
        let estimate = match (&record, fill) {
            (Some(record), Some(Fill::Deferred)) => with_headroom(record.deferred_bytes()),
            _ => self.estimate(statement.as_ref()),
        };
        let reserved = if job.priority == Priority::Critical {
            self.budget.reserve_urgent(estimate, &|| job.should_stop())
        } else {
            self.budget.reserve(estimate, &|| job.should_stop())
        };
        let mut reservation = match reserved {
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
        let how = match fill {
            Some(Fill::Host) => ", precompiled",
            Some(Fill::Deferred) => ", precompiled, a and b on the device",
            None => "",
        };
        log_stage(&job, Stage::Synthesis, "", &format!("partition {}/{}{how}", item.partition + 1, job.partitions()));
        let started = Instant::now();
        let stop: crate::groth16::StopFn = {
            let job = job.clone();
            Arc::new(move || job.should_stop())
        };
        // Critical and high priority items fork on the urgent pool, ungated; the others on their
        // worker's pool, through the CPU gate in the order the devices need them.
        let (pool, admit) = match worker {
            Some(i) if job.priority > Priority::High => {
                let (gate, key) = (self.cpu_gate.clone(), (job.priority, job.submitted, item.partition));
                let admit: crate::groth16::AdmitFn = Arc::new(move |stop: &dyn Fn() -> bool| {
                    gate.acquire(key, stop).map(|permit| Box::new(permit) as crate::groth16::Permit)
                });
                (&self.fork_pools[i], Some(admit))
            }
            _ => (&self.urgent_pool, None),
        };
        let synthesize = || match (record, fill) {
            (Some(record), Some(fill)) => crate::groth16::precompiled_as(record, fill, || statement.synthesize(item.partition)),
            _ => statement.synthesize(item.partition),
        };
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            // everything inside `install`, so that the thread-local stop token, admission and
            // record are set on the thread that synthesizes
            pool.install(|| {
                crate::groth16::stoppable(stop, || match admit {
                    Some(admit) => crate::groth16::admitted(admit, synthesize),
                    None => synthesize(),
                })
            })
        }));
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
        // a deferred witness's size says nothing of the circuit's whole one
        if witness.record.is_none() {
            let mut measured = self.measured.lock().unwrap();
            let peak = measured.entry(statement.circuit()).or_insert(0);
            *peak = (*peak).max(bytes);
        }
        job.progress.lock().unwrap().timings.synthesis += took;

        let Some(device) = self.pick_device(&item.exclude, &statement.circuit()) else {
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
    pub(crate) fn estimate(&self, statement: &dyn Statement) -> Bytes {
        let sized = statement.witness_bytes();
        match self.measured.lock().unwrap().get(&statement.circuit()) {
            Some(&peak) => Bytes(sized.get().max(with_headroom(peak).get())),
            None => sized,
        }
    }


    fn mark_running(&self, job: &Arc<Job>) {
        let mut p = job.progress.lock().unwrap();
        // a job cancelled meanwhile stays as the cancel found it ([`Job::mark_cancelled`])
        if p.started.is_none() && !job.should_stop() {
            p.started = Some(Instant::now());
            p.timings.queue = job.submitted.elapsed();
            job.set_state(&mut p, JobState::Running);
            drop(p);
            self.metrics.observe_stage(job.kind, Stage::Queued, job.submitted.elapsed());
        }
    }
}
