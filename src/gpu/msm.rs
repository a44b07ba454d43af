//! G1 and G2 multi-scalar multiplication on the device (Pippenger; see cuda/msm/pippenger.cuh).
//!
//! Bases stay resident in [`DeviceBases`]; each call uploads (or is handed) the scalars, splits off
//! the 0s and 1s, sorts the rest by signed-window bucket, and reads back one point per window,
//! which the host combines with doublings in blstrs.

use std::marker::PhantomData;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use group::Group;

use super::device::{blocks, CurveKernels, GpuDevice, GpuError, Kernels};
use super::types::{AsDevice, DevFr, DevG1Affine, DevG1Xyzz, DevG2Affine, DevG2Xyzz};

/* must match MSM_SCALAR_BITS, MSM_CHUNK, MSM_SCAN_THREADS, MSM_SCAN_TILE and MSM_INDEX_BLOCK in
cuda/msm/pippenger.cuh */
const SCALAR_BITS: u32 = 256;
const CHUNK: u64 = 256;
const SCAN_THREADS: u32 = 1024;
const SCAN_TILE: u64 = 8 * SCAN_THREADS as u64;
/// Window widths considered; the widest needs 12 windows' buckets of 2^21 points each.
const MIN_WINDOW_BITS: u32 = 4;
const MAX_WINDOW_BITS: u32 = 22;
/// What one bucket costs beyond its points, in mixed additions: the segment step's two full
/// additions, and its share of the histogram, scan and zeroing. Measured on the H200 for the 2^27
/// H MSM at c = 22 (25 M buckets): segments 57 ms, 2.3 ns a bucket, where a bucket addition took
/// 0.42 ns; the rest from the L2 misses of the histogram's larger counter table.
const KEY_COST: u64 = 8;
/// Most chunk pieces msm_*_gather adds up in one thread for a bucket of the top window, which
/// holds fewer bits than the others and so fewer, fuller buckets.
const MAX_GATHER: u64 = 1 << 7;
/// Threads the segment step aims for (one per run of buckets; 2^15 fills the H200's SMs, where
/// 256 runs a window left each of 4096 threads a serial chain of 256 additions at c = 16).
const SEGMENT_THREADS: u32 = 1 << 15;
/// Fewest buckets in one run of the segment step.
const MIN_SEGMENT: u32 = 8;
/// Threads summing the points whose scalar is 1 (each a grid-stride partial sum).
const ONES_THREADS: u32 = 1 << 16;
/// Threads per block of the point kernels and of the index kernels.
const POINT_BLOCK: u32 = 128;
const INDEX_BLOCK: u32 = 256;
const _: () = assert!(ONES_THREADS % POINT_BLOCK == 0);
const _: () = assert!(MAX_WINDOW_BITS < 31, "sign bit and bucket index share a u32");

/// With `SNARKD_GPU_TRACE=1`, each MSM step is synchronized and its time printed to stderr
/// (for finding the slow step; it serializes the stream, so leave it off when timing totals).
struct Trace {
    on: bool,
    at: std::time::Instant,
}

impl Trace {
    fn new() -> Trace {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let on = *ON.get_or_init(|| std::env::var("SNARKD_GPU_TRACE").as_deref() == Ok("1"));
        Trace { on, at: std::time::Instant::now() }
    }
    fn mark(&mut self, dev: &GpuDevice, what: &str) -> Result<(), GpuError> {
        if self.on {
            dev.sync()?;
            eprintln!("msm trace: {what}: {:.3} ms", self.at.elapsed().as_secs_f64() * 1e3);
            self.at = std::time::Instant::now();
        }
        Ok(())
    }
}

/// A curve group the MSM kernels are instantiated for.
pub trait Curve: Send + Sync + 'static {
    type Affine: AsDevice<Dev = Self::DevAffine> + Sync;
    type DevAffine: DeviceRepr + Copy;
    type DevXyzz: DeviceRepr + ValidAsZeroBits + Default + Clone;
    type Projective: Group;
    const NAME: &'static str;
    fn kernels(k: &Kernels) -> &CurveKernels;
    fn to_projective(p: &Self::DevXyzz) -> Self::Projective;
}

/// BLS12-381 G1.
pub struct G1;
/// BLS12-381 G2.
pub struct G2;

impl Default for DevG1Xyzz {
    fn default() -> Self {
        DevG1Xyzz([0; 48])
    }
}
impl Default for DevG2Xyzz {
    fn default() -> Self {
        DevG2Xyzz([0; 96])
    }
}

impl Curve for G1 {
    type Affine = G1Affine;
    type DevAffine = DevG1Affine;
    type DevXyzz = DevG1Xyzz;
    type Projective = G1Projective;
    const NAME: &'static str = "g1";
    fn kernels(k: &Kernels) -> &CurveKernels {
        &k.g1
    }
    fn to_projective(p: &DevG1Xyzz) -> G1Projective {
        p.to_projective()
    }
}

impl Curve for G2 {
    type Affine = G2Affine;
    type DevAffine = DevG2Affine;
    type DevXyzz = DevG2Xyzz;
    type Projective = G2Projective;
    const NAME: &'static str = "g2";
    fn kernels(k: &Kernels) -> &CurveKernels {
        &k.g2
    }
    fn to_projective(p: &DevG2Xyzz) -> G2Projective {
        p.to_projective()
    }
}

/// Bases resident on one device.
pub struct DeviceBases<C: Curve> {
    buf: CudaSlice<C::DevAffine>,
    len: usize,
    _curve: PhantomData<C>,
}

impl<C: Curve> DeviceBases<C> {
    pub fn upload(dev: &GpuDevice, bases: &[C::Affine]) -> Result<Self, GpuError> {
        dev.reserve("msm bases", (bases.len() * std::mem::size_of::<C::DevAffine>()) as u64)?;
        Ok(DeviceBases { buf: dev.upload(C::Affine::as_device(bases))?, len: bases.len(), _curve: PhantomData })
    }
    /// `n` bases made on the device by repeating `distinct`, for benchmarks of shapes whose real
    /// parameters would take the host minutes to make (an MSM's work does not depend on the
    /// bases being distinct).
    pub fn tiled(dev: &GpuDevice, distinct: &[C::Affine], n: usize) -> Result<Self, GpuError> {
        let d = distinct.len().min(n);
        if d == 0 {
            return Err(dev.err("msm", "tiled bases need at least one point"));
        }
        dev.reserve("msm bases", (n * std::mem::size_of::<C::DevAffine>()) as u64)?;
        let mut buf = dev.alloc::<C::DevAffine>(n)?;
        dev.stream()
            .memcpy_htod(&C::Affine::as_device(distinct)[..d], &mut buf.slice_mut(..d))
            .map_err(|e| dev.err("cuMemcpyHtoDAsync", e))?;
        let mut filled = d;
        while filled < n {
            let k = filled.min(n - filled);
            let (done, mut rest) = buf.split_at_mut(filled);
            dev.stream()
                .memcpy_dtod(&done.slice(..k), &mut rest.slice_mut(..k))
                .map_err(|e| dev.err("cuMemcpyDtoDAsync", e))?;
            filled += k;
        }
        Ok(DeviceBases { buf, len: n, _curve: PhantomData })
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<C::DevAffine>()) as u64
    }
}

/// A query's bases: resident on the device, or in host memory and streamed up a chunk at a time
/// by each MSM, for a card whose memory cannot hold every query beside a partition's work.
pub(crate) enum Bases<'a, C: Curve> {
    Device(&'a DeviceBases<C>),
    Host(&'a [C::Affine]),
}

impl<C: Curve> Bases<'_, C> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Bases::Device(b) => b.len(),
            Bases::Host(b) => b.len(),
        }
    }
}

/// Bytes of bases a streamed MSM uploads at a time, into each of its two chunk buffers
/// (2^24 G1 points, 2^23 G2 points).
pub(crate) const STREAM_CHUNK_BYTES: u64 = 3 << 29;

/// What a streamed MSM takes on the device besides its scalars: two chunk buffers of bases and
/// one of scalars (for G1, the larger count of points).
pub(crate) const STREAM_SPARE: u64 = 2 * STREAM_CHUNK_BYTES + (STREAM_CHUNK_BYTES / 96) * 32;

/// Points of curve `C` in one chunk buffer.
fn stream_chunk<C: Curve>() -> usize {
    (STREAM_CHUNK_BYTES / std::mem::size_of::<C::DevAffine>() as u64) as usize
}

/// [`msm_device`] over either kind of [`Bases`].
pub(crate) fn msm_bases<C: Curve>(dev: &GpuDevice, bases: &Bases<'_, C>, s: &mut CudaSlice<DevFr>, n: usize) -> Result<C::Projective, GpuError> {
    match bases {
        Bases::Device(b) => msm_device(dev, b, s, n),
        Bases::Host(b) => msm_streamed::<C>(dev, b, s, n, stream_chunk::<C>()),
    }
}

/// Σ s[i] · host[i] over the first `n` device scalars, the bases going up `chunk` at a time into
/// two device buffers in turn: a thread stages the next chunk through the pinned buffers on the
/// copy stream while this one runs the MSM of the last, taken over a copy of its scalars (`s`
/// is left as it is).
pub(crate) fn msm_streamed<C: Curve>(
    dev: &GpuDevice,
    host: &[C::Affine],
    s: &mut CudaSlice<DevFr>,
    n: usize,
    chunk: usize,
) -> Result<C::Projective, GpuError> {
    if n > host.len() || n > s.len() {
        return Err(dev.err("msm", format!("{n} scalars of {} for {} {} bases", s.len(), host.len(), C::NAME)));
    }
    let mut total = C::Projective::identity();
    if n == 0 {
        return Ok(total);
    }
    let chunk = chunk.clamp(1, n);
    let point = std::mem::size_of::<C::DevAffine>();
    let words = point / std::mem::size_of::<DevFr>();
    dev.reserve("streamed msm bases", (2 * chunk * point + chunk * std::mem::size_of::<DevFr>()) as u64)?;
    let buffers = (0..2.min(n.div_ceil(chunk)))
        .map(|_| Ok(DeviceBases::<C> { buf: dev.alloc::<C::DevAffine>(chunk)?, len: chunk, _curve: PhantomData }))
        .collect::<Result<Vec<_>, GpuError>>()?;
    let mut part = dev.alloc::<DevFr>(chunk)?;
    // A chunk's bases as the scalar-sized words the pinned staging copies.
    let stage = |at: usize, mut b: DeviceBases<C>| -> Result<(DeviceBases<C>, cudarc::driver::CudaEvent, usize, usize), GpuError> {
        let len = chunk.min(n - at);
        let src = C::Affine::as_device(&host[at..at + len]);
        // SAFETY: DevAffine is repr(C) u32 limbs, a whole number of DevFr (also u32 limbs) long.
        let src: &[DevFr] = unsafe { std::slice::from_raw_parts(src.as_ptr() as *const DevFr, len * words) };
        // SAFETY: as above, for the device buffer of at least `len` points.
        let mut dst = unsafe { b.buf.transmute_mut::<DevFr>(len * words) }.ok_or_else(|| dev.err("msm", "chunk buffer too small"))?;
        let done = dev.stage_async(src, &mut dst)?;
        b.len = len;
        Ok((b, done, at, len))
    };
    std::thread::scope(|sc| -> Result<(), GpuError> {
        let mut idle = buffers;
        let mut next_at = 0;
        // called between MSMs: the copy stream then waits only for work that read the buffer
        let start = |idle: &mut Vec<DeviceBases<C>>, next_at: &mut usize| -> Result<_, GpuError> {
            let Some(b) = idle.pop() else { return Ok(None) };
            dev.copy_after_compute()?;
            let at = *next_at;
            *next_at += chunk;
            Ok(Some(sc.spawn(move || stage(at, b))))
        };
        let mut pending = start(&mut idle, &mut next_at)?;
        while let Some(handle) = pending.take() {
            let (b, done, at, len) = handle.join().map_err(|_| dev.err("msm", "the staging thread panicked"))??;
            dev.wait_for(&done)?;
            // the other buffer's MSM has returned, so its next chunk may go up now
            if next_at < n {
                pending = start(&mut idle, &mut next_at)?;
            }
            dev.stream().memcpy_dtod(&s.slice(at..at + len), &mut part.slice_mut(..len)).map_err(|e| dev.err("cuMemcpyDtoDAsync", e))?;
            total += msm_scalars(dev, &b, &mut part, len, None)?;
            idle.push(b);
        }
        Ok(())
    })?;
    Ok(total)
}

/// The window width for `n` scalars on the windowed path: the one with the least work (n·W bucket
/// additions for W windows, plus [`KEY_COST`] for each of the W·2^(c−1) buckets), among the
/// widths whose top window is spread over enough buckets ([`top_window_ok`]) and whose buffers
/// fit in `free` bytes. `xyzz` is the size of one bucket. Memory is not monotonic in the width
/// (narrower windows mean more windows, and the sorted entries are one a window and scalar).
pub fn window_bits(n: usize, xyzz: u64, free: u64) -> u32 {
    let cost = |c: u32| {
        let w = SCALAR_BITS.div_ceil(c) as u64;
        n as u64 * w + KEY_COST * w * (1u64 << (c - 1))
    };
    let ok = || (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).filter(|&c| top_window_ok(n, c));
    let fit = ok().filter(|&c| window_bytes(n, c, xyzz) <= free).min_by_key(|&c| (cost(c), c));
    // when none fits, the smallest, whose reservation then fails naming the bytes it needs
    fit.or_else(|| ok().min_by_key(|&c| window_bytes(n, c, xyzz))).unwrap_or(MIN_WINDOW_BITS)
}

/// Device bytes the windowed path needs for `n` scalars at width `c`: the sorted entries, the
/// per-chunk pieces, and per key the histogram, start, cursor and bucket.
fn window_bytes(n: usize, c: u32, xyzz: u64) -> u64 {
    let keys = SCALAR_BITS.div_ceil(c) as u64 * (1u64 << (c - 1));
    let sorted = SCALAR_BITS.div_ceil(c) as u64 * n as u64;
    sorted * 4 + 2 * sorted.div_ceil(CHUNK) * xyzz + keys * (12 + xyzz)
}

/// Whether the top window of width `c` spreads `n` points over enough buckets. Scalars have 255
/// bits; the windows cover 256 so that the last signed digit's carry has a place. The top window
/// then holds 255 − (windows − 1)·c bits plus that carry: with c = 15 none (every point of that
/// window lands in bucket 1), with c = 22 thirteen. Its 2^bits buckets then hold n / 2^bits
/// points each, whose chunk pieces msm_*_gather adds up one after another in a single thread.
fn top_window_ok(n: usize, c: u32) -> bool {
    let windows = SCALAR_BITS.div_ceil(c);
    let top = (SCALAR_BITS - 1).saturating_sub((windows - 1) * c);
    (n as u64 >> top) / CHUNK <= MAX_GATHER
}

/// `SNARKD_MSM_WINDOW` (4..=22), for comparing window widths in benchmarks; unset in production.
fn tuned_window() -> Option<u32> {
    static W: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *W.get_or_init(|| {
        std::env::var("SNARKD_MSM_WINDOW")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|c| (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(c))
    })
}

/// Windows one scatter thread places: as many as keep their buckets' write fronts (a 32-byte
/// sector each) within a third of the L2 cache, at least one.
fn scatter_group(nwin: u32, nbuckets: u32, l2_bytes: u64) -> u32 {
    let fronts = (l2_bytes / 3) / (nbuckets as u64 * 32);
    (fronts.min(nwin as u64) as u32).max(1)
}

/// Runs of buckets per window in the segment step: a power of two, so it divides the bucket count.
fn segments_per_window(nbuckets: u32, nwin: u32) -> u32 {
    (SEGMENT_THREADS / nwin).max(1).next_power_of_two().min((nbuckets / MIN_SEGMENT).max(1))
}

/// Σ scalars[i] · bases[i] for host scalars (Montgomery, as blstrs holds them).
pub fn msm<C: Curve>(dev: &GpuDevice, bases: &DeviceBases<C>, scalars: &[Fr]) -> Result<C::Projective, GpuError> {
    msm_at_width(dev, bases, scalars, None)
}

/// [`msm`] with the window width `c` instead of [`window_bits`]'s choice (the self-test checks
/// widths the sizes it can afford would not pick).
pub(crate) fn msm_at_width<C: Curve>(
    dev: &GpuDevice,
    bases: &DeviceBases<C>,
    scalars: &[Fr],
    c: Option<u32>,
) -> Result<C::Projective, GpuError> {
    let mut s = dev.upload(Fr::as_device(scalars))?;
    msm_scalars(dev, bases, &mut s, scalars.len(), c)
}

/// Σ s[i] · bases[i] over the first `n` device scalars (Montgomery; converted in place).
pub(crate) fn msm_device<C: Curve>(
    dev: &GpuDevice,
    bases: &DeviceBases<C>,
    s: &mut CudaSlice<DevFr>,
    n: usize,
) -> Result<C::Projective, GpuError> {
    msm_scalars(dev, bases, s, n, None)
}

fn msm_scalars<C: Curve>(
    dev: &GpuDevice,
    bases: &DeviceBases<C>,
    s: &mut CudaSlice<DevFr>,
    n: usize,
    width: Option<u32>,
) -> Result<C::Projective, GpuError> {
    if n > bases.len {
        return Err(dev.err("msm", format!("{n} scalars for {} {} bases", bases.len, C::NAME)));
    }
    if n == 0 {
        return Ok(C::Projective::identity());
    }
    let ck = C::kernels(&dev.k);
    let n64 = n as u64;
    let n32 = n as u32;
    dev.launch(&dev.k.fr_from_mont, "fr_from_mont").arg(s).arg(&n64).run((blocks(n64, INDEX_BLOCK), 1), INDEX_BLOCK)?;
    let mut ones = dev.zeros::<u32>(n)?;
    let mut big = dev.zeros::<u32>(n)?;
    let mut counts = dev.zeros::<u32>(2)?;
    dev.launch(&dev.k.msm_classify, "msm_classify")
        .arg(s)
        .arg(&n32)
        .arg(&mut ones)
        .arg(&mut big)
        .arg(&mut counts)
        .run((blocks(n64, INDEX_BLOCK), 1), INDEX_BLOCK)?;
    let mut trace = Trace::new();
    let host_counts = dev.download(&counts, 2)?;
    trace.mark(dev, "convert + classify")?;
    let (n_ones, n_big) = (host_counts[0] as usize, host_counts[1] as usize);

    let mut total = C::Projective::identity();
    if n_ones > 0 {
        let mut partial = dev.zeros::<C::DevXyzz>(ONES_THREADS as usize)?;
        dev.launch(&ck.sum_listed, "msm_sum_listed")
            .arg(&bases.buf)
            .arg(&ones)
            .arg(&counts)
            .arg(&mut partial)
            .run((ONES_THREADS / POINT_BLOCK, 1), POINT_BLOCK)?;
        let sum = reduce_rows::<C>(dev, partial, ONES_THREADS, 1)?;
        total += C::to_projective(&dev.download(&sum, 1)?[0]);
        trace.mark(dev, &format!("{n_ones} ones"))?;
    }
    drop(ones);
    if n_big > 0 {
        total += windowed::<C>(dev, bases, s, &big, &counts, n_big, width, &mut trace)?;
    }
    Ok(total)
}

/// The signed-window Pippenger over the `n_big` scalars listed in `big`, at width `width` or
/// [`window_bits`]'s choice.
#[allow(clippy::too_many_arguments)]
fn windowed<C: Curve>(
    dev: &GpuDevice,
    bases: &DeviceBases<C>,
    s: &CudaSlice<DevFr>,
    big: &CudaSlice<u32>,
    counts: &CudaSlice<u32>,
    n_big: usize,
    width: Option<u32>,
    trace: &mut Trace,
) -> Result<C::Projective, GpuError> {
    let ck = C::kernels(&dev.k);
    let xyzz = std::mem::size_of::<C::DevXyzz>() as u64;
    let c = match width.or_else(tuned_window) {
        Some(c) => c,
        None => window_bits(n_big, xyzz, dev.mem_info()?.0),
    };
    if !(MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&c) {
        return Err(dev.err("msm", format!("window width {c} outside {MIN_WINDOW_BITS}..={MAX_WINDOW_BITS}")));
    }
    let nwin = SCALAR_BITS.div_ceil(c);
    let nbuckets = 1u32 << (c - 1);
    let keys = nwin * nbuckets;
    let sorted_len = nwin as u64 * n_big as u64;
    if sorted_len + CHUNK > u32::MAX as u64 {
        return Err(dev.err("msm", format!("{n_big} scalars exceed the 32-bit bucket index")));
    }
    let chunks = sorted_len.div_ceil(CHUNK);
    dev.reserve("msm buckets", window_bytes(n_big, c, xyzz))?;
    let mut hist = dev.zeros::<u32>(keys as usize)?;
    dev.launch(&dev.k.msm_hist, "msm_hist")
        .arg(s)
        .arg(big)
        .arg(counts)
        .arg(&c)
        .arg(&nwin)
        .arg(&mut hist)
        .run((blocks(n_big as u64, INDEX_BLOCK), 1), INDEX_BLOCK)?;
    trace.mark(dev, &format!("hist ({n_big} scalars, c = {c})"))?;
    // the scan writes every start; the scatter fills sorted up to the last bucket's end, and
    // nothing reads past it (zeroing the 7 GB of the 2^27 H MSM's entries took ~2 ms)
    let mut start = dev.alloc::<u32>(keys as usize)?;
    exclusive_scan(dev, &hist, &mut start, keys)?;
    drop(hist);
    let mut cursor = dev.copy_of(&start)?;
    let mut sorted = dev.alloc::<u32>(sorted_len as usize)?;
    let wpt = scatter_group(nwin, nbuckets, dev.l2_bytes);
    let grid = (blocks(n_big as u64, INDEX_BLOCK), nwin.div_ceil(wpt));
    dev.launch(&dev.k.msm_scatter, "msm_scatter")
        .arg(s)
        .arg(big)
        .arg(counts)
        .arg(&c)
        .arg(&nwin)
        .arg(&wpt)
        .arg(&mut cursor)
        .arg(&mut sorted)
        .run(grid, INDEX_BLOCK)?;
    trace.mark(dev, "scan + scatter")?;
    // cursor now holds each bucket's end
    let mut bk = dev.zeros::<C::DevXyzz>(keys as usize)?;
    // a slot is read only where the bucket step wrote it
    let mut first = dev.alloc::<C::DevXyzz>(chunks as usize)?;
    let mut last = dev.alloc::<C::DevXyzz>(chunks as usize)?;
    dev.launch(&ck.buckets, "msm_buckets")
        .arg(&bases.buf)
        .arg(&sorted)
        .arg(&start)
        .arg(&cursor)
        .arg(&keys)
        .arg(&mut bk)
        .arg(&mut first)
        .arg(&mut last)
        .run((blocks(chunks, POINT_BLOCK), 1), POINT_BLOCK)?;
    dev.launch(&ck.gather, "msm_gather")
        .arg(&first)
        .arg(&last)
        .arg(&start)
        .arg(&cursor)
        .arg(&keys)
        .arg(&mut bk)
        .run((blocks(keys as u64, POINT_BLOCK), 1), POINT_BLOCK)?;
    trace.mark(dev, "buckets")?;
    drop((sorted, start, cursor, first, last));
    let nseg = segments_per_window(nbuckets, nwin);
    let mut seg = dev.zeros::<C::DevXyzz>((nseg * nwin) as usize)?;
    dev.launch(&ck.segments, "msm_segments")
        .arg(&bk)
        .arg(&nbuckets)
        .arg(&nseg)
        .arg(&nwin)
        .arg(&mut seg)
        .run((blocks((nseg * nwin) as u64, POINT_BLOCK), 1), POINT_BLOCK)?;
    let windows = dev.download(&reduce_rows::<C>(dev, seg, nseg, nwin)?, nwin as usize)?;
    trace.mark(dev, "segments + reduce")?;
    let mut acc = C::Projective::identity();
    for w in windows.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += C::to_projective(w);
    }
    Ok(acc)
}

/// out = the exclusive prefix sum of the `n` counts in `counts`.
fn exclusive_scan(dev: &GpuDevice, counts: &CudaSlice<u32>, out: &mut CudaSlice<u32>, n: u32) -> Result<(), GpuError> {
    let tiles = (n as u64).div_ceil(SCAN_TILE);
    let mut tile_sum = dev.zeros::<u32>(tiles as usize)?;
    dev.launch(&dev.k.msm_tile_sums, "msm_tile_sums")
        .arg(counts)
        .arg(&n)
        .arg(&mut tile_sum)
        .run((tiles as u32, 1), SCAN_THREADS)?;
    let mut tile_off = dev.zeros::<u32>(tiles as usize)?;
    let tiles32 = tiles as u32;
    dev.launch(&dev.k.msm_scan, "msm_scan").arg(&tile_sum).arg(&mut tile_off).arg(&tiles32).run((1, 1), SCAN_THREADS)?;
    dev.launch(&dev.k.msm_tile_scan, "msm_tile_scan")
        .arg(counts)
        .arg(&n)
        .arg(&tile_off)
        .arg(out)
        .run((tiles32, 1), SCAN_THREADS)
}

/// Pairwise sums within each of `rows` rows of `cols` points until one column is left.
fn reduce_rows<C: Curve>(
    dev: &GpuDevice,
    mut buf: CudaSlice<C::DevXyzz>,
    mut cols: u32,
    rows: u32,
) -> Result<CudaSlice<C::DevXyzz>, GpuError> {
    let ck = C::kernels(&dev.k);
    while cols > 1 {
        let half = cols.div_ceil(2);
        let mut out = dev.zeros::<C::DevXyzz>((half * rows) as usize)?;
        dev.launch(&ck.reduce_rows, "msm_reduce_rows")
            .arg(&buf)
            .arg(&cols)
            .arg(&rows)
            .arg(&mut out)
            .run((blocks((half * rows) as u64, POINT_BLOCK), 1), POINT_BLOCK)?;
        buf = out;
        cols = half;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const G1_XYZZ: u64 = std::mem::size_of::<DevG1Xyzz>() as u64;
    const ROOMY: u64 = 1 << 40;

    #[test]
    fn window_widths_minimize_additions() {
        // 2^27 random scalars (the 32 GiB H MSM): 13 windows of 20 bits, 19 % fewer bucket
        // additions than 16 of 16 for 2^22 more buckets; at 2^24 the two cost the same
        assert_eq!(window_bits(1 << 27, G1_XYZZ, ROOMY), 20);
        assert_eq!(window_bits(1 << 24, G1_XYZZ, ROOMY), 16);
        assert_eq!(window_bits((1 << 21) + 7, G1_XYZZ, ROOMY), 16);
        for lg in 0..32 {
            let n = 1usize << lg;
            let c = window_bits(n, G1_XYZZ, ROOMY);
            assert!((MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&c), "2^{lg}: {c}");
            assert!(top_window_ok(n, c) || c == MIN_WINDOW_BITS, "2^{lg}: c = {c}");
        }
    }

    #[test]
    fn scatter_groups_fit_the_l2_cache() {
        let h200 = 50 << 20;
        assert_eq!(scatter_group(16, 1 << 15, h200), 16, "c = 16: every window at once");
        assert_eq!(scatter_group(13, 1 << 19, h200), 1, "c = 20: a window at a time");
        assert_eq!(scatter_group(12, 1 << 21, h200), 1);
        assert_eq!(scatter_group(13, 1 << 17, h200), 4);
    }

    #[test]
    fn window_widths_avoid_an_almost_empty_top_window() {
        // c = 15 leaves the top window only the carry: every point of it in one bucket
        assert!(!top_window_ok(1 << 24, 15));
        assert!(top_window_ok(1 << 24, 16));
        // c = 18 leaves it 4 bits: 2^27 points over 16 buckets, 2^15 pieces each
        assert!(!top_window_ok(1 << 27, 18));
        assert!(top_window_ok(1 << 27, 22));
    }

    #[test]
    fn window_widths_fit_device_memory() {
        // 2^25 scalars: c = 20 is cheapest, c = 16 needs less memory
        let n = 1usize << 25;
        let best = window_bits(n, G1_XYZZ, ROOMY);
        let need = |c| window_bytes(n, c, G1_XYZZ);
        let smallest = (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).filter(|&c| top_window_ok(n, c)).map(need).min().unwrap();
        assert!(smallest < need(best), "the test needs a width smaller in memory than {best}");
        let c = window_bits(n, G1_XYZZ, need(best) - 1);
        assert!(c != best && need(c) < need(best), "{c}");
        // nothing fits: the smallest, so that the reservation's error names the least it needs
        let c = window_bits(n, G1_XYZZ, smallest - 1);
        assert_eq!(need(c), smallest);
    }
}
