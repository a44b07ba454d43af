//! One CUDA device: its context, stream, loaded kernels, and the typed errors of every call.
//!
//! cudarc loads libcuda at run time, so the same binary starts on hosts without a GPU:
//! [`Gpu::enumerate`] then returns [`GpuError::NoDriver`] and the caller proves on the CPU.
//! Every driver call goes through [`GpuDevice`] methods that name the call in the error.
//! Dropping a `GpuDevice` frees its buffers and, with the last reference, the context.

use std::sync::{Arc, Mutex};

use cudarc::driver::sys::{CUdevice, CUmemPool_attribute, CUmemoryPool, CUresult};
use cudarc::driver::{
    CudaContext, DriverError, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaViewMut, DeviceRepr, LaunchConfig,
    PinnedHostSlice, PushKernelArg, ValidAsZeroBits,
};
use rayon::prelude::*;
use cudarc::nvrtc::Ptx;

use super::kernels;
use super::ntt::Domain;
use super::types::DevFr;

/// Bytes per pinned staging buffer (32 MiB, a million scalars); two alternate, so the CPU fills
/// one while the copy engine drains the other.
const STAGING_CHUNK: usize = 32 << 20;

/// Why a GPU operation failed. Every variant says which call failed and on which device.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    #[error("cuda: not built in (build with nvcc available; see cuda/install-nvcc.sh)")]
    NotBuiltIn,
    #[error("no CUDA driver (libcuda) on this host")]
    NoDriver,
    #[error("the NVIDIA driver supports CUDA {found}, the kernels need CUDA {needed} (driver 580 or newer); upgrade the driver to prove on this GPU")]
    DriverTooOld { found: String, needed: String },
    #[error("device {device} not present ({count} CUDA devices)")]
    NoSuchDevice { device: usize, count: usize },
    #[error("cuda:{device} {call}: {reason}")]
    Driver { device: usize, call: &'static str, reason: String },
    #[error("cuda:{device} {what} needs {needed} bytes, {free} free")]
    OutOfMemory { device: usize, what: &'static str, needed: u64, free: u64 },
}

/// Bytes of `n` elements of `T`.
fn bytes_of<T>(n: usize) -> u64 {
    (n * std::mem::size_of::<T>()) as u64
}

/// The driver entry point, guarded: cudarc panics when libcuda is missing, so check first.
fn driver_present() -> bool {
    // SAFETY: only tries to dlopen libcuda.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// The CUDA version the embedded kernels are built for (nvcc 13.0): drivers older than 580 refuse
/// them, so such a driver is reported as too old rather than failing at the first kernel load.
const NEEDED_CUDA: i32 = 13_000;

/// The CUDA version the installed driver supports, as `cuDriverGetVersion` encodes it (1000 × major
/// + 10 × minor).
fn driver_cuda_version() -> Result<i32, GpuError> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: libcuda is present (checked before); the call only writes the version.
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(GpuError::Driver { device: 0, call: "cuDriverGetVersion", reason: format!("{r:?}") });
    }
    Ok(v)
}

fn cuda_version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Entry point to the machine's GPUs.
pub struct Gpu;

impl Gpu {
    /// Number of CUDA devices, 0 when there is no driver or kernels were not built in.
    pub fn device_count() -> Result<usize, GpuError> {
        if !kernels::BUILT_IN {
            return Err(GpuError::NotBuiltIn);
        }
        if !driver_present() {
            return Err(GpuError::NoDriver);
        }
        let version = driver_cuda_version()?;
        if version < NEEDED_CUDA {
            return Err(GpuError::DriverTooOld { found: cuda_version_text(version), needed: cuda_version_text(NEEDED_CUDA) });
        }
        CudaContext::device_count()
            .map(|n| n.max(0) as usize)
            .map_err(|e| GpuError::Driver { device: 0, call: "cuDeviceGetCount", reason: e.to_string() })
    }

    /// Opens the selected devices: every device for `None`, else the listed ordinals (parsed once,
    /// from `gpu.devices` or `--devices`, by [`crate::config::GpuDevices`]).
    /// `limit` caps the device memory each one reports to its users ([`GpuDevice::mem_info`]).
    pub fn enumerate(ordinals: Option<&[u32]>, limit: Option<u64>) -> Result<Vec<GpuDevice>, GpuError> {
        let count = Self::device_count()?;
        let ordinals: Vec<usize> = match ordinals {
            None => (0..count).collect(),
            Some(list) => list.iter().map(|&d| d as usize).collect(),
        };
        ordinals
            .into_iter()
            .map(|device| {
                if device >= count {
                    Err(GpuError::NoSuchDevice { device, count })
                } else {
                    GpuDevice::open(device, limit)
                }
            })
            .collect()
    }
}

/// Kernels looked up once per device.
pub struct Kernels {
    pub ntt_pass_dit: CudaFunction,
    pub ntt_pass_dif: CudaFunction,
    pub fr_mul_powers: CudaFunction,
    pub fr_powers: CudaFunction,
    pub h_pointwise: CudaFunction,
    pub fr_mul_pointwise: CudaFunction,
    pub fr_from_mont: CudaFunction,
    pub fr_select: CudaFunction,
    pub r1cs_spmv: CudaFunction,
    pub msm_classify: CudaFunction,
    pub msm_hist: CudaFunction,
    pub msm_scan: CudaFunction,
    pub msm_tile_sums: CudaFunction,
    pub msm_tile_scan: CudaFunction,
    pub msm_scatter: CudaFunction,
    pub g1: CurveKernels,
    pub g2: CurveKernels,
}

/// The per-curve MSM kernels (same template, G1 or G2 field).
pub struct CurveKernels {
    pub buckets: CudaFunction,
    pub gather: CudaFunction,
    pub segments: CudaFunction,
    pub reduce_rows: CudaFunction,
    pub sum_listed: CudaFunction,
}

/// A pinned staging buffer and the event recorded after the copy that last read it (cudarc
/// records none itself while event tracking is off, so `as_mut_slice` would not wait).
struct Staging {
    buf: PinnedHostSlice<u8>,
    copied: CudaEvent,
}

/// One opened CUDA device.
pub struct GpuDevice {
    ordinal: usize,
    name: String,
    ctx: Arc<CudaContext>,
    pool: Pool,
    stream: Arc<CudaStream>,
    /// Uploads that overlap the compute stream's work ([`GpuDevice::upload_async`]).
    copy: Arc<CudaStream>,
    /// The next proof's uploads, made while this one's MSMs run ([`GpuDevice::prefetch_buffers`]).
    prefetch: Arc<CudaStream>,
    _module: Arc<CudaModule>,
    pub(crate) k: Kernels,
    /// Bytes of L2 cache (the MSM's scatter sizes its window groups to it).
    pub(crate) l2_bytes: u64,
    /// `gpu.memory_limit`: the most bytes this process's buffers may take on the device.
    limit: Option<u64>,
    /// Pinned buffers for [`GpuDevice::upload_scalars`], made on first use.
    staging: Mutex<Option<[Staging; 2]>>,
    /// The last small and the last large NTT domain that proofs used ([`Domain::cached`]).
    pub(crate) domains: Mutex<[Option<Arc<Domain>>; 2]>,
}

impl GpuDevice {
    fn open(ordinal: usize, limit: Option<u64>) -> Result<GpuDevice, GpuError> {
        let err = |call: &'static str| move |e: cudarc::driver::DriverError| GpuError::Driver {
            device: ordinal,
            call,
            reason: e.to_string(),
        };
        let ctx = CudaContext::new(ordinal).map_err(err("cuCtxCreate"))?;
        let name = ctx.name().map_err(err("cuDeviceGetName"))?;
        let l2_bytes = ctx
            .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .map_err(err("cuDeviceGetAttribute"))? as u64;
        // Kernels run on one stream; two others only upload (this proof's inputs, and the next
        // proof's a and b), and every hand-over between streams is an explicit event (Upload),
        // so cudarc's per-buffer event tracking would only add events to every launch.
        // SAFETY: buffers are used on `stream`, except while an `Upload` owns them (see there).
        unsafe { ctx.disable_event_tracking() };
        // Freed buffers stay in the device's memory pool for the next allocation: with the
        // default release threshold (0) the pool unmapped them at every synchronization, and
        // each proof's multi-GB buffers were mapped again, ~5 ms of host time a 4 GiB buffer
        // while the GPU waited. mem_info counts the pool's idle memory as free, and an
        // allocation that fails for memory trims the pool and tries once more.
        let pool = Pool::of(ctx.cu_device()).map_err(err("cuDeviceGetMemPool"))?;
        pool.set_release_threshold(u64::MAX).map_err(err("cuMemPoolSetAttribute"))?;
        let stream = ctx.new_stream().map_err(err("cuStreamCreate"))?;
        let copy = ctx.new_stream().map_err(err("cuStreamCreate"))?;
        let prefetch = ctx.new_stream().map_err(err("cuStreamCreate"))?;
        let module = ctx.load_module(Ptx::from_binary(kernels::FATBIN.to_vec())).map_err(err("cuModuleLoadData"))?;
        let f = |name: &'static str| module.load_function(name).map_err(err(name));
        let curve = |g: &str| -> Result<CurveKernels, GpuError> {
            let l = |suffix: &str| {
                let name = format!("msm_{g}_{suffix}");
                module.load_function(&name).map_err(|e| GpuError::Driver {
                    device: ordinal,
                    call: "cuModuleGetFunction",
                    reason: format!("{name}: {e}"),
                })
            };
            Ok(CurveKernels {
                buckets: l("buckets")?,
                gather: l("gather")?,
                segments: l("segments")?,
                reduce_rows: l("reduce_rows")?,
                sum_listed: l("sum_listed")?,
            })
        };
        let k = Kernels {
            ntt_pass_dit: f("ntt_pass_dit")?,
            ntt_pass_dif: f("ntt_pass_dif")?,
            fr_mul_powers: f("fr_mul_powers")?,
            fr_powers: f("fr_powers")?,
            h_pointwise: f("h_pointwise")?,
            fr_mul_pointwise: f("fr_mul_pointwise")?,
            fr_from_mont: f("fr_from_mont")?,
            fr_select: f("fr_select")?,
            r1cs_spmv: f("r1cs_spmv")?,
            msm_classify: f("msm_classify")?,
            msm_hist: f("msm_hist")?,
            msm_scan: f("msm_scan")?,
            msm_tile_sums: f("msm_tile_sums")?,
            msm_tile_scan: f("msm_tile_scan")?,
            msm_scatter: f("msm_scatter")?,
            g1: curve("g1")?,
            g2: curve("g2")?,
        };
        Ok(GpuDevice { ordinal, name, ctx, pool, stream, copy, prefetch, _module: module, k, l2_bytes, limit, staging: Mutex::new(None), domains: Mutex::new([None, None]) })
    }

    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// "cuda:0 (NVIDIA H200)"
    pub fn label(&self) -> String {
        format!("cuda:{} ({})", self.ordinal, self.name)
    }

    pub(crate) fn err(&self, call: &'static str, e: impl std::fmt::Display) -> GpuError {
        GpuError::Driver { device: self.ordinal, call, reason: e.to_string() }
    }

    /// (free, total) device memory in bytes; free includes what the memory pool holds for no
    /// buffer (it serves the next allocations). Under `gpu.memory_limit` both are capped: total
    /// at the limit, free at the limit less what this process's buffers take.
    pub fn mem_info(&self) -> Result<(u64, u64), GpuError> {
        let (free, total) = self.ctx.mem_get_info().map_err(|e| self.err("cuMemGetInfo", e))?;
        let pool_err = |e| self.err("cuMemPoolGetAttribute", e);
        let free = free as u64 + self.pool.idle().map_err(pool_err)?;
        match self.limit {
            None => Ok((free, total as u64)),
            Some(limit) => {
                let used = self.pool.used().map_err(pool_err)?;
                Ok((free.min(limit.saturating_sub(used)), (total as u64).min(limit)))
            }
        }
    }

    /// `alloc()` of `bytes`, and once more after the memory pool gave its idle memory back to the
    /// device, when the first try failed for memory (the idle blocks did not fit the request); a
    /// second failure for memory is [`GpuError::OutOfMemory`], not a driver fault.
    fn alloc_retry<T>(&self, what: &'static str, bytes: u64, alloc: impl Fn() -> Result<T, DriverError>) -> Result<T, GpuError> {
        match alloc() {
            Err(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => {
                // blocks are idle once the frees queued on every stream have run
                for s in [&self.stream, &self.copy, &self.prefetch] {
                    s.synchronize().map_err(|e| self.err("cuStreamSynchronize", e))?;
                }
                self.pool.trim().map_err(|e| self.err("cuMemPoolTrimTo", e))?;
                match alloc() {
                    Err(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => {
                        let free = self.mem_info().map(|(free, _)| free).unwrap_or(0);
                        Err(GpuError::OutOfMemory { device: self.ordinal, what, needed: bytes, free })
                    }
                    r => r.map_err(|e| self.err(what, e)),
                }
            }
            r => r.map_err(|e| self.err(what, e)),
        }
    }

    /// Fails with a typed error (instead of a driver OOM halfway) when `bytes` will not fit.
    pub(crate) fn reserve(&self, what: &'static str, bytes: u64) -> Result<(), GpuError> {
        let (free, _) = self.mem_info()?;
        if bytes > free {
            return Err(GpuError::OutOfMemory { device: self.ordinal, what, needed: bytes, free });
        }
        Ok(())
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub(crate) fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, n: usize) -> Result<CudaSlice<T>, GpuError> {
        self.alloc_retry("cuMemAllocAsync", bytes_of::<T>(n), || self.stream.alloc_zeros::<T>(n.max(1)))
    }

    /// A buffer of `n` elements, each written by the caller before anything reads it (elements
    /// never read may stay unwritten).
    pub(crate) fn alloc<T: DeviceRepr>(&self, n: usize) -> Result<CudaSlice<T>, GpuError> {
        // SAFETY: uninitialized device memory; callers write each element before it is read.
        self.alloc_retry("cuMemAllocAsync", bytes_of::<T>(n), || unsafe { self.stream.alloc::<T>(n.max(1)) })
    }

    /// A new buffer holding a copy of `src`, made on the compute stream.
    pub(crate) fn copy_of<T: DeviceRepr>(&self, src: &CudaSlice<T>) -> Result<CudaSlice<T>, GpuError> {
        self.alloc_retry("cuMemcpyDtoDAsync", bytes_of::<T>(src.len()), || self.stream.clone_dtod(src))
    }

    /// A new device buffer holding `host`, copied on the compute stream through the pinned
    /// staging buffers when it is big enough to gain from them (a circuit's bases, its record,
    /// scalars: ~20 GB/s instead of the ~7 GB/s of a pageable copy).
    pub(crate) fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>, GpuError> {
        if host.is_empty() {
            return self.alloc::<T>(1); // unwritten, and nothing reads it
        }
        let mut buf = self.alloc::<T>(host.len())?;
        self.copy_through_pinned(&self.stream, host, &mut buf.slice_mut(..))?;
        Ok(buf)
    }

    /// [`GpuDevice::upload`] in one pageable copy whatever its size: the baseline `bench msm`
    /// compares the staged upload with.
    pub(crate) fn upload_pageable<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>, GpuError> {
        self.alloc_retry("cuMemcpyHtoDAsync", bytes_of::<T>(host.len().max(1)), || self.stream.clone_htod(host))
    }

    /// Copies scalars into `dst` through two pinned staging buffers: the CPU copies a chunk into
    /// one (in parallel) while the DMA engine reads the other, several times faster than a
    /// pageable copy, which the driver stages through a small buffer of its own.
    pub(crate) fn upload_scalars(&self, host: &[DevFr], dst: &mut CudaViewMut<'_, DevFr>) -> Result<(), GpuError> {
        self.copy_through_pinned(&self.stream, host, dst)
    }

    /// [`GpuDevice::upload_scalars`] on `stream`, for values of any device type: they are copied
    /// as the bytes they are, a staging buffer's worth at a time.
    fn copy_through_pinned<T: DeviceRepr>(&self, stream: &Arc<CudaStream>, host: &[T], dst: &mut CudaViewMut<'_, T>) -> Result<(), GpuError> {
        if host.len() > dst.len() {
            return Err(self.err("upload", format!("{} values into a buffer of {}", host.len(), dst.len())));
        }
        let bytes = std::mem::size_of_val(host);
        // SAFETY: the device types (scalars, points, u32 and u64 words) are arrays of integers
        // without padding, so every byte of `host` is initialized; the copy reads them as any
        // host-to-device copy does.
        let host = unsafe { std::slice::from_raw_parts(host.as_ptr().cast::<u8>(), bytes) };
        // SAFETY: the view covers the same device bytes; they receive the bytes of `T` values.
        let mut dst = unsafe { dst.transmute_mut::<u8>(bytes) }.ok_or_else(|| self.err("upload", "destination smaller than its bytes"))?;
        if bytes < STAGING_CHUNK {
            // one pageable copy, without waiting for an upload that holds the staging buffers
            return stream.memcpy_htod(host, &mut dst).map_err(|e| self.err("cuMemcpyHtoDAsync", e));
        }
        let mut guard = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let alloc = || -> Result<Staging, GpuError> {
                Ok(Staging {
                    // SAFETY: the buffer is written (below) before any copy reads it.
                    buf: unsafe { self.ctx.alloc_pinned::<u8>(STAGING_CHUNK) }.map_err(|e| self.err("cuMemHostAlloc", e))?,
                    copied: self.ctx.new_event(None).map_err(|e| self.err("cuEventCreate", e))?,
                })
            };
            *guard = Some([alloc()?, alloc()?]);
        }
        for (i, chunk) in host.chunks(STAGING_CHUNK).enumerate() {
            let at = i * STAGING_CHUNK;
            let mut to = dst.slice_mut(at..at + chunk.len());
            match guard.as_mut() {
                Some(bufs) if chunk.len() == STAGING_CHUNK => {
                    let st = &mut bufs[i % 2];
                    // wait until the copy that last read this buffer has finished
                    st.copied.synchronize().map_err(|e| self.err("cuEventSynchronize", e))?;
                    let pinned = st.buf.as_mut_slice().map_err(|e| self.err("cuEventSynchronize", e))?;
                    pinned.par_chunks_mut(STAGING_CHUNK / 16).zip(chunk.par_chunks(STAGING_CHUNK / 16)).for_each(|(d, s)| d.copy_from_slice(s));
                    stream.memcpy_htod(&st.buf, &mut to).map_err(|e| self.err("cuMemcpyHtoDAsync", e))?;
                    st.copied.record(stream).map_err(|e| self.err("cuEventRecord", e))?;
                }
                // the tail (or a small upload): one pageable copy
                _ => stream.memcpy_htod(chunk, &mut to).map_err(|e| self.err("cuMemcpyHtoDAsync", e))?,
            }
        }
        Ok(())
    }

    /// Buffers for [`GpuDevice::upload_async`], allocated on the compute stream and made visible
    /// to the copy stream. Allocate them before queueing the kernels their uploads should
    /// overlap: the copy stream waits for everything the compute stream holds at this point.
    pub(crate) fn alloc_for_upload(&self, lens: &[usize]) -> Result<Vec<CudaSlice<DevFr>>, GpuError> {
        self.alloc_for(&self.copy, lens)
    }

    /// Buffers of `lens` elements on the compute stream, and `uploader` made to wait for what
    /// the compute stream holds now (so it never writes memory that earlier work still uses).
    fn alloc_for(&self, uploader: &CudaStream, lens: &[usize]) -> Result<Vec<CudaSlice<DevFr>>, GpuError> {
        let bufs = lens.iter().map(|&n| self.alloc::<DevFr>(n)).collect::<Result<Vec<_>, _>>()?;
        uploader.join(&self.stream).map_err(|e| self.err("cuStreamWaitEvent", e))?;
        Ok(bufs)
    }

    /// Makes the copy stream wait for everything the compute stream holds now, so that a
    /// buffer allocated there, or read by kernels queued there, may be written by
    /// [`GpuDevice::stage_async`].
    pub(crate) fn copy_after_compute(&self) -> Result<(), GpuError> {
        self.copy.join(&self.stream).map_err(|e| self.err("cuStreamWaitEvent", e))
    }

    /// Starts copying `host` into `dst` on the copy stream through the pinned staging buffers
    /// (see [`GpuDevice::copy_after_compute`]). Returns once the host side is done, with the
    /// event the compute stream waits on ([`GpuDevice::wait_for`]) before it reads `dst`.
    pub(crate) fn stage_async(&self, host: &[DevFr], dst: &mut CudaViewMut<'_, DevFr>) -> Result<CudaEvent, GpuError> {
        self.copy_through_pinned(&self.copy, host, dst)?;
        self.copy.record_event(None).map_err(|e| self.err("cuEventRecord", e))
    }

    /// Makes the compute stream wait for `event` (from [`GpuDevice::stage_async`]).
    pub(crate) fn wait_for(&self, event: &CudaEvent) -> Result<(), GpuError> {
        self.stream.wait(event).map_err(|e| self.err("cuStreamWaitEvent", e))
    }

    /// Buffers for [`GpuDevice::prefetch_async`], allocated on the compute stream and written
    /// by the prefetch stream only after what the compute stream holds at this point (allocate
    /// them before queueing kernels). None when they would not leave `spare` bytes free: a
    /// prefetch is an optimization and must not take memory the proof itself needs.
    pub(crate) fn prefetch_buffers(&self, lens: &[usize], spare: u64) -> Result<Option<Vec<CudaSlice<DevFr>>>, GpuError> {
        let bytes: u64 = lens.iter().map(|&n| n as u64 * 32).sum();
        let (free, _) = self.mem_info()?;
        if free < bytes + spare {
            return Ok(None);
        }
        self.alloc_for(&self.prefetch, lens).map(Some)
    }

    /// [`GpuDevice::upload_async`] on the prefetch stream, into a buffer from
    /// [`GpuDevice::prefetch_buffers`].
    pub(crate) fn prefetch_async(&self, host: &[DevFr], buf: CudaSlice<DevFr>) -> Result<Upload, GpuError> {
        self.upload_on(&self.prefetch, host, buf)
    }

    /// `buf`, filled by work queued on the compute stream, as an [`Upload`] (for benchmarks of
    /// paths that take uploads).
    pub(crate) fn resident(&self, buf: CudaSlice<DevFr>) -> Result<Upload, GpuError> {
        let done = self.stream.record_event(None).map_err(|e| self.err("cuEventRecord", e))?;
        Ok(Upload { buf: Some(buf), done })
    }

    /// Starts uploading `host` into `buf` (from [`GpuDevice::alloc_for_upload`]; the rest zeroed)
    /// on the copy stream, beside the kernels queued on the compute stream. Returns once the host
    /// side is done: `host` may be freed, the last chunk may still be in flight.
    /// [`GpuDevice::ready`] hands the buffer to the compute stream.
    pub(crate) fn upload_async(&self, host: &[DevFr], buf: CudaSlice<DevFr>) -> Result<Upload, GpuError> {
        self.upload_on(&self.copy, host, buf)
    }

    fn upload_on(&self, stream: &Arc<CudaStream>, host: &[DevFr], mut buf: CudaSlice<DevFr>) -> Result<Upload, GpuError> {
        let len = buf.len();
        if host.len() > len {
            return Err(self.err("upload", format!("{} scalars into a buffer of {len}", host.len())));
        }
        self.copy_through_pinned(stream, host, &mut buf.slice_mut(..host.len()))?;
        if host.len() < len {
            stream.memset_zeros(&mut buf.slice_mut(host.len()..)).map_err(|e| self.err("cuMemsetD8Async", e))?;
        }
        let done = stream.record_event(None).map_err(|e| self.err("cuEventRecord", e))?;
        Ok(Upload { buf: Some(buf), done })
    }

    /// Starts copying `host` (a few megabytes at most: density words, the inputs) into the start
    /// of `buf` (from [`GpuDevice::alloc`] before [`GpuDevice::alloc_for_upload`], which makes
    /// the copy stream wait for what the compute stream held then) on the copy stream, straight
    /// from pageable memory; the rest of `buf` is left as it is.
    pub(crate) fn upload_small<T: DeviceRepr>(&self, host: &[T], mut buf: CudaSlice<T>) -> Result<Upload<T>, GpuError> {
        if host.len() > buf.len() {
            return Err(self.err("upload", format!("{} values into a buffer of {}", host.len(), buf.len())));
        }
        if !host.is_empty() {
            self.copy.memcpy_htod(host, &mut buf.slice_mut(..host.len())).map_err(|e| self.err("cuMemcpyHtoDAsync", e))?;
        }
        let done = self.copy.record_event(None).map_err(|e| self.err("cuEventRecord", e))?;
        Ok(Upload { buf: Some(buf), done })
    }

    /// The uploaded buffer, for kernels queued on the compute stream from now on.
    pub(crate) fn ready<T: DeviceRepr>(&self, mut up: Upload<T>) -> Result<CudaSlice<T>, GpuError> {
        self.stream.wait(&up.done).map_err(|e| self.err("cuStreamWaitEvent", e))?;
        up.buf.take().ok_or_else(|| self.err("upload", "buffer already taken"))
    }


    pub(crate) fn download<T: DeviceRepr + Default + Clone>(
        &self,
        dev: &CudaSlice<T>,
        n: usize,
    ) -> Result<Vec<T>, GpuError> {
        let mut host = vec![T::default(); n];
        if n > 0 {
            self.stream.memcpy_dtoh(&dev.slice(..n), &mut host).map_err(|e| self.err("cuMemcpyDtoHAsync", e))?;
        }
        self.sync()?;
        Ok(host)
    }

    pub(crate) fn sync(&self) -> Result<(), GpuError> {
        self.stream.synchronize().map_err(|e| self.err("cuStreamSynchronize", e))
    }

    /// Starts a launch of `f` on this device's stream; finish with [`Launch::run`].
    pub(crate) fn launch<'a>(&'a self, f: &'a CudaFunction, name: &'static str) -> Launch<'a> {
        Launch { dev: self, name, args: self.stream.launch_builder(f) }
    }

    /// A timing event recorded now on the compute stream.
    pub(crate) fn mark(&self) -> Result<CudaEvent, GpuError> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ev = self.ctx.new_event(flags).map_err(|e| self.err("cuEventCreate", e))?;
        ev.record(&self.stream).map_err(|e| self.err("cuEventRecord", e))?;
        Ok(ev)
    }

    /// Milliseconds the device spends in `work`, measured with events on the stream.
    pub(crate) fn time_ms<T>(&self, work: impl FnOnce() -> Result<T, GpuError>) -> Result<(T, f32), GpuError> {
        let start = self.mark()?;
        let out = work()?;
        let end = self.mark()?;
        end.synchronize().map_err(|e| self.err("cuEventSynchronize", e))?;
        let ms = start.elapsed_ms(&end).map_err(|e| self.err("cuEventElapsedTime", e))?;
        Ok((out, ms))
    }
}

impl Drop for GpuDevice {
    fn drop(&mut self) {
        // Staging buffers are freed after this: no copy may still be reading them.
        let _ = self.copy.synchronize();
        let _ = self.stream.synchronize();
    }
}

/// The device's default memory pool, which `cuMemAllocAsync` allocates from.
struct Pool(CUdevice);

impl Pool {
    fn of(dev: CUdevice) -> Result<Pool, DriverError> {
        let pool = Pool(dev);
        pool.handle()?;
        Ok(pool)
    }

    fn handle(&self) -> Result<CUmemoryPool, DriverError> {
        let mut pool: CUmemoryPool = std::ptr::null_mut();
        // SAFETY: writes one handle; the device ordinal came from the driver.
        unsafe { cudarc::driver::sys::cuDeviceGetMemPool(&mut pool, self.0) }.result()?;
        Ok(pool)
    }

    fn attribute(&self, attr: CUmemPool_attribute) -> Result<u64, DriverError> {
        let mut v: u64 = 0;
        // SAFETY: these attributes are cuuint64_t values.
        unsafe { cudarc::driver::sys::cuMemPoolGetAttribute(self.handle()?, attr, &mut v as *mut u64 as *mut _) }.result()?;
        Ok(v)
    }

    fn set_release_threshold(&self, bytes: u64) -> Result<(), DriverError> {
        let mut v = bytes;
        let attr = CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
        // SAFETY: the release threshold is a cuuint64_t.
        unsafe { cudarc::driver::sys::cuMemPoolSetAttribute(self.handle()?, attr, &mut v as *mut u64 as *mut _) }.result()
    }

    /// Bytes the pool holds that no buffer uses.
    fn idle(&self) -> Result<u64, DriverError> {
        let reserved = self.attribute(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
        Ok(reserved.saturating_sub(self.used()?))
    }

    /// Bytes the pool's live buffers take.
    fn used(&self) -> Result<u64, DriverError> {
        self.attribute(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    }

    /// Gives the idle memory back to the device.
    fn trim(&self) -> Result<(), DriverError> {
        // SAFETY: only releases memory no allocation holds.
        unsafe { cudarc::driver::sys::cuMemPoolTrimTo(self.handle()?, 0) }.result()
    }
}

/// A device buffer the copy stream is filling ([`GpuDevice::upload_async`]).
pub(crate) struct Upload<T: DeviceRepr = DevFr> {
    buf: Option<CudaSlice<T>>,
    done: CudaEvent,
}

impl<T: DeviceRepr> Upload<T> {
    /// The device buffer's length in elements.
    pub(crate) fn len(&self) -> usize {
        self.buf.as_ref().map_or(0, CudaSlice::len)
    }
}

impl<T: DeviceRepr> Drop for Upload<T> {
    fn drop(&mut self) {
        // Not handed over (an error path): the buffer is freed on the compute stream, which must
        // not free it before the copy has finished writing it.
        if let Some(buf) = &self.buf {
            let _ = buf.stream().wait(&self.done);
        }
    }
}

/// A kernel launch being assembled; the name goes into the error.
pub(crate) struct Launch<'a> {
    dev: &'a GpuDevice,
    name: &'static str,
    args: cudarc::driver::LaunchArgs<'a>,
}

impl<'a> Launch<'a> {
    pub fn arg<T>(mut self, a: &'a T) -> Self
    where
        cudarc::driver::LaunchArgs<'a>: PushKernelArg<&'a T>,
    {
        self.args.arg(a);
        self
    }

    /// Launches with `grid` × `block` threads (grid.1 = rows for 2-D grids).
    pub fn run(mut self, grid: (u32, u32), block: u32) -> Result<(), GpuError> {
        let cfg = LaunchConfig { grid_dim: (grid.0.max(1), grid.1.max(1), 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: every kernel's argument list is built by the typed wrappers in ntt.rs / msm.rs,
        // which match the signatures in cuda/; sizes passed bound every index the kernels use.
        unsafe { self.args.launch(cfg) }.map_err(|e| self.dev.err(self.name, e))?;
        Ok(())
    }
}

/// Blocks of `block` threads covering `n` threads.
pub(crate) fn blocks(n: u64, block: u32) -> u32 {
    n.div_ceil(block as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_read_as_cuda_major_minor() {
        assert_eq!(cuda_version_text(NEEDED_CUDA), "13.0");
        assert_eq!(cuda_version_text(12_080), "12.8");
        let e = GpuError::DriverTooOld { found: cuda_version_text(12_080), needed: cuda_version_text(NEEDED_CUDA) };
        assert!(e.to_string().contains("driver 580 or newer"), "{e}");
    }
}
