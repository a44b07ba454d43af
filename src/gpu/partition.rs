//! One partition's proof on a device: h and the five MSMs, the device half of the engine's prove
//! stage. [`GpuBackend`] proves through it and `snarkctl bench partition --shape` measures it, so
//! the benchmark times the path proofs take.
//!
//! Uploads overlap the kernels: a and b go up one after another on the copy stream, each one's
//! transforms queued as soon as it is there (c is a∘b, made on the device: [`Domain::h`]); the
//! aux assignment (L's scalars) goes up from a second host thread during h and the H MSM, and
//! A's and B's scalars are picked from it on the device by their density bits
//! ([`select_scalars`]), so the host neither collects them nor uploads them again. When the next
//! proof is already waiting, that thread then uploads its a and b on a third stream, so that the
//! next partition starts with its transforms instead of its uploads; when the device makes a and
//! b from the circuit's record, the next proof's aux goes up instead, after the H MSM.
//!
//! [`GpuBackend`]: super::GpuBackend

use std::borrow::Cow;

use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use cudarc::driver::{CudaEvent, CudaSlice};

use super::device::{blocks, GpuDevice, GpuError, Upload};
use super::msm::{msm_bases, Bases, G1, G2};
use super::ntt::{Domain, Values};
use super::record::DeviceRecord;
use super::types::{AsDevice, DevFr};
use crate::groth16::Density;

/// The bases of one proof's MSMs, each resident or streamed from host memory. `b_g2` is `None`
/// when B_G2 runs elsewhere.
pub(crate) struct PartitionBases<'a> {
    pub h: Bases<'a, G1>,
    pub l: Bases<'a, G1>,
    pub a: Bases<'a, G1>,
    pub b_g1: Bases<'a, G1>,
    pub b_g2: Option<Bases<'a, G2>>,
}

/// Which values of the assignment one query's MSM takes, in order: the inputs it keeps (a
/// handful, picked on the host), then the aux values whose bit is set in `aux` (the parameters
/// hold bases for those only).
pub(crate) struct Selection<'a> {
    pub inputs: Cow<'a, [Fr]>,
    pub aux: &'a Density,
}

impl Selection<'_> {
    /// How many scalars (and bases) the query has.
    pub(crate) fn len(&self) -> usize {
        self.inputs.len() + self.aux.count_ones()
    }
}

/// One proof's inputs. The witness's c is not among them: h takes c = a∘b, which a satisfied
/// R1CS's c equals, and the proof is verified before it leaves the daemon.
pub(crate) struct PartitionInput<'a> {
    pub ab: Ab<'a>,
    /// The input assignment (ONE first).
    pub input: &'a [Fr],
    /// The L MSM's scalars.
    pub aux: &'a [Fr],
    /// A's scalars (one per base of `PartitionBases::a`).
    pub a_select: Selection<'a>,
    /// B_G1's and B_G2's scalars (one per base of `PartitionBases::b_g1`).
    pub b_select: Selection<'a>,
    /// The next proof's inputs, when it is already waiting, to upload during this proof
    /// ([`PartitionOutput::next`]).
    pub next: Option<Next<'a>>,
}

/// What the next proof uploads first, moved during the proof before it.
#[derive(Clone, Copy)]
pub(crate) enum Next<'a> {
    /// a and b made on the host: they go up after this proof's own uploads, during its h and
    /// H MSM, so that the next h need not wait for them.
    Ab(&'a [Fr], &'a [Fr]),
    /// The aux of a witness whose a and b the device makes from the record: it goes up once
    /// this proof's H MSM has freed h's buffers, during L, A and B, so that the next proof
    /// starts with the record's evaluation instead of the aux's upload.
    Aux(&'a [Fr]),
}

/// Where a proof's a and b come from.
pub(crate) enum Ab<'a> {
    /// Made on the host (uploaded, or prefetched during the proof before).
    Host { a: &'a [Fr], b: &'a [Fr] },
    /// Made on the device from the circuit's record, over the inputs and the aux, which then
    /// goes up before h instead of during it.
    Record(&'a DeviceRecord),
}

impl Ab<'_> {
    /// How many evaluations a and b have before padding to the domain.
    fn len(&self) -> usize {
        match self {
            Ab::Host { a, .. } => a.len(),
            Ab::Record(r) => r.evaluations(),
        }
    }
}

/// A proof's first inputs, uploaded during the partition proved before it ([`Next`]).
pub(crate) enum Prefetched {
    Ab { a: Upload, b: Upload },
    Aux(Upload),
}

/// The MSM results; `b_g2` is `None` when there were no B_G2 bases.
pub(crate) struct PartitionOutput {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: Option<G2Projective>,
    /// The next proof's inputs, on their way ([`PartitionInput::next`]); None when there was no
    /// next proof or its buffers would not have fit.
    pub next: Option<Prefetched>,
    /// Milliseconds of the compute stream from the start to the end of each step, in order:
    /// [`STEPS`]. A step includes any wait for its uploads.
    pub steps: Vec<f32>,
}

/// With `SNARKD_GPU_TRACE=partition`, the host's side of each partition's proof printed to stderr: when each
/// upload left the host and each step was queued or returned, in milliseconds from its
/// start. Nothing is synchronized for it, so the proof runs as it would untraced.
#[derive(Clone, Copy)]
struct Timeline(Option<std::time::Instant>);

impl Timeline {
    fn start() -> Timeline {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let on = *ON.get_or_init(|| std::env::var("SNARKD_GPU_TRACE").as_deref() == Ok("partition"));
        Timeline(on.then(std::time::Instant::now))
    }

    fn note(&self, what: &str) {
        if let Some(t0) = self.0 {
            eprintln!("partition trace: {:9.3} ms {what}", t0.elapsed().as_secs_f64() * 1e3);
        }
    }
}

/// The steps [`PartitionOutput::steps`] times.
pub(crate) const STEPS: [&str; 6] = ["h (a, b uploads or aux upload + a, b from the record; 7 ntt + pointwise)", "H msm", "L msm (+ A's, B's scalars picked)", "A msm", "B_G1 msm", "B_G2 msm"];

/// How often a partition looks for a critical proof while its h runs ([`run`]): such a proof
/// waits at most this long to be taken, for the cost of one host thread woken this often during
/// h's fraction of a second.
const H_POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// Proves one partition, with a and b from `prefetched` when the partition before uploaded them.
/// `uploaded` is called once a and b have left the host. `between` is called where the proof can
/// pause for another on the same device: from when h is queued and the aux is on its way until
/// h is done (polled), and after each MSM but the last; it returns whether it proved anything
/// there, whose time the steps then leave out.
pub(crate) fn run(
    dev: &GpuDevice,
    bases: &PartitionBases<'_>,
    inp: &PartitionInput<'_>,
    prefetched: Option<Prefetched>,
    uploaded: &mut dyn FnMut(),
    between: &mut dyn FnMut() -> bool,
) -> Result<PartitionOutput, GpuError> {
    let (n_aux, n_a, n_b) = (inp.aux.len(), bases.a.len(), bases.b_g1.len());
    let tl = Timeline::start();
    let dom = Domain::cached(dev, inp.ab.len())?;
    let m = dom.size();
    for (what, sel, n) in [("a", &inp.a_select, n_a), ("b", &inp.b_select, n_b)] {
        if sel.aux.len() != n_aux || sel.len() != n {
            let why = format!("{what} density over {} of {n_aux} aux selects {} of {n} scalars", sel.aux.len(), sel.len());
            return Err(dev.err("select", why));
        }
    }
    let mut marks: Vec<CudaEvent> = vec![dev.mark()?];
    // the windows between marks that another proof took (an interlude), left out of the steps
    let mut interludes: Vec<usize> = vec![];
    let mut pause = |marks: &mut Vec<CudaEvent>, interludes: &mut Vec<usize>| -> Result<bool, GpuError> {
        let proved = between();
        if proved {
            interludes.push(marks.len() - 1);
            marks.push(dev.mark()?);
            tl.note("resumed after another proof");
        }
        Ok(proved)
    };
    // allocated before any kernel is queued, so the uploads into them need not wait for kernels
    let density_bufs = |sel: &Selection<'_>| -> Result<_, GpuError> {
        let words = sel.aux.words().len();
        Ok((dev.alloc::<u64>(words)?, dev.alloc::<u32>(words)?))
    };
    let (a_meta, b_meta) = (density_bufs(&inp.a_select)?, density_bufs(&inp.b_select)?);
    // an aux that the proof before uploaded for a record-made witness needs no buffer here
    let (prefetched_aux, prefetched) = match prefetched {
        Some(Prefetched::Aux(up)) if up.len() == n_aux && matches!(inp.ab, Ab::Record(_)) => (Some(up), None),
        other => (None, other),
    };
    let lens: &[usize] = if prefetched_aux.is_some() { &[n_a, n_b] } else { &[n_a, n_b, n_aux] };
    let mut bufs = dev.alloc_for_upload(lens)?.into_iter();
    let mut next = || bufs.next().ok_or_else(|| dev.err("upload", "missing buffer"));
    let (a_buf, b_buf, mut aux_buf) = (next()?, next()?, bufs.next());
    // The next proof's a and b go up after this proof's own uploads, during h and the H MSM,
    // when their buffers leave room for this proof's h (3 m) and H MSM scratch (about as much).
    let next_bufs = match inp.next {
        Some(Next::Ab(next_a, next_b)) => {
            let next_m = next_a.len().max(next_b.len()).max(1).next_power_of_two();
            dev.prefetch_buffers(&[next_m; 2], 6 * m as u64 * 32)?
        }
        _ => None,
    };
    std::thread::scope(|scope| -> Result<PartitionOutput, GpuError> {
        // From a record, a and b are made from the aux, which therefore goes up first (or came
        // up during the proof before).
        let (a, b, aux_ready) = match (&inp.ab, prefetched) {
            (Ab::Record(record), _) => {
                let aux = match (prefetched_aux, aux_buf.take()) {
                    (Some(up), _) => dev.ready(up)?,
                    (None, Some(buf)) => dev.ready(dev.upload_async(Fr::as_device(inp.aux), buf)?)?,
                    (None, None) => return Err(dev.err("upload", "no buffer for the aux")),
                };
                tl.note("aux staged");
                let input = dev.upload(Fr::as_device(inp.input))?;
                let (a, b) = record.evaluate(dev, &input, &aux, m)?;
                (Values::Device(dev.resident(a)?), Values::Device(dev.resident(b)?), Some(aux))
            }
            (Ab::Host { .. }, Some(Prefetched::Ab { a, b })) => (Values::Device(a), Values::Device(b), None),
            (Ab::Host { a, b }, _) => (Values::Host(a), Values::Host(b), None),
        };
        tl.note("buffers allocated");
        let mut h = dom.h(dev, a, b, None)?;
        tl.note("h queued");
        uploaded();
        // the two queries' inputs and density bits, small, on the copy stream before the aux
        let a_query = QueryUpload::start(dev, &inp.a_select, a_buf, a_meta)?;
        let b_query = QueryUpload::start(dev, &inp.b_select, b_buf, b_meta)?;
        tl.note("density bits uploaded");
        marks.push(dev.mark()?);
        // the aux is handed over as soon as its host side is done: L need not wait for the
        // next proof's a and b, which follow it
        let (tx, rx) = std::sync::mpsc::channel::<Upload>();
        let mut up = Some(scope.spawn(move || -> Result<Option<Prefetched>, GpuError> {
            if let Some(aux_buf) = aux_buf {
                // a send fails only when the proof has already given up on an error of its own
                let _ = tx.send(dev.upload_async(Fr::as_device(inp.aux), aux_buf)?);
                tl.note("upload: aux staged");
            }
            let (Some(Next::Ab(next_a, next_b)), Some(bufs)) = (inp.next, next_bufs) else { return Ok(None) };
            let [a_buf, b_buf]: [CudaSlice<DevFr>; 2] = bufs.try_into().map_err(|_| dev.err("prefetch", "two buffers"))?;
            let a = dev.prefetch_async(Fr::as_device(next_a), a_buf)?;
            tl.note("upload: next a staged");
            let b = dev.prefetch_async(Fr::as_device(next_b), b_buf)?;
            tl.note("upload: next b staged");
            Ok(Some(Prefetched::Ab { a, b }))
        }));
        // h is a quarter of the partition (0.4 s at 2^27): until it is done the proof pauses as
        // often as it polls, so a critical proof coming meanwhile queues its kernels right behind
        // h instead of waiting for the H MSM as well (the next pause, when that MSM returns)
        while !pause(&mut marks, &mut interludes)? {
            // the last mark follows h on the compute stream
            if marks[marks.len() - 1].try_is_complete().map_err(|e| dev.err("cuEventQuery", e))? {
                break;
            }
            std::thread::sleep(H_POLL);
        }
        let mut aux_upload = || -> Result<Upload, GpuError> {
            rx.recv().map_err(|_| match up.take().map(|t| t.join()) {
                Some(Ok(Err(e))) => e,
                Some(Err(_)) => dev.err("upload", "the upload thread panicked"),
                _ => dev.err("upload", "the upload thread stopped early"),
            })
        };
        let g_h = msm_bases(dev, &bases.h, &mut h, m - 1)?;
        tl.note("H msm returned");
        drop(h);
        marks.push(dev.mark()?);
        pause(&mut marks, &mut interludes)?;
        // the next proof's aux, when h's buffers leave room for it beside the MSMs' scratch
        let next_aux = match inp.next {
            Some(Next::Aux(next)) => Some(scope.spawn(move || -> Result<Option<Prefetched>, GpuError> {
                let Some(buf) = dev.prefetch_buffers(&[next.len()], 2 * m as u64 * 32)?.and_then(|mut b| b.pop()) else {
                    return Ok(None);
                };
                let up = dev.prefetch_async(Fr::as_device(next), buf)?;
                tl.note("upload: next aux staged");
                Ok(Some(Prefetched::Aux(up)))
            })),
            _ => None,
        };
        let mut l = match aux_ready {
            Some(aux) => aux,
            None => dev.ready(aux_upload()?)?,
        };
        // picked before L's MSM converts the aux values in place
        let mut a = a_query.select(dev, &l)?;
        let mut b1 = b_query.select(dev, &l)?;
        let g_l = msm_bases(dev, &bases.l, &mut l, n_aux)?;
        tl.note("L msm returned");
        drop(l);
        marks.push(dev.mark()?);
        pause(&mut marks, &mut interludes)?;
        let g_a = msm_bases(dev, &bases.a, &mut a, n_a)?;
        tl.note("A msm returned");
        drop(a);
        marks.push(dev.mark()?);
        pause(&mut marks, &mut interludes)?;
        // each MSM converts its scalars in place: B_G2 gets a copy
        let b2 = bases.b_g2.as_ref().map(|_| dev.copy_of(&b1)).transpose()?;
        let g_b1 = msm_bases(dev, &bases.b_g1, &mut b1, n_b)?;
        tl.note("B_G1 msm returned");
        drop(b1);
        marks.push(dev.mark()?);
        pause(&mut marks, &mut interludes)?;
        let g_b2 = match (&bases.b_g2, b2) {
            (Some(bases), Some(mut b2)) => Some(msm_bases(dev, bases, &mut b2, n_b)?),
            _ => None,
        };
        marks.push(dev.mark()?);
        dev.sync()?;
        tl.note("B_G2 msm done, compute stream idle");
        let mut next = None;
        for thread in [up.take(), next_aux] {
            match thread.map(|t| t.join()) {
                Some(Ok(r)) => next = next.or(r?),
                Some(Err(_)) => return Err(dev.err("upload", "the upload thread panicked")),
                None => {}
            }
        }
        tl.note("upload thread joined");
        let steps = marks
            .windows(2)
            .enumerate()
            .filter(|(i, _)| !interludes.contains(i))
            .map(|(_, w)| w[0].elapsed_ms(&w[1]).map_err(|e| dev.err("cuEventElapsedTime", e)))
            .collect::<Result<Vec<f32>, _>>()?;
        Ok(PartitionOutput { h: g_h, l: g_l, a: g_a, b_g1: g_b1, b_g2: g_b2, next, steps })
    })
}

/// One query's inputs and density bits on their way to the device, and the buffer its scalars
/// will be picked into.
struct QueryUpload {
    dst: Upload,
    words: Upload<u64>,
    offsets: Upload<u32>,
}

impl QueryUpload {
    /// Starts the uploads: the kept inputs into the front of `dst`, the density words, and where
    /// each word's first selected value goes (the inputs' count plus the set bits of the words
    /// before it).
    fn start(dev: &GpuDevice, sel: &Selection<'_>, dst: CudaSlice<DevFr>, (words, offsets): (CudaSlice<u64>, CudaSlice<u32>)) -> Result<QueryUpload, GpuError> {
        let mut at = sel.inputs.len() as u32;
        let starts: Vec<u32> = sel
            .aux
            .words()
            .iter()
            .map(|w| {
                let here = at;
                at += w.count_ones();
                here
            })
            .collect();
        Ok(QueryUpload {
            dst: dev.upload_small(Fr::as_device(&sel.inputs), dst)?,
            words: dev.upload_small(sel.aux.words(), words)?,
            offsets: dev.upload_small(&starts, offsets)?,
        })
    }

    /// The query's scalars, picked on the compute stream from `aux` (still in Montgomery form).
    fn select(self, dev: &GpuDevice, aux: &CudaSlice<DevFr>) -> Result<CudaSlice<DevFr>, GpuError> {
        let (mut dst, words, offsets) = (dev.ready(self.dst)?, dev.ready(self.words)?, dev.ready(self.offsets)?);
        select_scalars(dev, aux, &words, &offsets, &mut dst)?;
        Ok(dst)
    }
}

/// `sel`'s scalars picked from `aux` (on the device, in Montgomery form) by the proving path,
/// for the self-test.
pub(crate) fn select(dev: &GpuDevice, aux: &CudaSlice<DevFr>, sel: &Selection<'_>) -> Result<CudaSlice<DevFr>, GpuError> {
    let words = sel.aux.words().len();
    let meta = (dev.alloc::<u64>(words)?, dev.alloc::<u32>(words)?);
    let dst = dev.alloc_for_upload(&[sel.len()])?.pop().ok_or_else(|| dev.err("upload", "missing buffer"))?;
    QueryUpload::start(dev, sel, dst, meta)?.select(dev, aux)
}

/// `dst[offsets[i / 64] + (set bits of words[i / 64] below bit i % 64)] = src[i]` for each i whose
/// bit is set: the values of `src` a density selects, packed in order after whatever the offsets
/// leave room for. The words cover `src` (bits past its end unset).
fn select_scalars(
    dev: &GpuDevice,
    src: &CudaSlice<DevFr>,
    words: &CudaSlice<u64>,
    offsets: &CudaSlice<u32>,
    dst: &mut CudaSlice<DevFr>,
) -> Result<(), GpuError> {
    const BLOCK: u32 = 256;
    let n = (src.len() as u64).min(words.len() as u64 * 64);
    dev.launch(&dev.k.fr_select, "fr_select").arg(src).arg(&n).arg(words).arg(offsets).arg(dst).run((blocks(n, BLOCK), 1), BLOCK)
}
