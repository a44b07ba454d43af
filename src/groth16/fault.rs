//! Fault injection for proving backends, so the engine's failure handling (device degraded and
//! work retried elsewhere, a backend panic failing one job alone) is tested on the real binary
//! without a GPU. Enabled only by the `SNARKD_FAULTS` environment variable, never by config.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use blstrs::Bls12;

use super::{BackendError, Proof, ProveTimings, ProvingBackend, ReleaseFn, UrgentFn, Witness};
use crate::srs::Srs;

/// The environment variable: comma-separated `<worker index>=<fault>`, e.g. `0=device-error`.
pub const ENV: &str = "SNARKD_FAULTS";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Every call fails as a device error (the device is marked degraded).
    DeviceError,
    /// Every call panics inside the backend.
    Panic,
    /// The first call panics, later calls prove normally.
    PanicOnce,
    /// One aux value of the witness is changed before proving, as a memory or synthesis fault
    /// would: the proof must then fail verification and never be returned.
    CorruptWitness,
}

/// Parses `SNARKD_FAULTS`.
pub fn parse(spec: &str) -> Result<HashMap<usize, Fault>, String> {
    spec.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|part| {
            let (idx, fault) = part.split_once('=').ok_or_else(|| format!("{ENV}: {part:?} is not <index>=<fault>"))?;
            let idx = idx.trim().parse::<usize>().map_err(|_| format!("{ENV}: {idx:?} is not a worker index"))?;
            let fault = match fault.trim() {
                "device-error" => Fault::DeviceError,
                "panic" => Fault::Panic,
                "panic-once" => Fault::PanicOnce,
                "corrupt-witness" => Fault::CorruptWitness,
                other => return Err(format!("{ENV}: unknown fault {other:?} (device-error, panic, panic-once, corrupt-witness)")),
            };
            Ok((idx, fault))
        })
        .collect()
}

/// Wraps a backend and injects `fault` into its calls.
pub struct FaultInjecting {
    inner: Arc<dyn ProvingBackend>,
    fault: Fault,
    calls: AtomicU64,
}

impl FaultInjecting {
    pub fn new(inner: Arc<dyn ProvingBackend>, fault: Fault) -> Self {
        FaultInjecting { inner, fault, calls: AtomicU64::new(0) }
    }
}

impl ProvingBackend for FaultInjecting {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn memory(&self) -> Option<crate::groth16::DeviceMemory> {
        self.inner.memory()
    }

    fn holds(&self, circuit: &crate::srs::CircuitId) -> bool {
        self.inner.holds(circuit)
    }

    fn warm(&self, srs: &Srs, record: Option<&std::sync::Arc<crate::groth16::Precompiled>>) -> Result<(), BackendError> {
        self.inner.warm(srs, record)
    }

    fn streamed(&self, circuit: &crate::srs::CircuitId) -> Vec<&'static str> {
        self.inner.streamed(circuit)
    }

    fn fills_from_record(&self, srs: &Srs, record: &std::sync::Arc<crate::groth16::Precompiled>) -> bool {
        self.inner.fills_from_record(srs, record)
    }

    fn prove_then(
        &self,
        witness: Witness,
        srs: &Srs,
        release: ReleaseFn<'_>,
        next: Option<&Witness>,
        urgent: UrgentFn<'_>,
    ) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        match self.fault {
            Fault::DeviceError => Err(BackendError::Device {
                device: self.inner.name(),
                call: "injected fault".into(),
                reason: format!("{ENV} device-error"),
            }),
            Fault::Panic => panic!("injected panic ({ENV})"),
            Fault::PanicOnce if n == 0 => panic!("injected panic ({ENV} panic-once)"),
            Fault::PanicOnce => self.inner.prove_then(witness, srs, release, next, urgent),
            Fault::CorruptWitness => {
                let mut witness = witness;
                if let Some(v) = witness.aux.last_mut() {
                    *v += blstrs::Scalar::from(1u64);
                }
                self.inner.prove_then(witness, srs, release, next, urgent)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        let m = parse("0=device-error, 2=panic-once").unwrap();
        assert_eq!(m[&0], Fault::DeviceError);
        assert_eq!(m[&2], Fault::PanicOnce);
        assert!(parse("x=panic").is_err());
        assert!(parse("0=melt").is_err());
    }
}
