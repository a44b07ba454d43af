//! snarkd's own Groth16 pipeline, split into the two stages the engine schedules separately.
//!
//! *Synthesis* (CPU) runs a bellperson circuit through our own constraint system and records a
//! [`Witness`]. *Proving* (a [`ProvingBackend`]: the CPU here, a GPU in `crate::gpu`) turns a witness
//! plus the resident [`crate::srs::Srs`] into a proof: h by NTTs, five MSMs, assembly with fresh r, s.
//! The split exists so that witnesses can be budgeted and queued per device between the stages.

use std::cell::RefCell;
use std::thread::LocalKey;
use std::time::Duration;

use blstrs::{Bls12, Scalar as Fr};

use crate::srs::Srs;

pub use bellperson::groth16::{PreparedVerifyingKey, Proof, VerifyingKey};

/// A set of bits over the variables of one kind (aux or input): bit i is set when variable i
/// occurs with a nonzero coefficient in the A (or B) query. Bases of unset variables are absent
/// from the parameter file, so MSMs use the density to pair scalars with bases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
}

impl Density {
    pub fn with_len(len: usize) -> Self {
        Density { words: vec![0; len.div_ceil(64)], len }
    }
    /// `len` variables, all set.
    pub fn all(len: usize) -> Self {
        let mut words = vec![u64::MAX; len.div_ceil(64)];
        if let (Some(last), tail @ 1..) = (words.last_mut(), len % 64) {
            *last = (1 << tail) - 1;
        }
        Density { words, len }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Appends one variable, unset.
    pub fn push(&mut self, set: bool) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        self.len += 1;
        if set {
            self.set(self.len - 1);
        }
    }
    pub fn set(&mut self, i: usize) {
        assert!(i < self.len, "density index {i} out of range {}", self.len);
        self.words[i / 64] |= 1 << (i % 64);
    }
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] & (1 << (i % 64)) != 0
    }
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Appends `other` after the bits of `self` (used when extensible constraint systems merge).
    pub fn extend(&mut self, other: &Density) {
        let at = self.len;
        self.grow(at + other.len);
        self.or_at(at, other);
    }
    /// Appends the density of a part whose first `shared` variables are ours (a part
    /// synthesized or recorded as a circuit of its own shares the ONE input; a PoRep challenge
    /// also reads the variables allocated before it): those bits are OR-ed into ours, the
    /// others follow ours. A word at a time: a SnapDeals challenge's record shares the ~6M
    /// variables before it, and 86 of them are appended one after another.
    pub fn extend_sharing(&mut self, other: &Density, shared: usize) {
        let shared_len = shared.min(other.len);
        assert!(shared_len <= self.len, "{shared_len} shared bits overrun a density of {}", self.len);
        let (full, rest) = (shared_len / 64, shared_len % 64);
        for (mine, theirs) in self.words.iter_mut().zip(&other.words[..full]) {
            *mine |= theirs;
        }
        if rest != 0 {
            self.words[full] |= other.words[full] & ((1u64 << rest) - 1);
        }
        self.extend(&other.tail(shared));
    }
    /// The bits from `start` on, as a density of their own, a word at a time.
    fn tail(&self, start: usize) -> Density {
        let len = self.len.saturating_sub(start);
        let (first, shift) = (start / 64, start % 64);
        let word = |k: usize| self.words.get(k).copied().unwrap_or(0);
        let mut words: Vec<u64> = (0..len.div_ceil(64))
            .map(|k| if shift == 0 { word(first + k) } else { word(first + k) >> shift | word(first + k + 1) << (64 - shift) })
            .collect();
        if let Some(last) = words.last_mut().filter(|_| len % 64 != 0) {
            *last &= (1u64 << (len % 64)) - 1;
        }
        Density { words, len }
    }
    /// Lengthens to `len` variables; the new ones are unset.
    pub fn grow(&mut self, len: usize) {
        assert!(len >= self.len, "density cannot shrink from {} to {len}", self.len);
        self.words.resize(len.div_ceil(64), 0);
        self.len = len;
    }
    /// Sets every bit of `other`, shifted by `at`, in `self` (a fork's marks merging into the
    /// witness's densities), a word at a time.
    pub fn or_at(&mut self, at: usize, other: &Density) {
        assert!(at + other.len <= self.len, "{} bits at {at} overrun a density of {}", other.len, self.len);
        let (first, shift) = (at / 64, at % 64);
        // Bits past `other.len` are never set, so nothing spills past `self.len` either.
        for (k, &word) in other.words.iter().enumerate().filter(|(_, w)| **w != 0) {
            self.words[first + k] |= word << shift;
            if shift != 0 && word >> (64 - shift) != 0 {
                self.words[first + k + 1] |= word >> (64 - shift);
            }
        }
    }
    pub fn words(&self) -> &[u64] {
        &self.words
    }
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// Everything the proving stage needs from one synthesized circuit (one partition).
#[derive(Debug, Clone, Default)]
pub struct Witness {
    /// Per-constraint evaluations of the A and B linear combinations (input constraints
    /// included). C's are not recorded: in a satisfied R1CS they equal a∘b, which the provers
    /// form instead (from a witness that does not satisfy it, a proof fails verification either
    /// way), so synthesis neither builds nor evaluates C's linear combinations.
    pub a: Vec<Fr>,
    pub b: Vec<Fr>,
    /// Input assignment; `input[0]` is the constant ONE.
    pub input: Vec<Fr>,
    pub aux: Vec<Fr>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
    /// Set when synthesis left A and B to the proving stage ([`Precompiled::defer`]): `a` and
    /// `b` are empty, and they are this record's rows over `input` and `aux` (then one closing
    /// constraint per input). A GPU evaluates them where it proves; other backends call
    /// [`Witness::fill_deferred`] first.
    pub record: Option<std::sync::Arc<Precompiled>>,
}

impl Witness {
    /// How many evaluations a and b have (or will have, once a deferred witness is filled): the
    /// constraints plus one per input.
    pub fn evaluations(&self) -> usize {
        match &self.record {
            Some(record) => record.constraints() + self.input.len(),
            None => self.a.len(),
        }
    }

    /// Bytes held by this witness, used by the memory budget.
    pub fn bytes(&self) -> u64 {
        let fr = std::mem::size_of::<Fr>();
        let vecs = self.a.len() + self.b.len() + self.input.len() + self.aux.len();
        (vecs * fr + self.a_aux_density.bytes() + self.b_input_density.bytes() + self.b_aux_density.bytes())
            as u64
    }

    /// The first place where `self` and `other` differ (`None` when they are identical), checked
    /// field by field: the input and aux assignments, A and B, and the three densities.
    pub fn first_difference(&self, other: &Witness) -> Option<String> {
        let values = [
            ("input", &self.input, &other.input),
            ("aux", &self.aux, &other.aux),
            ("a", &self.a, &other.a),
            ("b", &self.b, &other.b),
        ];
        for (name, x, y) in values {
            if let Some(i) = (0..x.len().min(y.len())).find(|&i| x[i] != y[i]) {
                return Some(format!("{name}[{i}] differs"));
            }
            if x.len() != y.len() {
                return Some(format!("{name} has {} values where the other has {}", x.len(), y.len()));
            }
        }
        let densities = [
            ("a_aux_density", &self.a_aux_density, &other.a_aux_density),
            ("b_input_density", &self.b_input_density, &other.b_input_density),
            ("b_aux_density", &self.b_aux_density, &other.b_aux_density),
        ];
        if self.record.is_some() != other.record.is_some() {
            return Some("one has a and b deferred to a record, the other not".into());
        }
        for (name, x, y) in densities {
            if let Some(i) = (0..x.len().max(y.len())).find(|&i| x.get(i) != y.get(i)) {
                return Some(format!("{name} bit {i} differs"));
            }
            if x.len() != y.len() {
                return Some(format!("{name} has {} bits where the other has {}", x.len(), y.len()));
            }
        }
        None
    }
}

/// Where the proving stage spent its time.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ProveTimings {
    #[serde(with = "crate::units::millis")]
    pub ntt: Duration,
    #[serde(with = "crate::units::millis")]
    pub msm: Duration,
    #[serde(with = "crate::units::millis")]
    pub total: Duration,
}

/// Why a backend could not produce a proof.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The witness does not match the parameters (sizes, densities).
    #[error("witness does not match parameters: {0}")]
    Shape(String),
    /// The device failed; the job may be retried elsewhere.
    #[error("device {device} failed in {call}: {reason}")]
    Device { device: String, call: String, reason: String },
    /// The device had too little free memory for this partition; nothing is wrong with it. The
    /// backend has freed what it cached, so the partition may be retried.
    #[error("device {device} out of memory: {what} needs {needed}, {free} free")]
    OutOfMemory { device: String, what: String, needed: crate::units::Bytes, free: crate::units::Bytes },
    #[error("{0}")]
    Other(String),
}

/// A device's memory as its driver reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DeviceMemory {
    pub free: crate::units::Bytes,
    pub total: crate::units::Bytes,
}

/// Called by the backend as each buffer of the witness is consumed, so the engine can release
/// that part of the memory reservation (a, b, c after h; aux after the MSMs).
pub type ReleaseFn<'a> = &'a (dyn Fn(u64) + Sync);

/// A more urgent partition's proof, made by a backend between two steps of the one it is proving
/// ([`ProvingBackend::prove_then`]), so that a WinningPoSt need not wait for a whole 32 GiB
/// PoRep partition on the device.
pub trait Interlude {
    /// Whether `witness`'s proof fits beside the paused one now (its bases, record and working
    /// memory); when it does not, the engine leaves it queued for after the paused proof.
    fn fits(&self, witness: &Witness, srs: &Srs) -> bool;

    /// Proves `witness` now; the paused proof resumes after it.
    fn prove(&self, witness: Witness, srs: &Srs, release: ReleaseFn<'_>) -> Result<(Proof<Bls12>, ProveTimings), BackendError>;
}

/// Called by a backend at each point where it can pause a proof: the engine proves through the
/// [`Interlude`] whatever more urgent partition waits for the device, and returns whether it
/// proved any.
pub type UrgentFn<'a> = &'a mut dyn FnMut(&dyn Interlude) -> bool;

/// A proving stage: turns a witness into a proof against resident parameters.
pub trait ProvingBackend: Send + Sync {
    /// A name for logs and Status, e.g. "cpu" or "cuda:0 (NVIDIA H200)".
    fn name(&self) -> String;

    /// The device's memory, for Status; None for a backend without memory of its own (the CPU).
    fn memory(&self) -> Option<DeviceMemory> {
        None
    }

    /// Whether this backend holds `circuit`'s bases already (a GPU's resident copy), so that
    /// placement can spare another device the upload. Answers without waiting for a proof.
    fn holds(&self, circuit: &crate::srs::CircuitId) -> bool {
        let _ = circuit;
        false
    }

    /// The queries of `circuit`'s parameters (h, l, a, b_g1, b_g2) that each proof streams from
    /// host memory because they did not fit on the device beside a partition's work; empty when
    /// all are resident or the circuit is not loaded here.
    fn streamed(&self, circuit: &crate::srs::CircuitId) -> Vec<&'static str> {
        let _ = circuit;
        vec![]
    }

    /// Whether this backend evaluates A and B of a witness deferred to `record`
    /// ([`Witness::record`]) itself while proving against `srs` (a GPU does, from the record on
    /// the device, when the bases, the record and a partition's work fit it), so that synthesis
    /// may leave them out and reserve a third of the memory. Other backends fill such a witness
    /// on the host, outside the budget, so the engine does not defer for them.
    fn fills_from_record(&self, srs: &Srs, record: &std::sync::Arc<Precompiled>) -> bool {
        let _ = (srs, record);
        false
    }

    /// Moves `srs`'s bases onto the device ahead of the circuit's first witness, with `record`
    /// when witnesses will be deferred to it, so that the upload overlaps that witness's
    /// synthesis instead of following it. A failure costs only the head start: the first proof
    /// uploads what is missing. The default (a backend without memory of its own) does nothing.
    fn warm(&self, srs: &Srs, record: Option<&std::sync::Arc<Precompiled>>) -> Result<(), BackendError> {
        let _ = (srs, record);
        Ok(())
    }

    /// Proves one circuit with fresh r and s from OsRng. `release` is called with the byte count of
    /// each witness buffer once it is no longer needed. The default is
    /// [`ProvingBackend::prove_then`] with nothing next and nothing urgent.
    fn prove(
        &self,
        witness: Witness,
        srs: &Srs,
        release: ReleaseFn<'_>,
    ) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        self.prove_then(witness, srs, release, None, &mut |_| false)
    }

    /// [`ProvingBackend::prove`], told the witness this backend proves next when one is already
    /// waiting, so that it can move that witness's inputs while this one is proved (the GPU
    /// backend uploads its a and b during this proof's MSMs), and calling `urgent` between two
    /// steps of the proof wherever it can pause it (the GPU backend while h runs, polled, the CPU
    /// backend once h is made, and both after each MSM but the last), so that a partition more
    /// urgent than this one is proved there instead of after it. A backend that cannot pause
    /// never calls `urgent`.
    fn prove_then(
        &self,
        witness: Witness,
        srs: &Srs,
        release: ReleaseFn<'_>,
        next: Option<&Witness>,
        urgent: UrgentFn<'_>,
    ) -> Result<(Proof<Bls12>, ProveTimings), BackendError>;
}

/// Runs `f` with `key` holding `value` on this thread, and then what it held before, even when
/// `f` panics: how a synthesis is told its stop token ([`stoppable`]) and its precompiled record
/// ([`precompiled`]) without threading them through every circuit.
fn scoped<T: 'static, R>(key: &'static LocalKey<RefCell<Option<T>>>, value: T, f: impl FnOnce() -> R) -> R {
    struct Restore<T: 'static>(&'static LocalKey<RefCell<Option<T>>>, Option<T>);
    impl<T: 'static> Drop for Restore<T> {
        fn drop(&mut self) {
            let before = self.1.take();
            self.0.with(|v| *v.borrow_mut() = before);
        }
    }
    let _restore = Restore(key, key.with(|v| v.replace(Some(value))));
    f()
}

pub mod assignment;
pub mod cpu;
pub mod fault;
pub mod fork;
pub mod precompiled;
pub mod ntt;
pub mod prover;
pub mod verify;

pub use assignment::{synthesize, synthesize_with, WitnessCs};
pub use fork::{admitted, stoppable, AdmitFn, ForkCs, ForkError, ItemShape, Permit, StopFn};
pub use precompiled::{precompiled, precompiled_as, Fill, Precompiled};
pub use cpu::CpuBackend;
pub use verify::verify;

#[cfg(test)]
mod tests {
    use blstrs::Scalar as Fr;
    use ff::Field;

    use super::{Density, Witness};

    #[test]
    fn or_at_equals_setting_each_bit() {
        // bits already set stay set; the source's bits land shifted, across word boundaries
        for (at, bits) in [(0, vec![]), (0, vec![0, 63, 64, 130]), (37, vec![0, 26, 27, 90, 162]), (64, vec![1])] {
            let mut src = Density::with_len(bits.iter().max().map_or(0, |m| m + 1));
            bits.iter().for_each(|&i| src.set(i));
            let mut expected = Density::with_len(200);
            expected.set(5);
            let mut got = expected.clone();
            bits.iter().for_each(|&i| expected.set(at + i));
            got.or_at(at, &src);
            assert_eq!(got, expected, "at {at}");
        }
        let mut grown = Density::all(70);
        grown.extend(&Density::all(70));
        assert_eq!(grown, Density::all(140));
    }

    /// A part's bits below `shared` are OR-ed into ours, the rest appended: the same as pushing
    /// them one at a time, at every word offset.
    #[test]
    fn extend_sharing_equals_a_bit_at_a_time() {
        let bits = |len: usize, step: usize| {
            let mut d = Density::with_len(len);
            (0..len).filter(|i| i % step == 0 || i % 7 == 3).for_each(|i| d.set(i));
            d
        };
        for (ours, theirs, shared) in [
            (1, 1, 1),
            (5, 130, 1),
            (64, 200, 0),
            (100, 300, 37),
            (130, 64, 64),
            (70, 199, 70),
            (200, 300, 150),
            (128, 500, 128),
            (300, 100, 200),
        ] {
            let (mut got, other) = (bits(ours, 5), bits(theirs, 3));
            let mut expected = got.clone();
            for i in 0..theirs {
                match i < shared {
                    true if other.get(i) => expected.set(i),
                    true => {}
                    false => expected.push(other.get(i)),
                }
            }
            got.extend_sharing(&other, shared);
            assert_eq!(got, expected, "{ours} bits, {theirs} more, {shared} shared");
        }
    }

    #[test]
    fn first_difference_names_the_field_and_place() {
        let w = Witness {
            a: vec![Fr::ONE; 3],
            b: vec![Fr::ZERO; 3],
            input: vec![Fr::ONE],
            aux: vec![Fr::ONE; 2],
            a_aux_density: Density::all(2),
            b_input_density: Density::with_len(1),
            b_aux_density: Density::all(2),
            record: None,
        };
        assert_eq!(w.first_difference(&w.clone()), None);
        let mut other = w.clone();
        other.b[2] = Fr::ONE;
        assert_eq!(w.first_difference(&other).as_deref(), Some("b[2] differs"));
        let mut other = w.clone();
        other.aux.push(Fr::ONE);
        assert_eq!(w.first_difference(&other).as_deref(), Some("aux has 2 values where the other has 3"));
        let mut other = w.clone();
        other.b_input_density.set(0);
        assert_eq!(w.first_difference(&other).as_deref(), Some("b_input_density bit 0 differs"));
    }

    #[test]
    fn all_is_len_pushes_of_set_bits() {
        for len in [0, 1, 63, 64, 65, 130] {
            let mut pushed = Density::default();
            (0..len).for_each(|_| pushed.push(true));
            let all = Density::all(len);
            assert_eq!(all, pushed, "len {len}");
            assert_eq!(all.count_ones(), len);
        }
    }
}
