//! Precompiled circuits in the engine: each circuit's record ([`Precompiled`]: its A and B
//! matrices) is made once, on a thread of its own when the circuit is first synthesized, and every
//! later partition of that circuit is synthesized with it. Until it is ready, partitions are
//! synthesized in full, so no job waits for a record. Records count in the budget as resident
//! bytes, like parameters; turning `memory.precompile` off frees them.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::pipeline::{panic_message, Pipeline};
use crate::groth16::Precompiled;
use crate::proofs::Statement;
use crate::srs::CircuitId;
use crate::units::Bytes;

enum Record {
    Recording,
    Ready { record: Arc<Precompiled>, took: Duration, used: AtomicU64 },
    Failed(String),
}

/// Every circuit's record, or why it has none.
#[derive(Default)]
pub(crate) struct Records(Mutex<HashMap<CircuitId, Record>>);

/// One circuit's record, for Status.
#[derive(Debug, Clone, Serialize)]
pub struct PrecompiledStatus {
    pub circuit: String,
    /// `recording`, `ready` or `failed`.
    pub state: &'static str,
    pub bytes: Bytes,
    pub constraints: u64,
    pub record_s: f64,
    /// Partitions synthesized with this record.
    pub partitions: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Records {
    /// `id`'s record when it is ready, counted as used once.
    fn ready(&self, id: &CircuitId) -> Option<Arc<Precompiled>> {
        match self.0.lock().unwrap().get(id) {
            Some(Record::Ready { record, used, .. }) => {
                used.fetch_add(1, Ordering::Relaxed);
                Some(record.clone())
            }
            _ => None,
        }
    }

    /// `id`'s record, or what it is instead (without counting a use).
    pub fn get(&self, id: &CircuitId) -> Result<Arc<Precompiled>, String> {
        match self.0.lock().unwrap().get(id) {
            Some(Record::Ready { record, .. }) => Ok(record.clone()),
            Some(Record::Recording) => Err("still being recorded".into()),
            Some(Record::Failed(why)) => Err(why.clone()),
            None => Err("not recorded".into()),
        }
    }

    /// True when nobody has recorded or begun recording `id` (a failed record is not retried
    /// until the records are cleared): the caller records it.
    pub fn begin(&self, id: &CircuitId) -> bool {
        let mut map = self.0.lock().unwrap();
        if map.contains_key(id) {
            return false;
        }
        map.insert(id.clone(), Record::Recording);
        true
    }

    fn finish(&self, id: &CircuitId, result: Result<Precompiled, String>, took: Duration) {
        let entry = match result {
            Ok(record) => Record::Ready { record: Arc::new(record), took, used: AtomicU64::new(0) },
            Err(why) => Record::Failed(why),
        };
        self.0.lock().unwrap().insert(id.clone(), entry);
    }

    /// Host bytes held by ready records.
    pub fn bytes(&self) -> u64 {
        self.0
            .lock()
            .unwrap()
            .values()
            .map(|r| match r {
                Record::Ready { record, .. } => record.bytes(),
                _ => 0,
            })
            .sum()
    }

    /// Drops `id`'s record unless it is being recorded.
    pub fn forget(&self, id: &CircuitId) {
        let mut map = self.0.lock().unwrap();
        if !matches!(map.get(id), Some(Record::Recording)) {
            map.remove(id);
        }
    }

    /// Drops every ready or failed record (a recording in progress still lands).
    pub fn clear(&self) {
        self.0.lock().unwrap().retain(|_, r| matches!(r, Record::Recording));
    }

    pub fn status(&self) -> Vec<PrecompiledStatus> {
        let mut out: Vec<PrecompiledStatus> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|(id, r)| {
                let mut s = PrecompiledStatus {
                    circuit: id.0.clone(),
                    state: "recording",
                    bytes: Bytes(0),
                    constraints: 0,
                    record_s: 0.0,
                    partitions: 0,
                    error: None,
                };
                match r {
                    Record::Recording => {}
                    Record::Ready { record, took, used } => {
                        s.state = "ready";
                        s.bytes = Bytes(record.bytes());
                        s.constraints = record.constraints() as u64;
                        s.record_s = took.as_secs_f64();
                        s.partitions = used.load(Ordering::Relaxed);
                    }
                    Record::Failed(why) => {
                        s.state = "failed";
                        s.error = Some(why.clone());
                    }
                }
                s
            })
            .collect();
        out.sort_by(|a, b| a.circuit.cmp(&b.circuit));
        out
    }
}

impl Pipeline {
    /// The record to synthesize `statement` with: its circuit's when ready, else None, and the
    /// first time a circuit is seen its recording starts on a thread of its own.
    pub(crate) fn precompiled_for(self: &Arc<Self>, statement: &Arc<dyn Statement>) -> Option<Arc<Precompiled>> {
        if !self.settings.read().unwrap().precompile {
            return None;
        }
        let id = statement.circuit();
        if let Some(record) = self.records.ready(&id) {
            return Some(record);
        }
        if self.records.begin(&id) {
            let (pipeline, statement) = (self.clone(), statement.clone());
            let spawned = std::thread::Builder::new()
                .name("snarkd-record".into())
                .spawn(move || pipeline.record(statement.as_ref(), &id));
            if let Err(e) = spawned {
                tracing::warn!("cannot start a thread to precompile a circuit: {e}");
            }
        }
        None
    }

    /// Records `statement`'s circuit now, on this thread, unless it is recorded already. Its
    /// peak is reserved in the budget as one witness of the circuit (the record is a fraction
    /// of a witness, and its vectors grow by doubling).
    pub(crate) fn record(&self, statement: &dyn Statement, id: &CircuitId) {
        let reservation = match self.budget.reserve(self.estimate(statement), &|| self.stopped()) {
            Ok(r) => r,
            Err(e) => {
                let why = if self.stopped() { "the engine stopped".into() } else { format!("no room in the budget to record it: {}", e.message) };
                self.records.finish(id, Err(why), Duration::ZERO);
                return;
            }
        };
        let started = Instant::now();
        // on the first ordinary worker's pool, where a record made in parallel (FallbackPoSt's) yields
        // to the GPU stage's copies and to urgent syntheses as ordinary forks do
        let record = || self.fork_pools[0].install(|| statement.record());
        let result = match std::panic::catch_unwind(AssertUnwindSafe(record)) {
            Ok(Ok(record)) => Ok(record),
            Ok(Err(e)) => Err(e.message),
            Err(panic) => Err(format!("recording panicked: {}", panic_message(&panic))),
        };
        drop(reservation);
        let took = started.elapsed();
        match &result {
            Ok(r) => tracing::info!(
                circuit = %id.0,
                "circuit {} precompiled in {:.1} s: {} constraints, {} held",
                id.0,
                took.as_secs_f64(),
                r.constraints(),
                Bytes(r.bytes())
            ),
            Err(why) => tracing::warn!(circuit = %id.0, "circuit {} not precompiled (synthesized in full): {why}", id.0),
        }
        self.records.finish(id, result, took);
        self.params_changed();
    }
}
