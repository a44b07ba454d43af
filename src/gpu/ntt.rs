//! Fr NTTs and the Groth16 h polynomial on the device, bit-for-bit equal to bellperson's
//! `EvaluationDomain` (natural order, ω from `Fr::ROOT_OF_UNITY`, coset generator g = 7).
//!
//! h = icoset_ntt((coset_ntt(intt(a)) · coset_ntt(intt(b)) − coset_ntt(intt(c))) · (g^m − 1)^-1),
//! with the m^-1 of each inverse transform folded into the coset multiplication that follows it.
//! Each transform is a few passes of `ntt_pass_dit` or `ntt_pass_dif` (cuda/ntt/ntt.cuh), up to
//! ten radix-2 stages a pass in shared memory: 2^24 takes three passes over memory instead of one
//! per stage.

use std::sync::Arc;

use blstrs::Scalar as Fr;
use cudarc::driver::CudaSlice;
use ff::{Field, PrimeField};

use super::device::{blocks, GpuDevice, GpuError, Upload};
use super::types::{AsDevice, DevFr};

/* must match NTT_PASS_LOG, NTT_RADIX_LOG, NTT_TW_LO_BITS and the NTT_* flags in cuda/ntt/ntt.cuh */
const PASS_LOG: u32 = 10;
const RADIX_LOG: u32 = 3;
const TW_LO_BITS: u32 = 12;
const DIF: u32 = 1;
const GATHER: u32 = 2;
const SCATTER: u32 = 4;
const SCALE_IN: u32 = 8;
const SCALE_OUT: u32 = 16;
const SCALE_BREV: u32 = 32;
/// Most stages of one pass after the first: fewer leaves each block more consecutive columns
/// (L = 2^(PASS_LOG − stages)), so that a warp's loads stay runs of ≥ 64 bytes.
const LATER_PASS_MAX: u32 = 9;
/// Threads per block of the elementwise kernels.
const BLOCK: u32 = 256;
/// Largest domain the two-level tables (and Fr's 2-adicity) serve.
pub const MAX_LOG_N: u32 = 31;
const _: () = assert!(MAX_LOG_N <= Fr::S);

/// Most stages of the first pass and of a later one: (PASS_LOG, LATER_PASS_MAX), or for comparing
/// plans in benchmarks `SNARKD_NTT_PASSES=first,later` (each 1..=PASS_LOG); unset in production.
fn pass_limits() -> (u32, u32) {
    static L: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *L.get_or_init(|| {
        let tuned = std::env::var("SNARKD_NTT_PASSES").ok().and_then(|v| {
            let (f, l) = v.split_once(',')?;
            let ok = |x: &str| x.trim().parse::<u32>().ok().filter(|x| (1..=PASS_LOG).contains(x));
            Some((ok(f)?, ok(l)?))
        });
        tuned.unwrap_or((PASS_LOG, LATER_PASS_MAX))
    })
}

/// The passes of a 2^log_n transform, as (first stage, stages), in ascending stage order: the
/// first covers stages 0..min(first, log_n), the rest split what is left evenly ([`pass_limits`]).
fn pass_plan(log_n: u32) -> Vec<(u32, u32)> {
    let (first_max, later_max) = pass_limits();
    let first = log_n.min(first_max);
    let mut plan = vec![(0, first)];
    let rest = log_n - first;
    let n = rest.div_ceil(later_max);
    let mut st0 = first;
    for i in 0..n {
        let nst = rest / n + u32::from(i < rest % n);
        plan.push((st0, nst));
        st0 += nst;
    }
    plan.retain(|&(_, nst)| nst > 0);
    plan
}

/// The launches of one transform as (first stage, stages, flags), in launch order: DIT passes
/// ascend, DIF passes descend; `first` goes to the first launch and `last` to the last.
fn schedule(log_n: u32, dif: bool, first: u32, last: u32) -> Vec<(u32, u32, u32)> {
    let mut plan = pass_plan(log_n);
    if dif {
        plan.reverse();
    }
    let count = plan.len();
    plan.into_iter()
        .enumerate()
        .map(|(i, (st0, nst))| {
            let mut flags = if dif { DIF } else { 0 };
            if i == 0 {
                flags |= first;
            }
            if i + 1 == count {
                flags |= last;
            }
            (st0, nst, flags)
        })
        .collect()
}

/// Which buffers pass `i` of `count` reads and writes, as (reads output, writes output): a pass
/// that permutes must not run in place (its blocks would overwrite what others have yet to read).
/// With SCATTER in `last`, every pass but the last runs in place on the input and the last writes
/// the output; otherwise the first reads the input (and may GATHER) and the rest run in place on
/// the output.
fn pass_buffers(i: usize, count: usize, last: u32) -> (bool, bool) {
    if last & SCATTER != 0 {
        (false, i + 1 == count)
    } else {
        (i > 0, true)
    }
}

/// The powers a pass multiplies by (tables of [`Domain`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    /// m^-1
    Scale,
    /// g^i
    Coset,
    /// m^-1·g^i
    IntoCoset,
    /// m^-1·g^-i
    OutOfCoset,
}

/// A pass's flags and the table of powers it scales by.
type PassScale = (u32, Option<Table>);

/// How [`Domain::apply`] runs `kind` as DIT passes: inverse twiddles or not, and the flags (with
/// the table they scale by) of the first and the last pass. The first pass bit-reverses its loads.
fn kind_plan(kind: NttKind) -> (bool, PassScale, PassScale) {
    match kind {
        NttKind::Forward => (false, (GATHER, None), (0, None)),
        NttKind::Inverse => (true, (GATHER, None), (SCALE_OUT, Some(Table::Scale))),
        NttKind::CosetForward => (false, (GATHER | SCALE_IN | SCALE_BREV, Some(Table::Coset)), (0, None)),
        NttKind::CosetInverse => (true, (GATHER, None), (SCALE_OUT, Some(Table::OutOfCoset))),
    }
}

/// log2 of the consecutive columns one block of a pass takes (ntt_pass's log_l).
fn columns_log(st0: u32, nst: u32) -> u32 {
    if st0 == 0 {
        0
    } else {
        st0.min(PASS_LOG - nst)
    }
}

/// Which transform [`ntt`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NttKind {
    /// Evaluations at ω^i of the coefficients.
    Forward,
    /// Coefficients from evaluations (includes the 1/m).
    Inverse,
    /// Evaluations at g·ω^i.
    CosetForward,
    /// Coefficients from evaluations at g·ω^i.
    CosetInverse,
}

/// Powers `scale · base^i` for i < `count`, split as lo[i mod 2^TW_LO_BITS] · hi[i >> TW_LO_BITS].
struct Powers {
    lo: CudaSlice<DevFr>,
    hi: CudaSlice<DevFr>,
}

impl Powers {
    fn new(dev: &GpuDevice, base: Fr, scale: Fr, count: u64) -> Result<Powers, GpuError> {
        let lo_len = 1usize << TW_LO_BITS;
        let hi_len = count.div_ceil(lo_len as u64).max(1) as usize;
        let mut lo = Vec::with_capacity(lo_len);
        let mut p = scale;
        for _ in 0..lo_len {
            lo.push(p);
            p *= base;
        }
        let step = base.pow_vartime([lo_len as u64]);
        let mut hi = Vec::with_capacity(hi_len);
        let mut p = Fr::ONE;
        for _ in 0..hi_len {
            hi.push(p);
            p *= step;
        }
        Ok(Powers { lo: dev.upload(Fr::as_device(&lo))?, hi: dev.upload(Fr::as_device(&hi))? })
    }
}

/// All `count` powers of `base` on the device (a domain's twiddle table).
fn twiddles(dev: &GpuDevice, base: Fr, count: u64) -> Result<CudaSlice<DevFr>, GpuError> {
    let p = Powers::new(dev, base, Fr::ONE, count)?;
    let mut out = dev.zeros::<DevFr>(count as usize)?;
    dev.launch(&dev.k.fr_powers, "fr_powers")
        .arg(&mut out)
        .arg(&count)
        .arg(&p.lo)
        .arg(&p.hi)
        .run((blocks(count, BLOCK), 1), BLOCK)?;
    Ok(out)
}

/// The largest domain [`Domain::cached`] counts as small.
const SMALL_LOG_N: u32 = 23;

/// The tables of one domain size on one device.
pub struct Domain {
    log_n: u32,
    /// ω^e and ω^-e for e < m/2.
    fwd: CudaSlice<DevFr>,
    inv: CudaSlice<DevFr>,
    /// m^-1 · g^i: after an inverse NTT, into the coset.
    into_coset: Powers,
    /// m^-1 · g^-i: after an inverse NTT on the coset, back to coefficients.
    out_of_coset: Powers,
    /// g^i, for a plain coset NTT.
    coset: Powers,
    /// m^-1, for a plain inverse NTT.
    scale: Powers,
    z_inv: Fr,
}

impl Domain {
    /// The domain of the smallest power of two ≥ `len`, as `EvaluationDomain::from_coeffs` picks it.
    pub fn for_len(dev: &GpuDevice, len: usize) -> Result<Domain, GpuError> {
        Self::new(dev, Self::log_for(len))
    }

    fn log_for(len: usize) -> u32 {
        len.max(1).next_power_of_two().trailing_zeros()
    }

    /// [`Domain::for_len`], kept on the device for the proofs that follow: making the tables of
    /// a 2^27 domain takes about 4 GB and 25 ms of device time a proof. One small domain (at most
    /// 2^[`SMALL_LOG_N`], tables of 256 MiB at most) and one large are kept, each replaced by the
    /// next of its class: a WinningPoSt (2^19) proved between two PoRep partitions (2^27) then
    /// leaves the PoRep's tables for the next partition instead of making it rebuild them.
    pub(crate) fn cached(dev: &GpuDevice, len: usize) -> Result<Arc<Domain>, GpuError> {
        let log_n = Self::log_for(len);
        let mut slots = dev.domains.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut slots[usize::from(log_n > SMALL_LOG_N)];
        if let Some(d) = slot.as_ref().filter(|d| d.log_n == log_n) {
            return Ok(d.clone());
        }
        *slot = None; // the old tables go before the new ones are made
        let d = Arc::new(Self::new(dev, log_n)?);
        *slot = Some(d.clone());
        Ok(d)
    }

    pub fn new(dev: &GpuDevice, log_n: u32) -> Result<Domain, GpuError> {
        if log_n > MAX_LOG_N {
            return Err(dev.err("ntt", format!("domain 2^{log_n} exceeds 2^{MAX_LOG_N}")));
        }
        let m = 1u64 << log_n;
        let omega = crate::groth16::ntt::omega(log_n);
        // ω, g, m and g^m − 1 are nonzero, so the inversions below cannot fail.
        let omega_inv = omega.invert().unwrap();
        let g = Fr::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().unwrap();
        let m_inv = Fr::from(m).invert().unwrap();
        let half = (m / 2).max(1);
        Ok(Domain {
            log_n,
            fwd: twiddles(dev, omega, half)?,
            inv: twiddles(dev, omega_inv, half)?,
            into_coset: Powers::new(dev, g, m_inv, m)?,
            out_of_coset: Powers::new(dev, g_inv, m_inv, m)?,
            coset: Powers::new(dev, g, Fr::ONE, m)?,
            scale: Powers::new(dev, Fr::ONE, m_inv, m)?,
            z_inv: (g.pow_vartime([m]) - Fr::ONE).invert().unwrap(),
        })
    }

    pub fn size(&self) -> usize {
        1 << self.log_n
    }

    /// Runs every pass of one transform over the first m elements: DIT (stages ascending) or DIF
    /// (descending). `input` is read by the first pass and the result lands in `output`, which may
    /// be the same buffer unless a pass permutes. `first` and `last` are extra flags (and their
    /// powers table) for the first and the last pass.
    #[allow(clippy::too_many_arguments)]
    fn passes(
        &self,
        dev: &GpuDevice,
        input: &CudaSlice<DevFr>,
        output: &CudaSlice<DevFr>,
        tw: &CudaSlice<DevFr>,
        dif: bool,
        first: (u32, Option<&Powers>),
        last: (u32, Option<&Powers>),
    ) -> Result<(), GpuError> {
        let log_n = self.log_n;
        let plan = schedule(log_n, dif, first.0, last.0);
        let count = plan.len();
        for (i, (st0, nst, flags)) in plan.into_iter().enumerate() {
            if flags & SCALE_IN != 0 && flags & SCALE_OUT != 0 {
                return Err(dev.err("ntt", "one pass cannot scale both its loads and its stores"));
            }
            let pw = if flags & SCALE_IN != 0 {
                first.1
            } else if flags & SCALE_OUT != 0 {
                last.1
            } else {
                None
            };
            let (src, dst) = match pass_buffers(i, count, last.0) {
                (false, true) => (input, output),
                (false, false) => (input, input),
                (true, _) => (output, output),
            };
            let pw = pw.unwrap_or(&self.scale);
            let log_l = columns_log(st0, nst);
            let threads = 1u32 << (nst + log_l - nst.min(RADIX_LOG));
            let grid = (1u64 << (log_n - nst - log_l)) as u32;
            // In-place passes hand the same buffer as `in` and `out`: each block reads all of its
            // elements before it writes any, and no two blocks share an element.
            let (kernel, name) = if flags & DIF != 0 { (&dev.k.ntt_pass_dif, "ntt_pass_dif") } else { (&dev.k.ntt_pass_dit, "ntt_pass_dit") };
            dev.launch(kernel, name)
                .arg(src)
                .arg(dst)
                .arg(&log_n)
                .arg(&st0)
                .arg(&nst)
                .arg(tw)
                .arg(&flags)
                .arg(&pw.lo)
                .arg(&pw.hi)
                .run((grid, 1), threads)?;
        }
        Ok(())
    }

    fn table(&self, t: Table) -> &Powers {
        match t {
            Table::Scale => &self.scale,
            Table::Coset => &self.coset,
            Table::IntoCoset => &self.into_coset,
            Table::OutOfCoset => &self.out_of_coset,
        }
    }

    fn mul_powers(&self, dev: &GpuDevice, x: &mut CudaSlice<DevFr>, p: &Powers) -> Result<(), GpuError> {
        let m = self.size() as u64;
        dev.launch(&dev.k.fr_mul_powers, "fr_mul_powers")
            .arg(x)
            .arg(&m)
            .arg(&p.lo)
            .arg(&p.hi)
            .run((blocks(m, BLOCK), 1), BLOCK)
    }

    /// Applies `kind` in place to the first m elements of a device buffer: DIT passes whose first
    /// loads bit-reverse (out of place, into a scratch buffer that then takes `x`'s place), with
    /// the coset shift fused into those loads and the scaling into the last stores.
    pub(crate) fn apply(&self, dev: &GpuDevice, x: &mut CudaSlice<DevFr>, kind: NttKind) -> Result<(), GpuError> {
        if self.log_n == 0 {
            // m = 1: m^-1 = g^0 = 1, every kind is the identity
            return Ok(());
        }
        let (inverse, first, last) = kind_plan(kind);
        let tw = if inverse { &self.inv } else { &self.fwd };
        let (first, last) = ((first.0, first.1.map(|t| self.table(t))), (last.0, last.1.map(|t| self.table(t))));
        let m = self.size();
        let mut out = dev.alloc::<DevFr>(m)?;
        self.passes(dev, x, &out, tw, false, first, last)?;
        if x.len() == m {
            std::mem::swap(x, &mut out);
        } else {
            dev.stream().memcpy_dtod(&out, &mut x.slice_mut(..m)).map_err(|e| dev.err("cuMemcpyDtoDAsync", e))?;
        }
        Ok(())
    }

    /// Uploads `v` zero-padded to m elements (through the pinned staging buffers).
    pub(crate) fn upload_padded(&self, dev: &GpuDevice, v: &[Fr]) -> Result<CudaSlice<DevFr>, GpuError> {
        if v.len() > self.size() {
            return Err(dev.err("upload", format!("{} values exceed domain {}", v.len(), self.size())));
        }
        let mut buf = dev.alloc::<DevFr>(self.size())?;
        dev.upload_scalars(Fr::as_device(v), &mut buf.slice_mut(..v.len()))?;
        if v.len() < self.size() {
            dev.stream().memset_zeros(&mut buf.slice_mut(v.len()..)).map_err(|e| dev.err("cuMemsetD8Async", e))?;
        }
        Ok(buf)
    }

    /// The h polynomial's m coefficients, left on the device in Montgomery form (bellperson uses
    /// the first m − 1), from a, b and c on the domain (each zero-padded to m). a and b come from
    /// the host one after the other on the copy stream, each one's transforms queued as soon as it
    /// is there, so they run while the next uploads; or they are already on their way
    /// ([`Values::Device`], prefetched during the proof before).
    ///
    /// With `c` = `None`, c is made on the device as a∘b instead of uploaded: every constraint of
    /// a satisfied R1CS has a_i·b_i = c_i (bellperson's input constraints x·0 = 0 and the zero
    /// padding too). An unsatisfied witness still gives a proof that fails verification, as with
    /// its own c: the L MSM takes C's terms from the witness, not from here.
    pub(crate) fn h(&self, dev: &GpuDevice, a: Values<'_>, b: Values<'_>, c: Option<&[Fr]>) -> Result<CudaSlice<DevFr>, GpuError> {
        let m = self.size();
        if let Some(n) = c.map(<[Fr]>::len).filter(|&n| n > m) {
            return Err(dev.err("h", format!("{n} values exceed domain {m}")));
        }
        if let Some(why) = [&a, &b].into_iter().find_map(|v| v.misfit(m)) {
            return Err(dev.err("h", why));
        }
        // buffers for what comes from the host, and c's
        let uploads = usize::from(a.is_host()) + usize::from(b.is_host()) + 1;
        dev.reserve("h (a, b, c on the domain)", uploads as u64 * m as u64 * 32)?;
        let mut bufs = dev.alloc_for_upload(&vec![m; uploads])?.into_iter();
        let mut next_buf = || bufs.next().ok_or_else(|| dev.err("h", "missing buffer"));
        let mut c_buf = next_buf()?;
        let mut a = a.ready(dev, &mut next_buf)?;
        if c.is_none() {
            // a's domain values, kept before its transforms overwrite them
            dev.stream().memcpy_dtod(&a, &mut c_buf).map_err(|e| dev.err("cuMemcpyDtoDAsync", e))?;
        }
        self.to_coset(dev, &mut a)?;
        let mut b = b.ready(dev, &mut next_buf)?;
        if c.is_none() {
            self.mul_pointwise(dev, &mut c_buf, &b)?;
        }
        self.to_coset(dev, &mut b)?;
        let mut c = match c {
            // uploaded while b's transforms run
            Some(host) => dev.ready(dev.upload_async(Fr::as_device(host), c_buf)?)?,
            None => c_buf,
        };
        self.to_coset(dev, &mut c)?;
        self.h_from_coset(dev, [a, b, c])
    }

    /// x[i] *= y[i] for the domain's m elements: c = a∘b on the domain, for [`Domain::h`].
    fn mul_pointwise(&self, dev: &GpuDevice, x: &mut CudaSlice<DevFr>, y: &CudaSlice<DevFr>) -> Result<(), GpuError> {
        let m = self.size() as u64;
        if (x.len().min(y.len()) as u64) < m {
            return Err(dev.err("h", format!("buffers of {} and {} for domain {m}", x.len(), y.len())));
        }
        dev.launch(&dev.k.fr_mul_pointwise, "fr_mul_pointwise").arg(x).arg(y).arg(&m).run((blocks(m, BLOCK), 1), BLOCK)
    }

    /// The first step of h for one of a, b, c (zero-padded to m), in place: evaluations on the
    /// domain to evaluations on the coset. A DIF inverse transform leaves the coefficients
    /// bit-reversed (its last stores multiply by m^-1·g^i at the coefficient's index i), and a DIT
    /// forward transform takes them back to natural order.
    pub(crate) fn to_coset(&self, dev: &GpuDevice, x: &mut CudaSlice<DevFr>) -> Result<(), GpuError> {
        let m = self.size();
        if x.len() < m {
            return Err(dev.err("h", format!("buffer of {} for domain {m}", x.len())));
        }
        if self.log_n == 0 {
            return self.mul_powers(dev, x, &self.into_coset);
        }
        self.passes(dev, x, x, &self.inv, true, (0, None), (SCALE_OUT | SCALE_BREV, Some(self.table(Table::IntoCoset))))?;
        self.passes(dev, x, x, &self.fwd, false, (0, None), (0, None))
    }

    /// The rest of h from a, b, c on the coset ([`Domain::to_coset`]): the pointwise step and
    /// the inverse coset transform, the only pass that permutes, into b's buffer.
    pub(crate) fn h_from_coset(&self, dev: &GpuDevice, bufs: [CudaSlice<DevFr>; 3]) -> Result<CudaSlice<DevFr>, GpuError> {
        let m = self.size() as u64;
        if let Some(x) = bufs.iter().find(|x| (x.len() as u64) < m) {
            return Err(dev.err("h", format!("buffer of {} for domain {m}", x.len())));
        }
        let [mut a, mut b, c] = bufs;
        let z_inv = DevFr::from_scalar(&self.z_inv);
        dev.launch(&dev.k.h_pointwise, "h_pointwise")
            .arg(&mut a)
            .arg(&b)
            .arg(&c)
            .arg(&m)
            .arg(&z_inv)
            .run((blocks(m, BLOCK), 1), BLOCK)?;
        drop(c);
        if self.log_n == 0 {
            self.mul_powers(dev, &mut a, &self.out_of_coset)?;
            return Ok(a);
        }
        self.passes(dev, &a, &b, &self.inv, true, (0, None), (SCATTER | SCALE_OUT | SCALE_BREV, Some(&self.out_of_coset)))?;
        if b.len() as u64 > m {
            // the tail past m must read as zeros, as a's did
            dev.stream()
                .memcpy_dtod(&a.slice(m as usize..), &mut b.slice_mut(m as usize..))
                .map_err(|e| dev.err("cuMemcpyDtoDAsync", e))?;
        }
        Ok(b)
    }
}

/// One of h's inputs: values on the host, or an upload already made ([`GpuDevice::upload_async`]),
/// such as a proof's a and b prefetched while the proof before it ran.
pub(crate) enum Values<'a> {
    Host(&'a [Fr]),
    Device(Upload),
}

impl Values<'_> {
    fn is_host(&self) -> bool {
        matches!(self, Values::Host(_))
    }

    /// Why these values do not fit a domain of `m`, if they do not.
    fn misfit(&self, m: usize) -> Option<String> {
        match self {
            Values::Host(v) if v.len() > m => Some(format!("{} values exceed domain {m}", v.len())),
            Values::Device(up) if up.len() < m => Some(format!("prefetched buffer of {} for domain {m}", up.len())),
            _ => None,
        }
    }

    /// The values on the device, for the compute stream: host values go up into a buffer from
    /// `buf` first.
    fn ready(
        self,
        dev: &GpuDevice,
        buf: &mut dyn FnMut() -> Result<CudaSlice<DevFr>, GpuError>,
    ) -> Result<CudaSlice<DevFr>, GpuError> {
        match self {
            Values::Host(v) => dev.ready(dev.upload_async(Fr::as_device(v), buf()?)?),
            Values::Device(up) => dev.ready(up),
        }
    }
}

/// Host-to-host transform of `values` (length a power of two), for tests and benchmarks.
pub fn ntt(dev: &GpuDevice, values: &mut [Fr], kind: NttKind) -> Result<(), GpuError> {
    if !values.len().is_power_of_two() {
        return Err(dev.err("ntt", format!("length {} is not a power of two", values.len())));
    }
    let dom = Domain::for_len(dev, values.len())?;
    let mut buf = dom.upload_padded(dev, values)?;
    dom.apply(dev, &mut buf, kind)?;
    let out = dev.download(&buf, values.len())?;
    for (v, o) in values.iter_mut().zip(out) {
        *v = o.to_scalar();
    }
    Ok(())
}

/// bellperson's h (m − 1 coefficients) computed on the device and read back, for tests; `c` as
/// for [`Domain::h`].
pub fn h_poly(dev: &GpuDevice, a: &[Fr], b: &[Fr], c: Option<&[Fr]>) -> Result<Vec<Fr>, GpuError> {
    let dom = Domain::for_len(dev, a.len().max(b.len()).max(c.map_or(0, <[Fr]>::len)))?;
    let h = dom.h(dev, Values::Host(a), Values::Host(b), c)?;
    let m = dom.size();
    Ok(dev.download(&h, m - 1)?.into_iter().map(DevFr::to_scalar).collect())
}

#[cfg(test)]
mod tests {
    //! The pass schedule and ntt_pass's indexing, run on the CPU: a line-by-line port of the
    //! kernel, checked against the CPU prover's domain (itself checked against bellperson).
    use super::*;
    use crate::groth16::ntt::{omega, Domain as CpuDomain};
    use rand::{rngs::StdRng, SeedableRng};

    fn brev(i: u64, log_n: u32) -> u64 {
        if log_n == 0 {
            0
        } else {
            i.reverse_bits() >> (64 - log_n)
        }
    }

    /// ntt_pass for every block; `input` is a copy, so in-place passes read what the kernel reads.
    #[allow(clippy::too_many_arguments)]
    fn emulate_pass(input: &[Fr], out: &mut [Fr], log_n: u32, st0: u32, nst: u32, tw: &[Fr], flags: u32, pw: &dyn Fn(u64) -> Fr) {
        let log_l = columns_log(st0, nst);
        let cols_log = st0 - log_l;
        let half = 1u32 << (nst + log_l - 1);
        let lmask = (1u32 << log_l) - 1;
        for b in 0..(1u64 << (log_n - nst - log_l)) {
            let hi = b >> cols_log;
            let lo_base = ((b & ((1 << cols_log) - 1)) as u32) << log_l;
            let pos = |e: u32| (hi << (st0 + nst)) | (((e >> log_l) as u64) << st0) | (lo_base + (e & lmask)) as u64;
            let mut s = vec![Fr::ZERO; 2 * half as usize];
            for e in 0..2 * half {
                let p = pos(e);
                let mut v = input[if flags & GATHER != 0 { brev(p, log_n) } else { p } as usize];
                if flags & SCALE_IN != 0 {
                    v *= pw(if flags & SCALE_BREV != 0 { brev(p, log_n) } else { p });
                }
                s[e as usize] = v;
            }
            // ntt_group: stages in groups of RADIX_LOG, each group a butterfly network on the
            // elements whose rows differ only in the group's bits
            let dif = flags & DIF != 0;
            let ngrp = nst.div_ceil(RADIX_LOG);
            for gi in 0..ngrp {
                let s0 = if dif { ngrp - 1 - gi } else { gi } * RADIX_LOG;
                let g = RADIX_LOG.min(nst - s0);
                let low = s0 + log_l;
                for q in 0..(2 * half) >> g {
                    let base = ((q >> low) << (low + g)) | (q & ((1 << low) - 1));
                    let mut v: Vec<Fr> = (0..1u32 << g).map(|x| s[(base | (x << low)) as usize]).collect();
                    let (l, k) = (base & lmask, base >> log_l);
                    // the twiddle index depends on x only through its bits below the stage's
                    let jbase = ((k & ((1 << s0) - 1)) << st0) | (lo_base + l);
                    let zero_base = st0 == 0 && s0 == 0 && g == RADIX_LOG;
                    for ii in 0..g {
                        let i = if dif { g - 1 - ii } else { ii };
                        let gst = st0 + s0 + i;
                        for xl in 0..1u32 << i {
                            // the kernel loads each twiddle once and skips it where it is 1
                            let j = jbase | (xl << (s0 + st0));
                            let w = (!(zero_base && xl == 0)).then(|| tw[(j << (log_n - 1 - gst)) as usize]);
                            for xh in 0..1u32 << (g - 1 - i) {
                                let x = (xl | (xh << (i + 1))) as usize;
                                let y = x | (1 << i);
                                let (u, w_v) = (v[x], v[y]);
                                let (a, b) = match w {
                                    None => (u + w_v, u - w_v),
                                    Some(w) if dif => (u + w_v, (u - w_v) * w),
                                    Some(w) => (u + w_v * w, u - w_v * w),
                                };
                                v[x] = a;
                                v[y] = b;
                            }
                        }
                    }
                    for (x, val) in v.into_iter().enumerate() {
                        s[(base | ((x as u32) << low)) as usize] = val;
                    }
                }
            }
            for e in 0..2 * half {
                let p = pos(e);
                let mut v = s[e as usize];
                if flags & SCALE_OUT != 0 {
                    v *= pw(if flags & SCALE_BREV != 0 { brev(p, log_n) } else { p });
                }
                out[if flags & SCATTER != 0 { brev(p, log_n) } else { p } as usize] = v;
            }
        }
    }

    /// The launches of `passes` on the CPU.
    fn emulate(x: &mut Vec<Fr>, out_of_place: bool, log_n: u32, inverse: bool, dif: bool, first: (u32, Option<&dyn Fn(u64) -> Fr>), last: (u32, Option<&dyn Fn(u64) -> Fr>)) {
        let w = if inverse { omega(log_n).invert().unwrap() } else { omega(log_n) };
        let tw: Vec<Fr> = (0..(1u64 << log_n) / 2).map(|e| w.pow_vartime([e])).collect();
        let one = |_| Fr::ONE;
        let mut out = x.clone();
        // Buffers as `passes` picks them; a pass that permutes must read one and write the other.
        let plan = schedule(log_n, dif, first.0, last.0);
        let count = plan.len();
        for (i, (st0, nst, flags)) in plan.into_iter().enumerate() {
            let pw = if flags & SCALE_IN != 0 { first.1 } else if flags & SCALE_OUT != 0 { last.1 } else { None };
            let (reads_out, writes_out) = if out_of_place { pass_buffers(i, count, last.0) } else { (false, false) };
            if flags & (GATHER | SCATTER) != 0 {
                assert!(reads_out != writes_out, "pass {i} permutes in place");
            }
            let input = if reads_out { out.clone() } else { x.clone() };
            let mut dst = if writes_out { out.clone() } else { x.clone() };
            emulate_pass(&input, &mut dst, log_n, st0, nst, &tw, flags, pw.unwrap_or(&one));
            if writes_out {
                out = dst;
            } else {
                *x = dst;
            }
        }
        if out_of_place {
            *x = out;
        }
    }

    #[test]
    fn plans_cover_every_stage_once_in_passes_that_fit_a_block() {
        for log_n in 1..=MAX_LOG_N {
            let plan = pass_plan(log_n);
            let mut next = 0;
            for &(st0, nst) in &plan {
                assert_eq!(st0, next, "2^{log_n}: {plan:?}");
                assert!(nst >= 1 && nst + columns_log(st0, nst) <= PASS_LOG, "2^{log_n}: {plan:?}");
                assert!(st0 == 0 || columns_log(st0, nst) >= 1 || nst == PASS_LOG, "2^{log_n}: {plan:?}");
                next += nst;
            }
            assert_eq!(next, log_n);
        }
        assert_eq!(pass_plan(24), vec![(0, 10), (10, 7), (17, 7)]);
        assert_eq!(pass_plan(27), vec![(0, 10), (10, 9), (19, 8)]);
    }

    #[test]
    fn every_kind_and_h_match_the_cpu_domain_through_the_kernel_indexing() {
        let mut rng = StdRng::seed_from_u64(7);
        let g = Fr::MULTIPLICATIVE_GENERATOR;
        for log_n in [1u32, 2, 3, 5, 10, 11, 12, 20] {
            let m = 1usize << log_n;
            let cpu = CpuDomain::new(log_n);
            let m_inv = Fr::from(m as u64).invert().unwrap();
            let coset = move |i: u64| g.pow_vartime([i]);
            let scale = move |_: u64| m_inv;
            let out_of_coset = move |i: u64| m_inv * g.invert().unwrap().pow_vartime([i]);
            let into_coset = move |i: u64| m_inv * g.pow_vartime([i]);
            let v: Vec<Fr> = (0..m).map(|_| Fr::random(&mut rng)).collect();

            let table = |t: Table| -> &dyn Fn(u64) -> Fr {
                match t {
                    Table::Scale => &scale,
                    Table::Coset => &coset,
                    Table::IntoCoset => &into_coset,
                    Table::OutOfCoset => &out_of_coset,
                }
            };
            for kind in [NttKind::Forward, NttKind::Inverse, NttKind::CosetForward, NttKind::CosetInverse] {
                let mut want = v.clone();
                match kind {
                    NttKind::Forward => cpu.fft(&mut want),
                    NttKind::Inverse => cpu.ifft(&mut want),
                    NttKind::CosetForward => cpu.coset_fft(&mut want),
                    NttKind::CosetInverse => cpu.icoset_fft(&mut want),
                }
                let (inverse, first, last) = kind_plan(kind);
                let mut got = v.clone();
                emulate(&mut got, true, log_n, inverse, false, (first.0, first.1.map(table)), (last.0, last.1.map(table)));
                assert!(got == want, "{kind:?} 2^{log_n}");
            }

            // h's route to the coset: DIF inverse (bit-reversed out, scaled at the coefficient's
            // index), then DIT forward without a permutation; and back with a scattering DIF.
            let mut want = v.clone();
            cpu.ifft(&mut want);
            cpu.coset_fft(&mut want);
            let mut got = v.clone();
            emulate(&mut got, false, log_n, true, true, (0, None), (SCALE_OUT | SCALE_BREV, Some(&into_coset)));
            emulate(&mut got, false, log_n, false, false, (0, None), (0, None));
            assert!(got == want, "to the coset 2^{log_n}");
            let mut want = v.clone();
            cpu.icoset_fft(&mut want);
            let mut got = v.clone();
            emulate(&mut got, true, log_n, true, true, (0, None), (SCATTER | SCALE_OUT | SCALE_BREV, Some(&out_of_coset)));
            assert!(got == want, "from the coset 2^{log_n}");
        }
    }
}
