//! Fr NTTs and the Groth16 h polynomial on the device, bit-for-bit equal to bellperson's
//! `EvaluationDomain` (natural order, ω from `Fr::ROOT_OF_UNITY`, coset generator g = 7).
//!
//! h = icoset_ntt((coset_ntt(intt(a)) · coset_ntt(intt(b)) − coset_ntt(intt(c))) · (g^m − 1)^-1),
//! with the m^-1 of each inverse transform folded into the coset multiplication that follows it.

use blstrs::Scalar as Fr;
use cudarc::driver::CudaSlice;
use ff::{Field, PrimeField};

use super::device::{blocks, GpuDevice, GpuError};
use super::types::{AsDevice, DevFr};

/* must match NTT_SMEM_LOG and NTT_TW_LO_BITS in cuda/ntt/ntt.cuh */
const SMEM_LOG: u32 = 10;
const TW_LO_BITS: u32 = 12;
/// Threads per block of the elementwise kernels.
const BLOCK: u32 = 256;
/// Largest domain the two-level tables (and Fr's 2-adicity) serve.
pub const MAX_LOG_N: u32 = 31;
const _: () = assert!(MAX_LOG_N <= Fr::S);

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
        let log_n = len.max(1).next_power_of_two().trailing_zeros();
        Self::new(dev, log_n)
    }

    pub fn new(dev: &GpuDevice, log_n: u32) -> Result<Domain, GpuError> {
        if log_n > MAX_LOG_N {
            return Err(dev.err("ntt", format!("domain 2^{log_n} exceeds 2^{MAX_LOG_N}")));
        }
        let m = 1u64 << log_n;
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in log_n..Fr::S {
            omega = omega.square();
        }
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

    /// The in-order radix-2 transform with twiddles `tw`, in place on the first m elements.
    fn transform(&self, dev: &GpuDevice, x: &mut CudaSlice<DevFr>, tw: &CudaSlice<DevFr>) -> Result<(), GpuError> {
        let log_n = self.log_n;
        if log_n == 0 {
            return Ok(());
        }
        let m = 1u64 << log_n;
        dev.launch(&dev.k.ntt_bitrev, "ntt_bitrev").arg(x).arg(&log_n).run((blocks(m, BLOCK), 1), BLOCK)?;
        let log_c = log_n.min(SMEM_LOG);
        dev.launch(&dev.k.ntt_smem, "ntt_smem")
            .arg(x)
            .arg(&log_n)
            .arg(tw)
            .run(((m >> log_c) as u32, 1), 1 << (log_c - 1))?;
        for st in log_c..log_n {
            dev.launch(&dev.k.ntt_stage, "ntt_stage")
                .arg(x)
                .arg(&log_n)
                .arg(&st)
                .arg(tw)
                .run((blocks(m / 2, BLOCK), 1), BLOCK)?;
        }
        Ok(())
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

    /// Applies `kind` in place to the first m elements of a device buffer.
    pub(crate) fn apply(&self, dev: &GpuDevice, x: &mut CudaSlice<DevFr>, kind: NttKind) -> Result<(), GpuError> {
        match kind {
            NttKind::Forward => self.transform(dev, x, &self.fwd),
            NttKind::Inverse => {
                self.transform(dev, x, &self.inv)?;
                self.mul_powers(dev, x, &self.scale)
            }
            NttKind::CosetForward => {
                self.mul_powers(dev, x, &self.coset)?;
                self.transform(dev, x, &self.fwd)
            }
            NttKind::CosetInverse => {
                self.transform(dev, x, &self.inv)?;
                self.mul_powers(dev, x, &self.out_of_coset)
            }
        }
    }

    /// Uploads `v` zero-padded to m elements.
    pub(crate) fn upload_padded(&self, dev: &GpuDevice, v: &[Fr]) -> Result<CudaSlice<DevFr>, GpuError> {
        if v.len() > self.size() {
            return Err(dev.err("upload", format!("{} values exceed domain {}", v.len(), self.size())));
        }
        let mut buf = dev.zeros::<DevFr>(self.size())?;
        if !v.is_empty() {
            dev.stream()
                .memcpy_htod(Fr::as_device(v), &mut buf.slice_mut(..v.len()))
                .map_err(|e| dev.err("cuMemcpyHtoDAsync", e))?;
        }
        Ok(buf)
    }

    /// The h polynomial's m coefficients, left on the device in Montgomery form
    /// (bellperson uses the first m − 1).
    pub(crate) fn h(&self, dev: &GpuDevice, a: &[Fr], b: &[Fr], c: &[Fr]) -> Result<CudaSlice<DevFr>, GpuError> {
        dev.reserve("h (a, b, c on the domain)", 3 * self.size() as u64 * 32)?;
        self.h_on_device(dev, [self.upload_padded(dev, a)?, self.upload_padded(dev, b)?, self.upload_padded(dev, c)?])
    }

    /// [`Domain::h`] from a, b, c already on the device (zero-padded to m).
    pub(crate) fn h_on_device(
        &self,
        dev: &GpuDevice,
        mut bufs: [CudaSlice<DevFr>; 3],
    ) -> Result<CudaSlice<DevFr>, GpuError> {
        for x in bufs.iter_mut() {
            self.transform(dev, x, &self.inv)?;
            self.mul_powers(dev, x, &self.into_coset)?;
            self.transform(dev, x, &self.fwd)?;
        }
        let [mut a, b, c] = bufs;
        let m = self.size() as u64;
        let z_inv = DevFr::from_scalar(&self.z_inv);
        dev.launch(&dev.k.h_pointwise, "h_pointwise")
            .arg(&mut a)
            .arg(&b)
            .arg(&c)
            .arg(&m)
            .arg(&z_inv)
            .run((blocks(m, BLOCK), 1), BLOCK)?;
        drop((b, c));
        self.transform(dev, &mut a, &self.inv)?;
        self.mul_powers(dev, &mut a, &self.out_of_coset)?;
        Ok(a)
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

/// bellperson's h (m − 1 coefficients) computed on the device and read back, for tests.
pub fn h_poly(dev: &GpuDevice, a: &[Fr], b: &[Fr], c: &[Fr]) -> Result<Vec<Fr>, GpuError> {
    let dom = Domain::for_len(dev, a.len().max(b.len()).max(c.len()))?;
    let h = dom.h(dev, a, b, c)?;
    let m = dom.size();
    Ok(dev.download(&h, m - 1)?.into_iter().map(DevFr::to_scalar).collect())
}
