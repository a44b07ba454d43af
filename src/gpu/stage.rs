//! The device stage of one Groth16 proof: h and the five MSMs. [`GpuBackend`] proves through it
//! and `snarkctl bench prove --shape` measures it, so the benchmark times the path proofs take.
//!
//! Uploads overlap the kernels: a and b go up one after another on the copy stream, each one's
//! transforms queued as soon as it is there (c is a∘b, made on the device: [`Domain::h`]); the
//! scalars of L, A and B go up from a second host thread (which also collects A's and B's, a
//! while on a 2^27 witness) during h and the H MSM. When the next proof is already waiting, that
//! thread then uploads its a and b on a third stream, so that the next stage starts with its
//! transforms instead of its uploads.
//!
//! [`GpuBackend`]: super::GpuBackend

use std::borrow::Cow;

use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use cudarc::driver::{CudaEvent, CudaSlice};

use super::device::{GpuDevice, GpuError, Upload};
use super::msm::{msm_device, DeviceBases, G1, G2};
use super::ntt::{Domain, Values};
use super::types::{AsDevice, DevFr};

/// The resident bases of one proof's MSMs. `b_g2` is `None` when B_G2 runs elsewhere.
pub(crate) struct StageBases<'a> {
    pub h: &'a DeviceBases<G1>,
    pub l: &'a DeviceBases<G1>,
    pub a: &'a DeviceBases<G1>,
    pub b_g1: &'a DeviceBases<G1>,
    pub b_g2: Option<&'a DeviceBases<G2>>,
}

/// Scalars made on demand, on the upload thread.
pub(crate) type Scalars<'a> = &'a (dyn Fn() -> Cow<'a, [Fr]> + Sync);

/// One proof's inputs. The witness's c is not among them: h takes c = a∘b, which a satisfied
/// R1CS's c equals, and the proof is verified before it leaves the daemon.
pub(crate) struct StageInput<'a> {
    pub a: &'a [Fr],
    pub b: &'a [Fr],
    /// The L MSM's scalars.
    pub aux: &'a [Fr],
    /// A's scalars (one per base of `StageBases::a`).
    pub a_scalars: Scalars<'a>,
    /// B_G1's and B_G2's scalars (one per base of `StageBases::b_g1`).
    pub b_scalars: Scalars<'a>,
    /// The next proof's a and b, when it is already waiting: they go up after this proof's own
    /// uploads, during its h and H MSM, so that the next h need not wait for them
    /// ([`StageOutput::next`]).
    pub next: Option<(&'a [Fr], &'a [Fr])>,
}

/// A proof's a and b, uploaded during the stage of the proof before it.
pub(crate) struct Prefetched {
    pub a: Upload,
    pub b: Upload,
}

/// The MSM results; `b_g2` is `None` when there were no B_G2 bases.
pub(crate) struct StageOutput {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: Option<G2Projective>,
    /// The next proof's a and b, on their way ([`StageInput::next`]); None when there was no next
    /// proof or its buffers would not have fit.
    pub next: Option<Prefetched>,
    /// Milliseconds of the compute stream from the start to the end of each step, in order:
    /// [`STEPS`]. A step includes any wait for its uploads.
    pub steps: Vec<f32>,
}

/// The steps [`StageOutput::steps`] times.
pub(crate) const STEPS: [&str; 6] = ["h (a, b uploads + 7 ntt + pointwise)", "H msm", "L msm", "A msm", "B_G1 msm", "B_G2 msm"];

/// Runs the stage, with a and b from `prefetched` when the stage before uploaded them.
/// `uploaded` is called once a and b have left the host.
pub(crate) fn run(
    dev: &GpuDevice,
    bases: &StageBases<'_>,
    inp: &StageInput<'_>,
    prefetched: Option<Prefetched>,
    uploaded: &mut dyn FnMut(),
) -> Result<StageOutput, GpuError> {
    let (n_aux, n_a, n_b) = (inp.aux.len(), bases.a.len(), bases.b_g1.len());
    let dom = Domain::cached(dev, inp.a.len())?;
    let m = dom.size();
    let mut marks: Vec<CudaEvent> = vec![dev.mark()?];
    // allocated before any kernel is queued, so the uploads into them need not wait for kernels
    let mut bufs = dev.alloc_for_upload(&[n_aux, n_a, n_b])?.into_iter();
    let mut next = || bufs.next().ok_or_else(|| dev.err("upload", "missing buffer"));
    let (aux_buf, a_buf, b_buf) = (next()?, next()?, next()?);
    // The next proof's a and b go up after this proof's own uploads, during h and the H MSM,
    // when their buffers leave room for this proof's h (3 m) and H MSM scratch (about as much).
    let next_bufs = match inp.next {
        Some((next_a, next_b)) => {
            let next_m = next_a.len().max(next_b.len()).max(1).next_power_of_two();
            dev.prefetch_buffers(&[next_m; 2], 6 * m as u64 * 32)?
        }
        None => None,
    };
    std::thread::scope(|scope| -> Result<StageOutput, GpuError> {
        let (a, b) = match prefetched {
            Some(p) => (Values::Device(p.a), Values::Device(p.b)),
            None => (Values::Host(inp.a), Values::Host(inp.b)),
        };
        let mut h = dom.h(dev, a, b, None)?;
        uploaded();
        marks.push(dev.mark()?);
        // each upload is handed over as soon as its host side is done, so L starts while A's and
        // B's scalars are still being collected and staged
        let (tx, rx) = std::sync::mpsc::channel::<Upload>();
        let mut up = Some(scope.spawn(move || -> Result<Option<Prefetched>, GpuError> {
            // a send fails only when the stage has already given up on an error of its own
            let _ = tx.send(dev.upload_async(Fr::as_device(inp.aux), aux_buf)?);
            let a = (inp.a_scalars)();
            let _ = tx.send(dev.upload_async(Fr::as_device(&a), a_buf)?);
            let b = (inp.b_scalars)();
            let _ = tx.send(dev.upload_async(Fr::as_device(&b), b_buf)?);
            drop((a, b));
            let (Some((next_a, next_b)), Some(bufs)) = (inp.next, next_bufs) else { return Ok(None) };
            let [a_buf, b_buf]: [CudaSlice<DevFr>; 2] = bufs.try_into().map_err(|_| dev.err("prefetch", "two buffers"))?;
            let a = dev.prefetch_async(Fr::as_device(next_a), a_buf)?;
            let b = dev.prefetch_async(Fr::as_device(next_b), b_buf)?;
            Ok(Some(Prefetched { a, b }))
        }));
        let mut next_upload = || -> Result<Upload, GpuError> {
            rx.recv().map_err(|_| match up.take().map(|t| t.join()) {
                Some(Ok(Err(e))) => e,
                Some(Err(_)) => dev.err("upload", "the upload thread panicked"),
                _ => dev.err("upload", "the upload thread stopped early"),
            })
        };
        let g_h = msm_device(dev, bases.h, &mut h, m - 1)?;
        drop(h);
        marks.push(dev.mark()?);
        let mut l = dev.ready(next_upload()?)?;
        let g_l = msm_device(dev, bases.l, &mut l, n_aux)?;
        drop(l);
        marks.push(dev.mark()?);
        let mut a = dev.ready(next_upload()?)?;
        let g_a = msm_device(dev, bases.a, &mut a, n_a)?;
        drop(a);
        marks.push(dev.mark()?);
        // each MSM converts its scalars in place: B_G2 gets a copy
        let mut b1 = dev.ready(next_upload()?)?;
        let b2 = bases.b_g2.map(|_| dev.copy_of(&b1)).transpose()?;
        let g_b1 = msm_device(dev, bases.b_g1, &mut b1, n_b)?;
        drop(b1);
        marks.push(dev.mark()?);
        let g_b2 = match (bases.b_g2, b2) {
            (Some(bases), Some(mut b2)) => Some(msm_device(dev, bases, &mut b2, n_b)?),
            _ => None,
        };
        marks.push(dev.mark()?);
        dev.sync()?;
        let next = match up.take().map(|t| t.join()) {
            Some(Ok(r)) => r?,
            Some(Err(_)) => return Err(dev.err("upload", "the upload thread panicked")),
            None => None,
        };
        let steps = marks
            .windows(2)
            .map(|w| w[0].elapsed_ms(&w[1]).map_err(|e| dev.err("cuEventElapsedTime", e)))
            .collect::<Result<Vec<f32>, _>>()?;
        Ok(StageOutput { h: g_h, l: g_l, a: g_a, b_g1: g_b1, b_g2: g_b2, next, steps })
    })
}
