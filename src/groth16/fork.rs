//! Parallel synthesis inside one circuit. A Filecoin partition is a short prefix followed by many
//! parts of one shape (PoRep challenges, PoSt sectors, SnapDeals challenges) that read the
//! prefix's variables but not each other's. [`WitnessCs::fork_map`] runs those parts at once on
//! rayon's pool, each in a [`ForkCs`] that writes its values straight into their final places in
//! the witness and numbers its variables as the sequential run would. The witness is therefore
//! byte-identical to bellperson's sequential one, and no part of it is ever copied or held twice.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex, OnceLock};

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use rayon::prelude::*;

use super::assignment::{eval, Marks, Untracked, Values, WitnessCs};
use super::precompiled::Mismatch;
use super::{Density, Witness};

/// Why [`WitnessCs::fork_map`] (or the circuit around it) failed. The constraint system is then
/// half-written and must be dropped.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// Outside the forks: the prefix or whatever follows the forks.
    #[error(transparent)]
    Synthesis(#[from] SynthesisError),
    #[error("item {item}: {source}")]
    Item { item: usize, source: SynthesisError },
    /// The synthesis was told to stop ([`stoppable`]): its job was cancelled or failed.
    #[error("stopped before item {item}: the job was cancelled or has ended")]
    Stopped { item: usize },
    /// Items are placed by one shape, so every item must have it.
    #[error("item {item} does not have the shape of the circuit's items: it has {what}")]
    Shape { item: usize, what: String },
    /// The circuit is not the one its precompiled record was made from.
    #[error(transparent)]
    Precompiled(#[from] Mismatch),
}

/// Asked before each fork item starts: true stops the synthesis there.
pub type StopFn = Arc<dyn Fn() -> bool + Send + Sync>;

thread_local! {
    static STOP: RefCell<Option<StopFn>> = const { RefCell::new(None) };
}

/// Runs `f`, a synthesis on this thread, so that every [`WitnessCs::fork_map`] it calls asks
/// `stop` before each item and ends with [`ForkError::Stopped`] once it answers true: a cancelled
/// job's synthesis ends after the items already running, not after the whole partition.
pub fn stoppable<R>(stop: StopFn, f: impl FnOnce() -> R) -> R {
    super::scoped(&STOP, stop, f)
}

/// Held while one fork item runs; dropping it lets the next item in.
pub type Permit = Box<dyn std::any::Any + Send>;

/// Asked before each fork item starts, with the synthesis's stop token: waits until the item may
/// run and returns what it holds while it runs, or `None` when the token said stop meanwhile.
pub type AdmitFn = Arc<dyn Fn(&dyn Fn() -> bool) -> Option<Permit> + Send + Sync>;

thread_local! {
    static ADMIT: RefCell<Option<AdmitFn>> = const { RefCell::new(None) };
}

/// Runs `f`, a synthesis on this thread, so that each item of every [`WitnessCs::fork_map`] it
/// calls waits for `admit` before it runs: the engine's CPU gate (engine/gate.rs) lets the forks
/// of the partition a device needs first run before those of later partitions.
pub fn admitted<R>(admit: AdmitFn, f: impl FnOnce() -> R) -> R {
    super::scoped(&ADMIT, admit, f)
}

/// What one item adds to the witness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Shape {
    constraints: usize,
    aux: usize,
    inputs: usize,
}

/// The shape of the items of one [`WitnessCs::fork_map`] call site in one circuit, once counted.
/// A circuit's structure cannot change from one synthesis to the next (its parameters depend on
/// it), so a caller that keeps this per circuit and call site counts only the first time.
#[derive(Debug, Default)]
pub struct ItemShape(OnceLock<Shape>);

impl WitnessCs {
    /// Runs `f` on every item, in parallel, with the result the items would give run here one after
    /// another in order, and returns what each call returned. Variables an item returns carry their
    /// final indices, so they can be used here afterwards.
    ///
    /// Items may use every variable allocated here before the call, and nothing of another item.
    /// They must all have one shape (the same number of constraints, aux and input variables), as
    /// the repeated parts of a circuit do: its structure cannot depend on the witness. Unless
    /// `shape` knows it already, item 0 runs once more first, only counting (no linear combination
    /// is evaluated; about half the work of the item), to place the others. An item of another
    /// shape is an error, never a misplaced witness.
    ///
    /// Memory: the witness's vectors grow once, to exactly what the items need plus the closing
    /// constraint per input; values are written in place. Beyond that, each running fork holds
    /// two densities of marks, `(2·(P_aux + v) + P_in + u) / 8` bytes where `P_aux`, `P_in` are
    /// the aux and input variables allocated before the call and `v`, `u` one item's; they are
    /// OR-ed into the witness's densities when the fork ends. So a synthesis peaks at its final
    /// witness size plus `threads × (2·(P_aux + v) + P_in + u) / 8`.
    pub fn fork_map<T, R, F>(&mut self, items: Vec<T>, shape: &ItemShape, f: F) -> Result<Vec<R>, ForkError>
    where
        T: Clone + Send,
        R: Send,
        F: Fn(&mut ForkCs<'_>, T) -> Result<R, SynthesisError> + Sync,
    {
        let Some(first) = items.first() else {
            return Ok(Vec::new());
        };
        let n = items.len();
        // While a precompiled record stands in for A and B, forks only count constraints.
        let evaluate = self.1.is_none();
        let w = &mut self.0;
        let (input_base, aux_base, constraint_base) = (w.input.len(), w.aux.len(), w.a.len());
        let shape = match shape.0.get() {
            Some(known) => *known,
            None => {
                let mut counter = ForkCs(Mode::Count { shape: Shape::default(), input_base, aux_base });
                f(&mut counter, first.clone()).map_err(|source| ForkError::Item { item: 0, source })?;
                let Mode::Count { shape: counted, .. } = counter.0 else {
                    unreachable!("the counter was made counting")
                };
                // another synthesis of this circuit may have counted meanwhile; it found the same
                let _ = shape.0.set(counted);
                counted
            }
        };
        let inputs = input_base + n * shape.inputs;
        let ab_len = if evaluate { shape.constraints } else { 0 };
        w.a.reserve_exact(n * ab_len + inputs);
        w.b.reserve_exact(n * ab_len + inputs);
        w.input.reserve_exact(n * shape.inputs);
        w.aux.reserve_exact(n * shape.aux);
        w.a_aux_density.grow(aux_base + n * shape.aux);
        w.b_aux_density.grow(aux_base + n * shape.aux);
        w.b_input_density.grow(inputs);

        let Witness { a, b, input, aux, a_aux_density, b_input_density, b_aux_density, record: _ } = w;
        let (prefix_input, input_spare) = split_at_spare(input);
        let (prefix_aux, aux_spare) = split_at_spare(aux);
        let jobs: Vec<_> = items
            .into_iter()
            .zip(slots(a.spare_capacity_mut(), ab_len, n))
            .zip(slots(b.spare_capacity_mut(), ab_len, n))
            .zip(slots(input_spare, shape.inputs, n))
            .zip(slots(aux_spare, shape.aux, n))
            .enumerate()
            .collect();
        let densities = Mutex::new((a_aux_density, b_input_density, b_aux_density));
        let stop = STOP.with(|s| s.borrow().clone());
        let stopped = || stop.as_ref().is_some_and(|stop| stop());
        let admit = ADMIT.with(|a| a.borrow().clone());
        let results: Vec<Result<R, ForkError>> = jobs
            .into_par_iter()
            .map(|(i, ((((item, a), b), input), aux))| {
                let _permit = match &admit {
                    Some(admit) => Some(admit(&stopped).ok_or(ForkError::Stopped { item: i })?),
                    None => None,
                };
                if stopped() {
                    return Err(ForkError::Stopped { item: i });
                }
                let mut cs = ForkCs(Mode::Fill(Fill {
                    input: Part { prefix: prefix_input, own: Slot::new(input), base: input_base + i * shape.inputs },
                    aux: Part { prefix: prefix_aux, own: Slot::new(aux), base: aux_base + i * shape.aux },
                    ab: evaluate.then(|| (Slot::new(a), Slot::new(b))),
                    constraints: 0,
                    a_aux: SplitMarks::new(aux_base, aux_base + i * shape.aux, shape.aux),
                    b_input: SplitMarks::new(input_base, input_base + i * shape.inputs, shape.inputs),
                    b_aux: SplitMarks::new(aux_base, aux_base + i * shape.aux, shape.aux),
                    overflow: None,
                }));
                let result = f(&mut cs, item);
                let Mode::Fill(fill) = cs.0 else { unreachable!("forks are made filling") };
                let value = fill.check(i, &shape, result)?;
                let mut d = densities.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                fill.a_aux.merge_into(d.0);
                fill.b_input.merge_into(d.1);
                fill.b_aux.merge_into(d.2);
                Ok(value)
            })
            .collect();
        let values = results.into_iter().collect::<Result<Vec<R>, ForkError>>()?;
        if let Some(skipped) = &mut self.1 {
            *skipped += n * shape.constraints;
        }
        // SAFETY: `check` confirmed that every fork wrote each element of its slots, and the slots
        // tile each vector's spare capacity from its length up to these new lengths.
        unsafe {
            a.set_len(constraint_base + n * ab_len);
            b.set_len(constraint_base + n * ab_len);
            input.set_len(input_base + n * shape.inputs);
            aux.set_len(aux_base + n * shape.aux);
        }
        Ok(values)
    }
}

/// `v`'s elements and its spare capacity at once (what the unstable `Vec::split_at_spare_mut` does):
/// forks read the prefix while they write their own parts after it.
fn split_at_spare(v: &mut Vec<Fr>) -> (&[Fr], &mut [MaybeUninit<Fr>]) {
    let (len, spare) = (v.len(), v.capacity() - v.len());
    let ptr = v.as_mut_ptr();
    // SAFETY: [0, len) is initialized and [len, capacity) allocated; the ranges are disjoint, and
    // both borrow `v` mutably for the returned lifetime, so `v` cannot move or change meanwhile.
    unsafe { (std::slice::from_raw_parts(ptr, len), std::slice::from_raw_parts_mut(ptr.add(len).cast(), spare)) }
}

/// The first `n` slots of `size` elements of `spare`, in order.
fn slots(mut spare: &mut [MaybeUninit<Fr>], size: usize, n: usize) -> Vec<&mut [MaybeUninit<Fr>]> {
    (0..n)
        .map(|_| {
            let (slot, rest) = std::mem::take(&mut spare).split_at_mut(size);
            spare = rest;
            slot
        })
        .collect()
}

/// One fork's part of a witness vector, filled in order.
struct Slot<'a> {
    buf: &'a mut [MaybeUninit<Fr>],
    len: usize,
}

impl<'a> Slot<'a> {
    fn new(buf: &'a mut [MaybeUninit<Fr>]) -> Self {
        Slot { buf, len: 0 }
    }
    /// Appends `value` and returns its place, or None when the slot is full.
    fn push(&mut self, value: Fr) -> Option<usize> {
        self.buf.get_mut(self.len)?.write(value);
        self.len += 1;
        Some(self.len - 1)
    }
    fn get(&self, j: usize) -> Fr {
        assert!(j < self.len, "a fork read its variable {j} of {} written", self.len);
        // SAFETY: `push` wrote every element below `len`.
        unsafe { self.buf[j].assume_init() }
    }
    fn is_full(&self) -> bool {
        self.len == self.buf.len()
    }
}

/// A fork's view of one kind of variable (aux or input): the prefix, shared and read-only, and
/// its own, numbered from `base` as the sequential run numbers them.
struct Part<'a> {
    prefix: &'a [Fr],
    own: Slot<'a>,
    base: usize,
}

impl Part<'_> {
    #[inline(always)]
    fn get(&self, i: usize) -> Fr {
        match self.prefix.get(i) {
            Some(v) => *v,
            None => self.own.get(i.checked_sub(self.base).expect("a fork used a variable of another fork")),
        }
    }
}

struct ForkValues<'x, 'a> {
    input: &'x Part<'a>,
    aux: &'x Part<'a>,
}

impl Values for ForkValues<'_, '_> {
    #[inline(always)]
    fn input(&self, i: usize) -> Fr {
        self.input.get(i)
    }
    #[inline(always)]
    fn aux(&self, i: usize) -> Fr {
        self.aux.get(i)
    }
}

/// A fork's density marks: on prefix variables, OR-ed into the witness's when the fork ends, and
/// on its own, which land at `base`.
struct SplitMarks {
    prefix: Density,
    own: Density,
    base: usize,
}

impl SplitMarks {
    fn new(prefix: usize, base: usize, own: usize) -> Self {
        SplitMarks { prefix: Density::with_len(prefix), own: Density::with_len(own), base }
    }
    fn merge_into(&self, density: &mut Density) {
        density.or_at(0, &self.prefix);
        density.or_at(self.base, &self.own);
    }
}

impl Marks for SplitMarks {
    #[inline(always)]
    fn mark(&mut self, i: usize) {
        if i < self.prefix.len() {
            self.prefix.set(i);
        } else {
            self.own.set(i.checked_sub(self.base).expect("a fork used a variable of another fork"));
        }
    }
}

/// The constraint system each item of [`WitnessCs::fork_map`] runs in.
pub struct ForkCs<'a>(Mode<'a>);

// One per running fork, on its thread's stack: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
enum Mode<'a> {
    /// Counting item 0. Values are still computed (the circuit's gadgets see what they would see
    /// when filling), but no linear combination is evaluated.
    Count {
        shape: Shape,
        input_base: usize,
        aux_base: usize,
    },
    Fill(Fill<'a>),
}

struct Fill<'a> {
    input: Part<'a>,
    aux: Part<'a>,
    /// Where A and B's evaluations go; None while a precompiled record stands in for them.
    ab: Option<(Slot<'a>, Slot<'a>)>,
    constraints: usize,
    a_aux: SplitMarks,
    b_input: SplitMarks,
    b_aux: SplitMarks,
    /// What this fork had more of than the shape allows, once it had.
    overflow: Option<&'static str>,
}

impl Fill<'_> {
    /// The item's result, once its shape is known to be `shape`.
    fn check<R>(&self, item: usize, shape: &Shape, result: Result<R, SynthesisError>) -> Result<R, ForkError> {
        let counts = [
            ("constraints", self.constraints, shape.constraints),
            ("aux variables", self.aux.own.len, shape.aux),
            ("inputs", self.input.own.len, shape.inputs),
        ];
        let shape_error = |what: String| ForkError::Shape { item, what };
        if let Some((what, _, expected)) = counts.iter().find(|(what, ..)| Some(*what) == self.overflow) {
            return Err(shape_error(format!("more {what} than their {expected}")));
        }
        let value = result.map_err(|source| ForkError::Item { item, source })?;
        if let Some((what, got, expected)) = counts.iter().find(|(_, got, expected)| got != expected) {
            return Err(shape_error(format!("{got} {what} where they have {expected}")));
        }
        debug_assert!(self.aux.own.is_full() && self.input.own.is_full());
        Ok(value)
    }
}

impl ConstraintSystem<Fr> for ForkCs<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let i = match &mut self.0 {
            Mode::Count { shape, aux_base, .. } => {
                shape.aux += 1;
                *aux_base + shape.aux - 1
            }
            Mode::Fill(fill) => match fill.aux.own.push(value) {
                Some(j) => fill.aux.base + j,
                None => {
                    fill.overflow = Some("aux variables");
                    return Err(SynthesisError::Unsatisfiable);
                }
            },
        };
        Ok(Variable::new_unchecked(Index::Aux(i)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let i = match &mut self.0 {
            Mode::Count { shape, input_base, .. } => {
                shape.inputs += 1;
                *input_base + shape.inputs - 1
            }
            Mode::Fill(fill) => match fill.input.own.push(value) {
                Some(j) => fill.input.base + j,
                None => {
                    fill.overflow = Some("inputs");
                    return Err(SynthesisError::Unsatisfiable);
                }
            },
        };
        Ok(Variable::new_unchecked(Index::Input(i)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let fill = match &mut self.0 {
            Mode::Count { shape, .. } => {
                shape.constraints += 1;
                return;
            }
            Mode::Fill(fill) => fill,
        };
        let Some((slot_a, slot_b)) = &mut fill.ab else {
            fill.constraints += 1;
            return;
        };
        if slot_a.is_full() {
            // enforce cannot fail; `check` reports it when the item returns
            fill.overflow.get_or_insert("constraints");
            return;
        }
        let values = ForkValues { input: &fill.input, aux: &fill.aux };
        // As `WitnessCs::enforce`: inputs are not tracked in A, and C is not built.
        let av = eval(&a(LinearCombination::zero()), &values, &mut Untracked, &mut fill.a_aux);
        let bv = eval(&b(LinearCombination::zero()), &values, &mut fill.b_input, &mut fill.b_aux);
        slot_a.push(av);
        slot_b.push(bv);
        fill.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    /// True when no linear combination is evaluated here (counting, or a record stands in for A
    /// and B): see [`WitnessCs::is_witness_generator`].
    fn is_witness_generator(&self) -> bool {
        match &self.0 {
            Mode::Count { .. } => true,
            Mode::Fill(fill) => fill.ab.is_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use bellperson::Circuit;
    use ff::Field;

    use super::*;
    use crate::groth16::assignment::{synthesize, synthesize_with};

    /// One item: a private copy of the shared `p`, a public output `k·p + x`, and a boolean. Item
    /// `k` also uses the prefix variable `q` in B, which nothing else marks there, and item 2
    /// uses `p` with coefficients that cancel (no mark).
    fn item<CS: ConstraintSystem<Fr>>(
        cs: &mut CS,
        k: u64,
        (x, p, q): (Variable, Variable, Variable),
        (xv, pv): (Fr, Fr),
    ) -> Result<Variable, SynthesisError> {
        let kf = Fr::from(k);
        let own = cs.alloc(|| "p copy", || Ok(pv))?;
        let out = cs.alloc_input(|| "k·p + x", || Ok(kf * pv + xv))?;
        let bit = cs.alloc(|| "bit", || Ok(Fr::from(k % 2)))?;
        cs.enforce(|| "copy", |lc| lc + own, |lc| lc + CS::one(), |lc| lc + p);
        cs.enforce(|| "out", |lc| lc + (kf, p) + x, |lc| lc + CS::one(), |lc| lc + out);
        cs.enforce(|| "bool", |lc| lc + bit, |lc| lc + CS::one() - bit, |lc| lc);
        if k == 3 {
            cs.enforce(|| "q in B", |lc| lc, |lc| lc + q, |lc| lc);
        } else {
            cs.enforce(|| "nothing in B", |lc| lc, |lc| lc, |lc| lc);
        }
        if k == 2 {
            cs.enforce(|| "cancels", |lc| lc + p - p, |lc| lc + own, |lc| lc);
        } else {
            cs.enforce(|| "own only", |lc| lc + own, |lc| lc + own, |lc| lc + own);
        }
        Ok(own)
    }

    const ITEMS: u64 = 5;

    /// The prefix `x` (public), `p`, `q`, the items in order, and a constraint after them on
    /// what the items returned.
    struct Toy;

    impl Toy {
        fn prefix<CS: ConstraintSystem<Fr>>(cs: &mut CS) -> Result<(Variable, Variable, Variable), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Fr::from(3u64)))?;
            let p = cs.alloc(|| "p", || Ok(Fr::from(7u64)))?;
            let q = cs.alloc(|| "q", || Ok(Fr::from(9u64)))?;
            cs.enforce(|| "p", |lc| lc + p, |lc| lc + x, |lc| lc + p + p + p);
            Ok((x, p, q))
        }
        fn suffix<CS: ConstraintSystem<Fr>>(cs: &mut CS, owns: &[Variable]) {
            cs.enforce(|| "after", |lc| lc + owns[0], |lc| lc + owns[ITEMS as usize - 1], |lc| lc);
        }
    }

    impl Circuit<Fr> for Toy {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let vars = Toy::prefix(cs)?;
            let owns = (0..ITEMS)
                .map(|k| item(cs, k, vars, (Fr::from(3u64), Fr::from(7u64))))
                .collect::<Result<Vec<_>, _>>()?;
            Toy::suffix(cs, &owns);
            Ok(())
        }
    }

    fn forked(items: Vec<u64>, shape: &ItemShape) -> Result<Witness, ForkError> {
        synthesize_with(|cs| {
            let vars = Toy::prefix(cs)?;
            let owns = cs.fork_map(items, shape, |cs, k| item(cs, k, vars, (Fr::from(3u64), Fr::from(7u64))))?;
            Toy::suffix(cs, &owns);
            Ok(())
        })
    }

    #[test]
    fn forks_equal_sequential_synthesis() {
        let seq = synthesize(Toy).unwrap();
        let shape = ItemShape::default();
        let par = forked((0..ITEMS).collect(), &shape).unwrap();
        assert_eq!(par.first_difference(&seq), None);
        // q (aux 1) is marked in B by item 3's fork alone, and never in A
        assert!(par.b_aux_density.get(1) && !par.a_aux_density.get(1));
        assert_eq!(par.input.len(), 2 + ITEMS as usize);
        assert_eq!(par.a.len(), 1 + 5 * ITEMS as usize + 1 + par.input.len());
        // counted once, then remembered
        assert_eq!(shape.0.get(), Some(&Shape { constraints: 5, aux: 2, inputs: 1 }));
        assert_eq!(forked((0..ITEMS).collect(), &shape).unwrap().first_difference(&seq), None);
    }

    #[test]
    fn forks_filled_from_a_precompiled_record_equal_sequential_synthesis() {
        let seq = synthesize(Toy).unwrap();
        let record = Arc::new(crate::groth16::Precompiled::record(Toy).unwrap());
        let shape = ItemShape::default();
        // the first run counts the items' shape inside the record's scope, the second knows it
        for _ in 0..2 {
            let par = crate::groth16::precompiled(record.clone(), || forked((0..ITEMS).collect(), &shape)).unwrap();
            assert_eq!(par.first_difference(&seq), None);
        }
        let fewer = crate::groth16::precompiled(record, || forked((0..ITEMS - 1).collect(), &ItemShape::default()));
        assert!(matches!(fewer, Err(ForkError::Precompiled(_))), "{:?}", fewer.map(|_| ()));
    }

    #[test]
    fn no_items_and_one_item() {
        let none = synthesize_with(|cs| cs.fork_map(Vec::<u64>::new(), &ItemShape::default(), |_, _| Ok(())).map(drop));
        assert_eq!(none.unwrap().a.len(), 1);
        let mut cs = WitnessCs::new();
        cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
        let vars = Toy::prefix(&mut cs).unwrap();
        let owns = cs
            .fork_map(vec![4], &ItemShape::default(), |cs, k| item(cs, k, vars, (Fr::from(3u64), Fr::from(7u64))))
            .unwrap();
        assert_eq!(owns, vec![Variable::new_unchecked(Index::Aux(2))]);
    }

    #[test]
    fn a_stopped_synthesis_ends_with_stopped_and_an_unstopped_one_runs() {
        let shape = ItemShape::default();
        let never: StopFn = Arc::new(|| false);
        let seq = synthesize(Toy).unwrap();
        assert_eq!(stoppable(never, || forked((0..ITEMS).collect(), &shape)).unwrap().first_difference(&seq), None);
        let now: StopFn = Arc::new(|| true);
        let e = stoppable(now, || forked((0..ITEMS).collect(), &shape)).unwrap_err();
        assert!(matches!(e, ForkError::Stopped { .. }), "{e}");
        // the token was this call's only
        assert!(forked((0..ITEMS).collect(), &shape).is_ok());
    }

    /// Every item is admitted once and holds its permit while it runs; an admission refused (its
    /// synthesis stopped while it waited) ends the synthesis with Stopped; the witness is unchanged.
    #[test]
    fn each_item_waits_for_its_admission() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Held(Arc<AtomicUsize>);
        impl Drop for Held {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let shape = ItemShape::default();
        let seq = synthesize(Toy).unwrap();
        let (admits, inside) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let admit: AdmitFn = {
            let (admits, inside) = (admits.clone(), inside.clone());
            Arc::new(move |_stop: &dyn Fn() -> bool| {
                admits.fetch_add(1, Ordering::SeqCst);
                inside.fetch_add(1, Ordering::SeqCst);
                Some(Box::new(Held(inside.clone())) as Permit)
            })
        };
        let w = admitted(admit, || forked((0..ITEMS).collect(), &shape)).unwrap();
        assert_eq!(w.first_difference(&seq), None);
        assert_eq!(admits.load(Ordering::SeqCst), ITEMS as usize);
        assert_eq!(inside.load(Ordering::SeqCst), 0, "a permit outlived its item");
        let refuse: AdmitFn = Arc::new(|_stop: &dyn Fn() -> bool| None);
        let e = admitted(refuse, || forked((0..ITEMS).collect(), &shape)).unwrap_err();
        assert!(matches!(e, ForkError::Stopped { .. }), "{e}");
    }

    /// Items with one aux variable more or less than the shape, and a failing item: errors that
    /// name the item, and nothing is misplaced.
    #[test]
    fn items_of_another_shape_or_failing_are_errors() {
        let run = |extra: fn(u64) -> bool, fail: u64| {
            synthesize_with(|cs| {
                cs.fork_map((0..4u64).collect(), &ItemShape::default(), |cs, k| {
                    if extra(k) {
                        cs.alloc(|| "extra", || Ok(Fr::ONE))?;
                    }
                    let v =
                        cs.alloc(|| "v", || if k == fail { Err(SynthesisError::DivisionByZero) } else { Ok(Fr::ONE) })?;
                    cs.enforce(|| "v", |lc| lc + v, |lc| lc + v, |lc| lc + v);
                    Ok(())
                })?;
                Ok::<_, ForkError>(())
            })
        };
        let more = run(|k| k % 2 == 1, u64::MAX).unwrap_err();
        assert!(matches!(more, ForkError::Shape { item: 1, .. }), "{more}");
        assert_eq!(
            more.to_string(),
            "item 1 does not have the shape of the circuit's items: it has more aux variables than their 1"
        );
        let fewer = run(|k| k == 0, u64::MAX).unwrap_err();
        assert_eq!(
            fewer.to_string(),
            "item 1 does not have the shape of the circuit's items: it has 1 aux variables where they have 2"
        );
        let failed = run(|_| false, 2).unwrap_err();
        assert!(matches!(failed, ForkError::Item { item: 2, source: SynthesisError::DivisionByZero }), "{failed}");
    }
}
