//! Keeps decoded parameters resident across proofs: decoding and checking a 32 GiB PoRep file
//! takes minutes, so each file is loaded once, shared as `Arc<Srs>`, and dropped only on eviction.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::params::{load, PointCheck};
use super::{CircuitId, Srs};
use crate::error::SnarkError;
use crate::units::Bytes;

/// One resident parameter set, as Status reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SrsStatus {
    pub id: CircuitId,
    pub path: PathBuf,
    pub bytes: Bytes,
    #[serde(serialize_with = "unix_seconds")]
    pub loaded_at: SystemTime,
    #[serde(serialize_with = "unix_seconds")]
    pub last_used: SystemTime,
}

fn unix_seconds<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64(),
    )
}

/// The parameter sets resident in host memory, loaded on first use from one directory.
pub struct ResidentSrs {
    dir: PathBuf,
    check: PointCheck,
    entries: Mutex<HashMap<CircuitId, Arc<Entry>>>,
}

#[derive(Default)]
struct Entry {
    /// Held for the whole load, so concurrent requests for one id wait for a single load while
    /// other ids load in parallel.
    loading: Mutex<()>,
    srs: Mutex<Option<Arc<Srs>>>,
    last_used: Mutex<Option<SystemTime>>,
}

impl ResidentSrs {
    pub fn new(dir: impl Into<PathBuf>, check: PointCheck) -> Self {
        ResidentSrs {
            dir: dir.into(),
            check,
            entries: Mutex::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn check(&self) -> PointCheck {
        self.check
    }

    /// The parameters for `id`, loading them if they are not resident, with the time this call
    /// spent loading (zero when they were resident). A failed load is not remembered: the next
    /// call tries again (e.g. after the file has been fetched).
    pub fn get_or_load(&self, id: &CircuitId) -> Result<(Arc<Srs>, Duration), SnarkError> {
        let entry = self.entries.lock().unwrap().entry(id.clone()).or_default().clone();
        if let Some(srs) = entry.resident() {
            return Ok((srs, Duration::ZERO));
        }
        let _loading = entry.loading.lock().unwrap();
        // Someone else may have finished loading while this call waited.
        if let Some(srs) = entry.resident() {
            return Ok((srs, Duration::ZERO));
        }
        let start = Instant::now();
        let srs = Arc::new(load(&self.dir, id, self.check)?);
        *entry.srs.lock().unwrap() = Some(srs.clone());
        *entry.last_used.lock().unwrap() = Some(SystemTime::now());
        tracing::info!(%id, bytes = %Bytes(srs.bytes()), elapsed = ?start.elapsed(), "parameters loaded");
        Ok((srs, start.elapsed()))
    }

    /// Loads every id in order (at daemon start, so the first proof does not pay for it).
    pub fn preload(&self, ids: &[CircuitId]) -> Result<(), SnarkError> {
        ids.iter().try_for_each(|id| self.get_or_load(id).map(drop))
    }

    /// Drops `id` from residency; proofs still holding it finish first. Returns whether it was
    /// resident.
    pub fn evict(&self, id: &CircuitId) -> bool {
        let entry = self.entries.lock().unwrap().remove(id);
        entry.is_some_and(|e| e.srs.lock().unwrap().take().is_some())
    }

    /// The resident sets, ordered by id.
    pub fn status(&self) -> Vec<SrsStatus> {
        let entries: Vec<Arc<Entry>> = self.entries.lock().unwrap().values().cloned().collect();
        let mut out: Vec<SrsStatus> = entries
            .iter()
            .filter_map(|e| {
                let srs = e.srs.lock().unwrap().clone()?;
                Some(SrsStatus {
                    id: srs.id.clone(),
                    path: srs.path.clone(),
                    bytes: Bytes(srs.bytes()),
                    loaded_at: srs.loaded_at,
                    last_used: e.last_used.lock().unwrap().unwrap_or(srs.loaded_at),
                })
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }
}

impl Entry {
    fn resident(&self) -> Option<Arc<Srs>> {
        let srs = self.srs.lock().unwrap().clone()?;
        *self.last_used.lock().unwrap() = Some(SystemTime::now());
        Some(srs)
    }
}
