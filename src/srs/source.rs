//! How the engine and the admin methods reach resident parameters: [`SrsSource`] is what a proof
//! needs (get, and how much is resident for the budget), [`SrsAdmin`] adds Preload, Evict and the
//! Status listing. Both are traits so that engine tests can pass fakes; [`ResidentSrs`] is the real one.

use std::sync::Arc;
use std::time::Duration;

use super::{CircuitId, ResidentSrs, Srs, SrsStatus};
use crate::error::{ErrorCode, SnarkError};
use crate::units::Bytes;

/// Where the engine gets resident parameters. The returned duration is the time spent loading
/// (zero when already resident).
pub trait SrsSource: Send + Sync {
    fn get(&self, id: &CircuitId) -> Result<(Arc<Srs>, Duration), SnarkError>;
    /// Bytes of parameters resident in host memory.
    fn resident_bytes(&self) -> u64;
}

/// Loads, evicts and lists resident parameters, for Preload, Evict and Status.
pub trait SrsAdmin: SrsSource {
    /// Loads `id` unless it is resident, and keeps it resident.
    fn preload(&self, id: &CircuitId) -> Result<Preloaded, SnarkError>;
    /// Drops `id`; `not_found` when it is not resident. Proofs running with it keep their copy
    /// until they finish.
    fn evict(&self, id: &CircuitId) -> Result<Evicted, SnarkError>;
    fn status(&self) -> Vec<SrsStatus>;
}

/// The result of Preload.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Preloaded {
    pub circuit: CircuitId,
    pub bytes: Bytes,
    /// Seconds spent loading now; 0 when the parameters were already resident.
    pub load_seconds: f64,
    pub already_loaded: bool,
}

/// The result of Evict.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Evicted {
    pub circuit: CircuitId,
    pub evicted: bool,
    /// Host bytes the eviction frees once no running proof holds the parameters.
    pub freed: Bytes,
}

impl SrsSource for ResidentSrs {
    fn get(&self, id: &CircuitId) -> Result<(Arc<Srs>, Duration), SnarkError> {
        self.get_or_load(id)
    }
    fn resident_bytes(&self) -> u64 {
        ResidentSrs::status(self).iter().map(|s| s.bytes.get()).sum()
    }
}

impl SrsAdmin for ResidentSrs {
    fn preload(&self, id: &CircuitId) -> Result<Preloaded, SnarkError> {
        let (srs, took) = self.get_or_load(id)?;
        tracing::info!("parameters {id} resident ({}, loaded in {:.1} s)", Bytes(srs.bytes()), took.as_secs_f64());
        Ok(Preloaded { circuit: id.clone(), bytes: Bytes(srs.bytes()), load_seconds: took.as_secs_f64(), already_loaded: took.is_zero() })
    }
    fn evict(&self, id: &CircuitId) -> Result<Evicted, SnarkError> {
        let freed = ResidentSrs::status(self).iter().find(|s| &s.id == id).map(|s| s.bytes);
        match freed {
            Some(freed) if ResidentSrs::evict(self, id) => Ok(Evicted { circuit: id.clone(), evicted: true, freed }),
            _ => Err(SnarkError::new(ErrorCode::NotFound, format!("{id} is not resident"))),
        }
    }
    fn status(&self) -> Vec<SrsStatus> {
        ResidentSrs::status(self)
    }
}
