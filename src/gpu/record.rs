//! A precompiled circuit's record ([`Precompiled`]) on the device, and the kernel that makes a
//! proof's a = A·w and b = B·w from it. With the record resident, synthesis leaves A and B out
//! ([`crate::groth16::Fill::Deferred`]): the host holds a third of a witness until its proof, and
//! only the assignment crosses PCIe instead of a, b and the assignment.

use std::sync::{Arc, Weak};

use blstrs::Scalar as Fr;
use cudarc::driver::CudaSlice;

use super::device::{blocks, GpuDevice, GpuError};
use super::types::{AsDevice, DevFr};
use crate::groth16::Precompiled;

/// One matrix: row ends, then terms as (variable, coefficient id) pairs of u32.
struct DeviceMatrix {
    ends: CudaSlice<u32>,
    terms: CudaSlice<u32>,
}

/// A record's matrices and coefficients in device memory.
pub(crate) struct DeviceRecord {
    /// The host record these came from (the engine keeps one per circuit); weak, so that a
    /// record the engine forgot is not kept alive by a device.
    of: Weak<Precompiled>,
    rows: usize,
    inputs: usize,
    aux: usize,
    a: DeviceMatrix,
    b: DeviceMatrix,
    coeffs: CudaSlice<DevFr>,
}

impl DeviceRecord {
    /// Device bytes `record` takes once uploaded.
    pub(crate) fn bytes_for(record: &Precompiled) -> u64 {
        let raw = record.raw();
        ((raw.a.0.len() + raw.a.1.len() + raw.b.0.len() + raw.b.1.len()) * 4 + raw.coeffs.len() * 32) as u64
    }

    pub(crate) fn bytes(&self) -> u64 {
        ((self.a.ends.len() + self.a.terms.len() + self.b.ends.len() + self.b.terms.len()) * 4 + self.coeffs.len() * 32) as u64
    }

    pub(crate) fn upload(dev: &GpuDevice, record: &Arc<Precompiled>) -> Result<DeviceRecord, GpuError> {
        let raw = record.raw();
        let matrix = |(ends, terms): (&[u32], &[u32])| -> Result<DeviceMatrix, GpuError> {
            Ok(DeviceMatrix { ends: dev.upload(ends)?, terms: dev.upload(terms)? })
        };
        let up = DeviceRecord {
            of: Arc::downgrade(record),
            rows: record.constraints(),
            inputs: raw.inputs,
            aux: raw.aux,
            a: matrix(raw.a)?,
            b: matrix(raw.b)?,
            coeffs: dev.upload(Fr::as_device(raw.coeffs))?,
        };
        dev.sync()?;
        Ok(up)
    }

    /// a's and b's length before padding: the rows plus one closing constraint per input.
    pub(crate) fn evaluations(&self) -> usize {
        self.rows + self.inputs
    }

    /// Whether this is `record` on the device.
    pub(crate) fn is(&self, record: &Arc<Precompiled>) -> bool {
        Weak::ptr_eq(&self.of, &Arc::downgrade(record))
    }

    /// a and b over `input` and `aux` (on the device, Montgomery form), each padded with the
    /// closing constraint per input (a only) and zeros to `m` values; queued on the compute stream.
    pub(crate) fn evaluate(
        &self,
        dev: &GpuDevice,
        input: &CudaSlice<DevFr>,
        aux: &CudaSlice<DevFr>,
        m: usize,
    ) -> Result<(CudaSlice<DevFr>, CudaSlice<DevFr>), GpuError> {
        if input.len() < self.inputs || aux.len() < self.aux || self.rows + self.inputs > m {
            let why = format!(
                "{} inputs, {} aux and domain {m} for a record of {} inputs, {} aux and {} rows",
                input.len(),
                aux.len(),
                self.inputs,
                self.aux,
                self.rows
            );
            return Err(dev.err("r1cs_spmv", why));
        }
        let (mut a, mut b) = (dev.alloc::<DevFr>(m)?, dev.alloc::<DevFr>(m)?);
        for (matrix, out, close) in [(&self.a, &mut a, 1u32), (&self.b, &mut b, 0u32)] {
            const BLOCK: u32 = 256;
            let (n_inputs, rows, m) = (self.inputs as u32, self.rows as u64, m as u64);
            dev.launch(&dev.k.r1cs_spmv, "r1cs_spmv")
                .arg(&matrix.ends)
                .arg(&matrix.terms)
                .arg(&self.coeffs)
                .arg(input)
                .arg(&n_inputs)
                .arg(aux)
                .arg(&rows)
                .arg(&close)
                .arg(&m)
                .arg(out)
                .run((blocks(m, BLOCK), 1), BLOCK)?;
        }
        Ok((a, b))
    }
}
