//! [`GpuBackend`]: the Groth16 prove stage on one CUDA device.
//!
//! h is computed on the device and never read back; the five MSMs run on the device against SRS
//! bases uploaded once per (device, circuit) and kept resident. Several circuits stay resident
//! while they fit beside a proof's working memory, so a WinningPoSt between two PoRep partitions
//! does not cost the PoRep a 50 GB re-upload; the least recently used go first when a circuit
//! needs room. The witness check and the assembly
//! are groth16's ([`check_shape`], [`assemble`]), the same code the CPU backend runs, so the two
//! backends cannot drift apart.

use std::borrow::Cow;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use rand_core::OsRng;

use super::device::{GpuDevice, GpuError};
use super::msm::{Bases, DeviceBases, G1, G2, STREAM_SPARE};
use super::partition::{self, Ab, Next, PartitionBases, PartitionInput, PartitionOutput, Prefetched, Selection};
use super::record::DeviceRecord;
use super::types::AsDevice;
use crate::groth16::prover::{assemble, check_shape, MsmSums};
use crate::groth16::{BackendError, Density, DeviceMemory, Interlude, Precompiled, Proof, ProveTimings, ProvingBackend, ReleaseFn, UrgentFn, Witness};
use crate::srs::{CircuitId, Srs};
use crate::units::Bytes;

/// The SRS bases of one circuit on the device; a query that is `None` did not fit beside a
/// partition's work and is streamed from the host's copy by each MSM ([`Bases::Host`]).
struct Resident {
    id: CircuitId,
    loaded_at: SystemTime,
    h: Option<DeviceBases<G1>>,
    l: Option<DeviceBases<G1>>,
    a: Option<DeviceBases<G1>>,
    b_g1: Option<DeviceBases<G1>>,
    b_g2: Option<DeviceBases<G2>>,
    /// The circuit's precompiled record, once a witness deferred to it has come.
    record: Option<DeviceRecord>,
}

impl Resident {
    fn bytes(&self) -> u64 {
        let record = self.record.as_ref().map_or(0, DeviceRecord::bytes);
        let g1 = [&self.h, &self.l, &self.a, &self.b_g1].iter().map(|b| b.as_ref().map_or(0, DeviceBases::bytes)).sum::<u64>();
        g1 + self.b_g2.as_ref().map_or(0, DeviceBases::bytes) + record
    }

    /// The queries streamed from host memory, for logs.
    fn streamed(&self) -> Vec<&'static str> {
        let g1 = [("h", &self.h), ("l", &self.l), ("a", &self.a), ("b_g1", &self.b_g1)];
        let mut out: Vec<&str> = g1.iter().filter(|(_, b)| b.is_none()).map(|(n, _)| *n).collect();
        if self.b_g2.is_none() {
            out.push("b_g2");
        }
        out
    }

    /// The five queries for one proof, each resident or streamed from `srs`.
    fn bases<'a>(&'a self, srs: &'a Srs) -> PartitionBases<'a> {
        fn pick<'a, C: super::msm::Curve>(dev: &'a Option<DeviceBases<C>>, host: &'a [C::Affine]) -> Bases<'a, C> {
            dev.as_ref().map_or(Bases::Host(host), Bases::Device)
        }
        PartitionBases {
            h: pick(&self.h, &srs.h),
            l: pick(&self.l, &srs.l),
            a: pick(&self.a, &srs.a),
            b_g1: pick(&self.b_g1, &srs.b_g1),
            b_g2: Some(pick(&self.b_g2, &srs.b_g2)),
        }
    }
}

/// What a partition takes on the device besides its circuit's bases: its record, when A and B
/// are evaluated from one, and its working memory.
struct Footprint<'a> {
    record: Option<&'a Arc<Precompiled>>,
    evaluations: usize,
    scalars: usize,
}

impl<'a> Footprint<'a> {
    fn of(w: &'a Witness) -> Footprint<'a> {
        Footprint { record: w.record.as_ref(), evaluations: w.evaluations(), scalars: w.input.len() + w.aux.len() }
    }

    /// A partition of `srs`'s circuit, before any witness of it exists: its evaluations are the
    /// record's constraints and the inputs, or the domain (`h` has one point fewer).
    fn of_circuit(srs: &Srs, record: Option<&'a Arc<Precompiled>>) -> Footprint<'a> {
        let inputs = srs.vk.ic.len();
        let evaluations = record.map_or(srs.h.len() + 1, |r| r.constraints() + inputs);
        Footprint { record, evaluations, scalars: inputs + srs.l.len() }
    }

    /// The device bytes: the record's and the working memory's.
    fn bytes(&self) -> u64 {
        self.record.map_or(0, |r| DeviceRecord::bytes_for(r)) + working_bytes(self.evaluations, self.scalars)
    }
}

/// A proving backend on one device; proofs on it run one at a time.
pub struct GpuBackend {
    dev: GpuDevice,
    /// Resident circuits, least recently used first.
    resident: Mutex<Vec<Resident>>,
    /// Their ids, for placement ([`ProvingBackend::holds`]), which must not wait while a proof
    /// holds `resident`.
    resident_ids: Mutex<Vec<CircuitId>>,
    /// a and b of the witness announced as next by the proof before ([`ProvingBackend::prove_then`]).
    prefetched: Mutex<Option<(WitnessKey, Prefetched)>>,
}

/// Which witness a prefetch belongs to: where its a, b and aux live, their lengths, and a sample
/// of their values (so a later witness that happens to reuse the same allocations is not taken for
/// it). A mix-up could only cost a proof that fails verification, never a wrong reply.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WitnessKey([u64; 5]);

impl WitnessKey {
    fn of(w: &Witness) -> WitnessKey {
        let sample = |v: &[Fr]| -> u64 {
            let step = (v.len() / 16).max(1);
            v.iter().step_by(step).fold(v.len() as u64, |h, x| {
                let words: [u32; 8] = Fr::as_device(std::slice::from_ref(x))[0].0;
                words.iter().fold(h, |h, &w| (h ^ w as u64).wrapping_mul(0x100_0000_01b3).rotate_left(17))
            })
        };
        // a witness whose a and b the device makes has them empty: its aux tells it apart
        let (a, b, aux) = (&w.a, &w.b, &w.aux);
        WitnessKey([
            a.as_ptr() as u64 ^ (a.len() as u64).rotate_left(48),
            b.as_ptr() as u64 ^ (b.len() as u64).rotate_left(48),
            aux.as_ptr() as u64,
            aux.len() as u64,
            sample(a) ^ sample(b).rotate_left(21) ^ sample(aux).rotate_left(42),
        ])
    }
}

impl GpuBackend {
    pub fn new(dev: GpuDevice) -> Self {
        GpuBackend { dev, resident: Mutex::new(Vec::new()), resident_ids: Mutex::new(Vec::new()), prefetched: Mutex::new(None) }
    }

    pub fn device(&self) -> &GpuDevice {
        &self.dev
    }

    fn device_error(&self, e: GpuError) -> BackendError {
        let (call, reason) = match e {
            GpuError::OutOfMemory { what, needed, free, .. } => {
                return BackendError::OutOfMemory { device: self.dev.label(), what: what.into(), needed: Bytes(needed), free: Bytes(free) }
            }
            GpuError::Driver { call, reason, .. } => (call.to_string(), reason),
            other => ("prove".to_string(), other.to_string()),
        };
        BackendError::Device { device: self.dev.label(), call, reason }
    }

    /// Uploads `srs`'s queries that fit in `room` bytes (as many bytes of them as fit: the
    /// fewest bytes are then streamed per proof); the rest stay on the host and are streamed.
    fn upload_srs(&self, srs: &Srs, room: u64) -> Result<Resident, GpuError> {
        let dev = &self.dev;
        let sizes = query_bytes(srs);
        // five queries: the subset with the most bytes that fits (all of them when they do),
        // tried exhaustively
        let bytes = |set: u32| (0..5).filter(|i| set & (1 << i) != 0).map(|i| sizes[i]).sum::<u64>();
        let best = (0u32..32).filter(|&set| bytes(set) <= room).max_by_key(|&set| bytes(set)).unwrap_or(0);
        let keep: [bool; 5] = std::array::from_fn(|i| best & (1 << i) != 0);
        fn up<C: super::msm::Curve>(dev: &GpuDevice, keep: bool, host: &[C::Affine]) -> Result<Option<DeviceBases<C>>, GpuError> {
            keep.then(|| DeviceBases::upload(dev, host)).transpose()
        }
        Ok(Resident {
            id: srs.id.clone(),
            loaded_at: srs.loaded_at,
            h: up(dev, keep[0], &srs.h)?,
            l: up(dev, keep[1], &srs.l)?,
            a: up(dev, keep[2], &srs.a)?,
            b_g1: up(dev, keep[3], &srs.b_g1)?,
            b_g2: up(dev, keep[4], &srs.b_g2)?,
            record: None,
        })
    }

    /// `srs`'s bases on the device, uploaded unless resident, after evicting the least recently
    /// used circuits until they and `w`'s working memory fit; a stale load of the same circuit
    /// is dropped first. An upload that still runs out of memory is retried once alone. A
    /// witness deferred to a record gets that record on the device beside the bases.
    fn make_resident<'a>(&self, slots: &'a mut Vec<Resident>, srs: &Srs, w: &Footprint) -> Result<&'a mut Resident, GpuError> {
        // what the partition takes on the device besides the bases
        let beside = w.bytes();
        if let Some(i) = slots.iter().position(|r| r.id == srs.id && r.loaded_at == srs.loaded_at) {
            let r = slots.remove(i);
            slots.push(r);
        } else {
            slots.retain(|r| r.id != srs.id);
            let need = srs_device_bytes(srs) + beside;
            while !slots.is_empty() && self.dev.mem_info()?.0 < need {
                let gone = slots.remove(0);
                tracing::info!(device = %self.dev.label(), circuit = %gone.id, freed = %Bytes(gone.bytes()), "evicting resident bases to make room for {}", srs.id);
            }
            // What the device can give the bases beside the partition: all of them when they
            // fit, else the rest is streamed through a chunk buffer of its own.
            let room = |free: u64| {
                let room = free.saturating_sub(beside);
                if room >= srs_device_bytes(srs) + FIT_MARGIN { room } else { room.saturating_sub(STREAM_SPARE) }
            };
            let up = match self.upload_srs(srs, room(self.dev.mem_info()?.0)) {
                Err(GpuError::OutOfMemory { .. }) if !slots.is_empty() => {
                    slots.clear();
                    self.upload_srs(srs, room(self.dev.mem_info()?.0))
                }
                r => r,
            }?;
            let streamed = up.streamed();
            if !streamed.is_empty() {
                tracing::info!(
                    device = %self.dev.label(),
                    circuit = %srs.id,
                    "bases of {}: {} resident; {} streamed from host memory by each proof (they do not fit beside a partition's {})",
                    srs.id,
                    Bytes(up.bytes()),
                    streamed.join(", "),
                    Bytes(beside)
                );
            }
            slots.push(up);
        }
        if let Some(record) = w.record {
            let last = slots.len() - 1;
            if !slots[last].record.as_ref().is_some_and(|r| r.is(record)) {
                slots[last].record = None;
                while slots.len() > 1 && self.dev.mem_info()?.0 < beside {
                    let gone = slots.remove(0);
                    tracing::info!(device = %self.dev.label(), circuit = %gone.id, freed = %Bytes(gone.bytes()), "evicting resident bases to make room for {}'s record", srs.id);
                }
                let started = Instant::now();
                let last = slots.len() - 1;
                slots[last].record = Some(DeviceRecord::upload(&self.dev, record)?);
                tracing::info!(device = %self.dev.label(), circuit = %srs.id, "precompiled record of {} on the device: {} in {:.2} s", srs.id, Bytes(DeviceRecord::bytes_for(record)), started.elapsed().as_secs_f64());
            }
        }
        Ok(slots.last_mut().expect("just pushed"))
    }

    /// One partition's device work: `srs` made resident, then [`partition::run`]. While it runs,
    /// its circuit's entry leaves `slots`, so that a partition proved between two of its steps
    /// ([`Paused`]) may make its own circuit resident beside it but can never evict it.
    #[allow(clippy::too_many_arguments)]
    fn run_partition(
        &self,
        slots: &mut Vec<Resident>,
        w: &Witness,
        srs: &Srs,
        prefetched: Option<Prefetched>,
        release: ReleaseFn<'_>,
        next: Option<&Witness>,
        urgent: UrgentFn<'_>,
    ) -> Result<PartitionOutput, GpuError> {
        self.make_resident(slots, srs, &Footprint::of(w))?;
        let res = slots.pop().expect("made resident last");
        let out = {
            let paused = Paused { backend: self, circuit: &res.id, slots: RefCell::new(&mut *slots) };
            self.run_on(&res, w, srs, prefetched, release, next, &mut || urgent(&paused))
        };
        slots.push(res);
        out
    }

    /// [`partition::run`] against `res`, the circuit's bases and record on the device.
    #[allow(clippy::too_many_arguments)]
    fn run_on(
        &self,
        res: &Resident,
        w: &Witness,
        srs: &Srs,
        prefetched: Option<Prefetched>,
        release: ReleaseFn<'_>,
        next: Option<&Witness>,
        between: &mut dyn FnMut() -> bool,
    ) -> Result<PartitionOutput, GpuError> {
        // The device picks A's and B's scalars from the aux it uploads for L.
        let a_select = Selection { inputs: Cow::Borrowed(&w.input), aux: &w.a_aux_density };
        let b_inputs = kept_inputs(&w.input, Some(&w.b_input_density)).copied().collect();
        let b_select = Selection { inputs: Cow::Owned(b_inputs), aux: &w.b_aux_density };
        let bases = res.bases(srs);
        let ab = match (&w.record, &res.record) {
            (Some(_), Some(record)) => Ab::Record(record),
            (Some(_), None) => return Err(self.dev.err("record", "the witness's record is not on the device")),
            (None, _) => Ab::Host { a: &w.a, b: &w.b },
        };
        // only a witness of the same shape: the next proof of the same circuit, as a rule
        let next = next.and_then(|n| match (&n.record, &w.record) {
            (None, None) if n.a.len() == w.a.len() => Some(Next::Ab(&n.a, &n.b)),
            (Some(next_record), Some(record)) if Arc::ptr_eq(next_record, record) => Some(Next::Aux(&n.aux)),
            _ => None,
        });
        let input = PartitionInput { ab, input: &w.input, aux: &w.aux, a_select, b_select, next };
        let ab_bytes = (w.a.len() + w.b.len()) as u64 * 32;
        partition::run(&self.dev, &bases, &input, prefetched, &mut || release(ab_bytes), between)
    }

    fn prove_inner(
        &self,
        w: Witness,
        srs: &Srs,
        release: ReleaseFn<'_>,
        next: Option<&Witness>,
        urgent: UrgentFn<'_>,
    ) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        let start = Instant::now();
        check_shape(&w, srs)?;
        // this witness's a and b, if the proof before uploaded them; any other prefetch is stale
        let prefetched = {
            let mut p = self.prefetched.lock().unwrap_or_else(|p| p.into_inner());
            p.take().filter(|(key, _)| *key == WitnessKey::of(&w)).map(|(_, up)| up)
        };
        let mut slots = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        let run = self.run_partition(&mut slots, &w, srs, prefetched, release, next, urgent);
        if matches!(run, Err(GpuError::OutOfMemory { .. })) {
            slots.clear(); // the retry starts from an empty device
        }
        *self.resident_ids.lock().unwrap_or_else(|p| p.into_inner()) = slots.iter().map(|r| r.id.clone()).collect();
        drop(slots);
        let mut out = run.map_err(|e| self.device_error(e))?;
        if let (Some(n), Some(up)) = (next, out.next.take()) {
            *self.prefetched.lock().unwrap_or_else(|p| p.into_inner()) = Some((WitnessKey::of(n), up));
        }
        self.assemble(&w, srs, out, release, start)
    }

    /// The proof from a partition's MSM sums, the aux released.
    fn assemble(&self, w: &Witness, srs: &Srs, out: PartitionOutput, release: ReleaseFn<'_>, start: Instant) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        let b_g2 = out.b_g2.ok_or_else(|| BackendError::Other("the partition's device proof returned no B_G2 sum".into()))?;
        let ms = |v: &[f32]| Duration::from_secs_f64(v.iter().map(|&t| t as f64).sum::<f64>() / 1e3);
        release((w.input.len() + w.aux.len()) as u64 * 32);
        let msms = MsmSums { h: out.h, l: out.l, a: out.a, b_g1: out.b_g1, b_g2 };
        let proof = assemble(&srs.vk, &msms, Fr::random(OsRng), Fr::random(OsRng))?;
        Ok((proof, ProveTimings { ntt: ms(&out.steps[..1]), msm: ms(&out.steps[1..]), total: start.elapsed() }))
    }
}

/// The device while a partition is paused between two of its steps ([`ProvingBackend::prove_then`]):
/// the other circuits resident, and the memory the paused proof leaves free.
struct Paused<'a> {
    backend: &'a GpuBackend,
    /// The paused proof's circuit, whose bases are out of `slots` while it runs.
    circuit: &'a CircuitId,
    slots: RefCell<&'a mut Vec<Resident>>,
}

impl Interlude for Paused<'_> {
    /// Whether the witness's bases (unless resident), record and working memory fit in what the
    /// paused proof leaves free, with [`FIT_MARGIN`] to spare for the paused proof's own MSMs.
    /// Never for the paused proof's own circuit: its bases are in use, and a second copy would
    /// not fit where it matters (a partition that urgent is as big as the one it would pause).
    fn fits(&self, w: &Witness, srs: &Srs) -> bool {
        if &srs.id == self.circuit {
            return false;
        }
        let slots = self.slots.borrow();
        let held = slots.iter().any(|r| r.id == srs.id && r.loaded_at == srs.loaded_at);
        let bases = if held { 0 } else { srs_device_bytes(srs) };
        let need = bases + Footprint::of(w).bytes() + FIT_MARGIN;
        self.backend.dev.mem_info().is_ok_and(|(free, _)| free >= need)
    }

    fn prove(&self, w: Witness, srs: &Srs, release: ReleaseFn<'_>) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        if &srs.id == self.circuit {
            return Err(BackendError::Other(format!("{} cannot be proved between two steps of a partition of its own circuit", srs.id)));
        }
        let start = Instant::now();
        check_shape(&w, srs)?;
        let mut slots = self.slots.borrow_mut();
        // Nothing is prefetched for it, nothing for after it, and it is not paused in turn. An
        // out-of-memory here leaves the resident circuits as they are: the paused proof needs
        // its memory back, not an empty device.
        let out = self.backend.run_partition(&mut slots, &w, srs, None, release, None, &mut |_| false).map_err(|e| self.backend.device_error(e))?;
        self.backend.assemble(&w, srs, out, release, start)
    }
}

impl ProvingBackend for GpuBackend {
    fn name(&self) -> String {
        self.dev.label()
    }

    fn memory(&self) -> Option<DeviceMemory> {
        let (free, total) = self.dev.mem_info().ok()?;
        Some(DeviceMemory { free: Bytes(free), total: Bytes(total) })
    }

    fn holds(&self, circuit: &CircuitId) -> bool {
        self.resident_ids.lock().unwrap_or_else(|p| p.into_inner()).contains(circuit)
    }

    fn streamed(&self, circuit: &CircuitId) -> Vec<&'static str> {
        let slots = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        slots.iter().find(|r| &r.id == circuit).map_or_else(Vec::new, Resident::streamed)
    }

    /// Whether the bases, the record and one partition's working memory fit the device at once.
    fn fills_from_record(&self, srs: &Srs, record: &Arc<Precompiled>) -> bool {
        let Ok((_, total)) = self.dev.mem_info() else { return false };
        srs_device_bytes(srs) + Footprint::of_circuit(srs, Some(record)).bytes() <= total
    }

    /// Only what fits beside the resident circuits: evicting them for a circuit whose witness
    /// has not come yet could cost more uploads than it saves.
    fn warm(&self, srs: &Srs, record: Option<&Arc<Precompiled>>) -> Result<(), BackendError> {
        let mut slots = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        let held = slots.iter().find(|r| r.id == srs.id && r.loaded_at == srs.loaded_at);
        if held.is_some_and(|r| record.is_none_or(|rec| r.record.as_ref().is_some_and(|d| d.is(rec)))) {
            return Ok(());
        }
        let fp = Footprint::of_circuit(srs, record);
        let need = srs_device_bytes(srs) + fp.bytes();
        let free = self.dev.mem_info().map_err(|e| self.device_error(e))?.0;
        if held.is_none() && free < need {
            return Err(BackendError::OutOfMemory { device: self.dev.label(), what: format!("{} ahead of its first witness, beside the resident circuits", srs.id), needed: Bytes(need), free: Bytes(free) });
        }
        let started = Instant::now();
        let warmed = self.make_resident(&mut slots, srs, &fp).map(|r| Bytes(r.bytes()));
        *self.resident_ids.lock().unwrap_or_else(|p| p.into_inner()) = slots.iter().map(|r| r.id.clone()).collect();
        let bytes = warmed.map_err(|e| self.device_error(e))?;
        tracing::info!(device = %self.dev.label(), circuit = %srs.id, "bases of {} on the device ahead of its first witness: {} in {:.2} s", srs.id, bytes, started.elapsed().as_secs_f64());
        Ok(())
    }

    fn prove_then(
        &self,
        witness: Witness,
        srs: &Srs,
        release: ReleaseFn<'_>,
        next: Option<&Witness>,
        urgent: UrgentFn<'_>,
    ) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        catch_unwind(AssertUnwindSafe(|| self.prove_inner(witness, srs, release, next, urgent)))
            .unwrap_or_else(|_| Err(BackendError::Other(format!("{}: prover panicked", self.dev.label()))))
    }
}

/// Device bytes of `srs`'s five queries: h, l, a, b_g1, b_g2.
fn query_bytes(srs: &Srs) -> [u64; 5] {
    let g1 = std::mem::size_of::<<G1 as super::msm::Curve>::DevAffine>() as u64;
    let g2 = std::mem::size_of::<<G2 as super::msm::Curve>::DevAffine>() as u64;
    [srs.h.len() as u64 * g1, srs.l.len() as u64 * g1, srs.a.len() as u64 * g1, srs.b_g1.len() as u64 * g1, srs.b_g2.len() as u64 * g2]
}

fn srs_device_bytes(srs: &Srs) -> u64 {
    query_bytes(srs).iter().sum()
}

/// Room the bases must leave beyond [`working_bytes`] to be resident all together: a 32 GiB
/// WindowPoSt whose bases fit with 0.4 GB to spare ran out of memory in its first partition.
const FIT_MARGIN: u64 = 2 << 30;

/// What one partition's device work needs besides the bases, with room to spare: a, b, c on the
/// domain and a spare transform buffer, the uploaded scalars, and the MSMs' buckets.
fn working_bytes(evaluations: usize, scalars: usize) -> u64 {
    let domain = evaluations.next_power_of_two() as u64;
    4 * domain * 32 + scalars as u64 * 32 + (2 << 30)
}

/// The inputs a query keeps: all, or those whose bit is set in `density`.
fn kept_inputs<'a>(input: &'a [Fr], density: Option<&'a Density>) -> impl Iterator<Item = &'a Fr> + 'a {
    input.iter().enumerate().filter(move |(i, _)| density.is_none_or(|d| d.get(*i))).map(|(_, x)| x)
}
