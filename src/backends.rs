//! Which proving backends this host gets: one CUDA backend per configured GPU that starts, CPU
//! workers as configured (at least one when no GPU proves), and, for tests only, fault injection
//! from `SNARKD_FAULTS`. Every decision becomes a note that the log and Status show, so an
//! operator sees why a GPU is not used instead of a silent CPU fallback.

use std::sync::Arc;

use crate::config::{Config, GpuDevices};
use crate::groth16::{fault, CpuBackend, ProvingBackend};

/// The backends for `config`, and one line per decision.
pub fn for_config(config: &Config) -> (Vec<Arc<dyn ProvingBackend>>, Vec<String>) {
    let mut notes = vec![crate::gpu::cuda_status()];
    let mut backends: Vec<Arc<dyn ProvingBackend>> = vec![];
    match &config.gpu.devices {
        GpuDevices::None => notes.push("gpu.devices = none: not using GPUs".into()),
        _ if !crate::gpu::BUILT_IN => notes.push("CUDA kernels are not built in: proving on the cpu".into()),
        devices => match crate::gpu::Gpu::enumerate(devices.ordinals(), config.gpu.memory_limit.map(|b| b.0)) {
            Ok(found) if found.is_empty() => notes.push("no GPU found: proving on the cpu".into()),
            Ok(found) => {
                for dev in found {
                    match config.gpu.memory_limit {
                        Some(limit) => notes.push(format!("proving on {}, using at most {limit} of its memory (gpu.memory_limit)", dev.label())),
                        None => notes.push(format!("proving on {}", dev.label())),
                    }
                    backends.push(Arc::new(crate::gpu::GpuBackend::new(dev)));
                }
            }
            Err(e) => notes.push(format!("GPUs unavailable ({e}): proving on the cpu")),
        },
    }
    let cpu_workers = match config.proving.cpu_workers {
        0 if backends.is_empty() => 1,
        n => n,
    };
    for _ in 0..cpu_workers {
        backends.push(Arc::new(CpuBackend::new()));
    }
    notes.push(format!("{cpu_workers} cpu proving worker(s)"));
    inject_faults(&mut backends, &mut notes);
    (backends, notes)
}

/// Applies `SNARKD_FAULTS` (testing only), loudly.
fn inject_faults(backends: &mut [Arc<dyn ProvingBackend>], notes: &mut Vec<String>) {
    let Ok(spec) = std::env::var(fault::ENV) else { return };
    match fault::parse(&spec) {
        Ok(faults) => {
            for (idx, f) in faults {
                if let Some(b) = backends.get_mut(idx) {
                    *b = Arc::new(fault::FaultInjecting::new(b.clone(), f));
                    notes.push(format!("FAULT INJECTION: worker {idx} gets {f:?} ({}={spec})", fault::ENV));
                }
            }
        }
        Err(e) => notes.push(format!("ignoring malformed fault injection: {e}")),
    }
}
