//! The CUDA proving backend: device management, NTT/h and MSM kernels, and [`GpuBackend`].
//!
//! Kernels live in `cuda/` and are compiled by build.rs when nvcc is available; [`BUILT_IN`] and
//! [`cuda_status`] say whether this build has them. The driver is loaded at run time, so hosts
//! without a GPU get typed errors from [`Gpu::enumerate`] and prove on the CPU.

// Kernel launches pass the buffers a kernel writes as `&mut` although cudarc's `arg` takes any
// reference: the `&mut` says which arguments are outputs.
#![allow(clippy::unnecessary_mut_passed)]

mod backend;
mod device;
mod kernels;
mod msm;
mod ntt;
mod selftest;
mod partition;
mod record;
mod types;

pub use backend::GpuBackend;
pub use device::{Gpu, GpuDevice, GpuError};
pub use msm::{msm, window_bits, Curve, DeviceBases, G1, G2};
pub use ntt::{h_poly, ntt, Domain, NttKind};
pub use types::DevG1Xyzz;
pub use selftest::{bench_msm, bench_ntt, bench_prove_shape, selftest, BenchReport, Distribution, Report, Shape, POREP_32G};

/// Whether this build embeds CUDA kernels.
pub const BUILT_IN: bool = kernels::BUILT_IN;

/// One line for logs and `snarkctl selftest`: "cuda: built in (nvcc …), 1 device(s)" or why not.
pub fn cuda_status() -> String {
    if !BUILT_IN {
        return "cuda: not built in".to_string();
    }
    match Gpu::device_count() {
        Ok(n) => format!("cuda: built in ({}), {n} device(s)", kernels::NVCC_VERSION),
        Err(e) => format!("cuda: built in ({}), unavailable: {e}", kernels::NVCC_VERSION),
    }
}
