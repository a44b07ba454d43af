//! Precompiled circuits: a circuit's A and B matrices recorded once (as sparse rows) so that each
//! later synthesis of that circuit only computes the variables' values. Building and evaluating
//! the linear combinations of A and B is a third of a Filecoin circuit's synthesis, done one
//! constraint after another; with the matrices kept, a and b are sparse matrix–vector products
//! over the finished assignment, which split across every core.
//!
//! The structure of a circuit (which variables each constraint's A and B use, with what
//! coefficients, and so the density bits) cannot depend on the witness: the parameters are made
//! from it. [`Precompiled::record`] runs any instance of the circuit (a blank one will do) through a
//! constraint system that keeps only that structure; [`precompiled`] then makes
//! [`super::synthesize_with`] skip A and B and fill them from the record. The result is the
//! witness of a full synthesis, byte for byte (tested for every kind at 2 KiB).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use super::assignment::term;
use super::{Density, Witness};

/// Marks an aux variable's index in a [`Term`] (inputs have it clear).
const AUX: u32 = 1 << 31;

/// Coefficient ids with a fast path: adding or subtracting the value needs no multiplication.
const ONE: u32 = 0;
const MINUS_ONE: u32 = 1;

/// One nonzero entry of a row: the variable and the id of its coefficient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
struct Term {
    var: u32,
    coeff: u32,
}

/// A sparse matrix by rows (CSR): row r's terms are `terms[ends[r-1]..ends[r]]`.
#[derive(Debug, Default)]
struct Matrix {
    ends: Vec<u32>,
    terms: Vec<Term>,
}

impl Matrix {
    fn row(&self, r: usize) -> &[Term] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] as usize };
        &self.terms[start..self.ends[r] as usize]
    }
    fn bytes(&self) -> usize {
        self.ends.capacity() * 4 + self.terms.capacity() * std::mem::size_of::<Term>()
    }
}

/// Why a circuit could not be recorded, or a witness not filled from a record.
#[derive(Debug, thiserror::Error)]
pub enum PrecompileError {
    #[error(transparent)]
    Synthesis(#[from] SynthesisError),
    /// Indices and offsets are 32-bit to halve the record; no Filecoin circuit comes near this.
    #[error("the circuit is too large to precompile: {0}")]
    TooLarge(&'static str),
}

/// A synthesis whose circuit is not the one its record was made from: it is stopped, never
/// filled from the wrong matrices.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Mismatch(String);

/// A circuit's synthesis reports a mismatch as bellperson's I/O error (the only variant with a message).
impl From<Mismatch> for SynthesisError {
    fn from(m: Mismatch) -> Self {
        SynthesisError::IoError(std::io::Error::other(m.0))
    }
}

/// The A and B matrices and densities of one circuit, as [`super::WitnessCs`] would evaluate and
/// mark them.
#[derive(Debug)]
pub struct Precompiled {
    inputs: usize,
    aux: usize,
    a: Matrix,
    b: Matrix,
    coeffs: Vec<Fr>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

impl Precompiled {
    /// Records `circuit`'s structure. Values are never asked for, so a blank circuit will do; one
    /// with values gives the same record. The constraint system is not extensible, so a circuit
    /// that can synthesize parts elsewhere (FallbackPoSt) runs them in place, in the same order.
    pub fn record<C: Circuit<Fr>>(circuit: C) -> Result<Precompiled, PrecompileError> {
        let mut cs = Recorder::default();
        cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
        circuit.synthesize(&mut cs)?;
        cs.finish()
    }

    /// Records a circuit made of parts alone, one after another (FallbackPoSt's sectors), with the
    /// parts recorded in parallel: [`Precompiled::record_forked`] with nothing before the parts
    /// but ONE, so each part is recorded as a circuit of its own and appended as bellperson's
    /// `extend` appends synthesized parts (a part's ONE is ours, its other inputs and all its aux
    /// variables follow ours). Equal to [`Precompiled::record`] of the whole circuit (tested at
    /// 2 KiB).
    pub fn record_parts<T: Send>(
        parts: Vec<T>,
        f: impl Fn(&mut Recorder, T) -> Result<(), SynthesisError> + Sync,
    ) -> Result<Precompiled, PrecompileError> {
        Self::record_forked(|_| Ok(((), parts)), |cs, (), part| f(cs, part))
    }

    /// Records a circuit made of a prefix, recorded by `prefix`, and parts that read the
    /// prefix's variables but not each other's (PoRep's and SnapDeals' challenges), with the
    /// parts recorded in parallel: each numbers its variables after the prefix's, as the
    /// sequential run would ([`Recorder::after`]), and the records are appended in order.
    /// `prefix` returns what the parts read of it (its allocated numbers) and the parts. Equal
    /// to [`Precompiled::record`] of the whole circuit (tested at 2 KiB). Parts go a batch at a
    /// time, so at most a batch's records are held beside the whole.
    pub fn record_forked<P: Sync, T: Send>(
        prefix: impl FnOnce(&mut Recorder) -> Result<(P, Vec<T>), SynthesisError>,
        f: impl Fn(&mut Recorder, &P, T) -> Result<(), SynthesisError> + Sync,
    ) -> Result<Precompiled, PrecompileError> {
        let mut whole = Recorder::default();
        whole.alloc_input(|| "one", || Ok(Fr::ONE))?;
        let (read, parts) = prefix(&mut whole)?;
        let (inputs, aux) = (whole.pre.inputs, whole.pre.aux);
        let batch = 4 * rayon::current_num_threads();
        let mut parts = parts.into_iter().peekable();
        while parts.peek().is_some() {
            let recorded: Vec<Recorder> = parts
                .by_ref()
                .take(batch)
                .collect::<Vec<T>>()
                .into_par_iter()
                .map(|part| {
                    let mut cs = Recorder::after(inputs, aux);
                    f(&mut cs, &read, part)?;
                    Ok(cs)
                })
                .collect::<Result<_, SynthesisError>>()?;
            whole.reserve_for(&recorded, parts.len());
            for part in recorded {
                whole.append(part, inputs, aux);
            }
        }
        whole.finish()
    }

    /// Where `self` and `other` record different circuits, if they do: counts, densities, and
    /// each matrix's rows term by term with coefficients compared by value (two records of one
    /// circuit may number their coefficients differently).
    pub fn first_difference(&self, other: &Precompiled) -> Option<String> {
        let counts = [("inputs", self.inputs, other.inputs), ("aux variables", self.aux, other.aux)];
        if let Some((what, a, b)) = counts.iter().find(|(_, a, b)| a != b) {
            return Some(format!("{what}: {a} against {b}"));
        }
        let densities = [
            ("A's aux density", &self.a_aux_density, &other.a_aux_density),
            ("B's input density", &self.b_input_density, &other.b_input_density),
            ("B's aux density", &self.b_aux_density, &other.b_aux_density),
        ];
        if let Some((what, ..)) = densities.iter().find(|(_, a, b)| a != b) {
            return Some(format!("{what} differs"));
        }
        for (name, a, b) in [("A", &self.a, &other.a), ("B", &self.b, &other.b)] {
            if a.ends != b.ends {
                let row = a.ends.iter().zip(&b.ends).position(|(x, y)| x != y).unwrap_or(a.ends.len().min(b.ends.len()));
                return Some(format!("{name}: row {row} has another length (or the row counts differ)"));
            }
            let coeff = |pre: &Precompiled, t: &Term| match t.coeff {
                ONE => Fr::ONE,
                MINUS_ONE => -Fr::ONE,
                k => pre.coeffs[k as usize],
            };
            let same = |(x, y): (&Term, &Term)| x.var == y.var && coeff(self, x) == coeff(other, y);
            if let Some(i) = a.terms.iter().zip(&b.terms).position(|pair| !same(pair)) {
                let row = a.ends.partition_point(|&end| end as usize <= i);
                return Some(format!("{name}: row {row} differs"));
            }
        }
        None
    }

    /// The circuit's constraints (without the one bellperson adds per input).
    pub fn constraints(&self) -> usize {
        self.a.ends.len()
    }

    /// Host bytes held, for the memory budget.
    pub fn bytes(&self) -> u64 {
        (self.a.bytes()
            + self.b.bytes()
            + self.coeffs.capacity() * std::mem::size_of::<Fr>()
            + self.a_aux_density.bytes()
            + self.b_input_density.bytes()
            + self.b_aux_density.bytes()) as u64
    }

    /// Checks that a synthesis that counted `constraints` made `w` from this record's circuit:
    /// any difference is an error, never a wrong witness.
    fn check(&self, w: &Witness, constraints: usize) -> Result<(), Mismatch> {
        let counts = [
            ("constraints", constraints, self.constraints()),
            ("inputs", w.input.len(), self.inputs),
            ("aux variables", w.aux.len(), self.aux),
        ];
        if let Some((what, got, recorded)) = counts.iter().find(|(_, got, recorded)| got != recorded) {
            return Err(Mismatch(format!("the circuit has {got} {what} where its precompiled record has {recorded}")));
        }
        Ok(())
    }

    /// Fills `w`'s A and B evaluations (without the closing constraint per input, which
    /// [`super::synthesize_with`] appends) and its densities from the record, given its input and
    /// aux assignments. `constraints` is what the synthesis counted.
    pub fn fill(&self, w: &mut Witness, constraints: usize) -> Result<(), Mismatch> {
        self.check(w, constraints)?;
        self.fill_ab(w);
        self.copy_densities(w);
        Ok(())
    }

    /// Like [`Precompiled::fill`], but leaves A and B to the proving stage: `w` keeps only its
    /// assignments and densities and names this record ([`Witness::record`]), so it holds a third
    /// of a full witness's memory until a device evaluates A and B (or [`Witness::fill_deferred`]).
    pub fn defer(self: &Arc<Self>, w: &mut Witness, constraints: usize) -> Result<(), Mismatch> {
        self.check(w, constraints)?;
        self.copy_densities(w);
        w.record = Some(self.clone());
        Ok(())
    }

    fn copy_densities(&self, w: &mut Witness) {
        w.a_aux_density = self.a_aux_density.clone();
        w.b_input_density = self.b_input_density.clone();
        w.b_aux_density = self.b_aux_density.clone();
    }

    /// a = A·w and b = B·w by rows in parallel, with room for the closing constraint per input.
    fn fill_ab(&self, w: &mut Witness) {
        let (input, aux) = (&w.input[..], &w.aux[..]);
        let value = |t: &Term| if t.var & AUX != 0 { aux[(t.var & !AUX) as usize] } else { input[t.var as usize] };
        let eval = |m: &Matrix, r: usize| {
            let mut acc = Fr::ZERO;
            for t in m.row(r) {
                let v = value(t);
                if v.is_zero_vartime() {
                    continue;
                }
                match t.coeff {
                    ONE => acc += v,
                    MINUS_ONE => acc -= v,
                    k => acc += term(v, &self.coeffs[k as usize]),
                }
            }
            acc
        };
        let n = self.constraints();
        // room for the closing constraint per input too, so that appending them moves nothing
        let mut ab = [Vec::new(), Vec::new()];
        for (v, m) in ab.iter_mut().zip([&self.a, &self.b]) {
            *v = Vec::with_capacity(n + self.inputs);
            (0..n).into_par_iter().with_min_len(1 << 12).map(|r| eval(m, r)).collect_into_vec(v);
        }
        [w.a, w.b] = ab;
    }

    /// Bytes of a witness deferred to this record (its assignments and densities), for the budget.
    pub fn deferred_bytes(&self) -> u64 {
        ((self.inputs + self.aux) * std::mem::size_of::<Fr>()
            + self.a_aux_density.bytes()
            + self.b_input_density.bytes()
            + self.b_aux_density.bytes()) as u64
    }

    /// The record as flat arrays, for a device to evaluate A and B itself.
    pub fn raw(&self) -> RawRecord<'_> {
        // SAFETY: Term is repr(C) over two u32 fields, so its slice is twice as many u32s.
        let flat = |m: &Matrix| unsafe { std::slice::from_raw_parts(m.terms.as_ptr().cast::<u32>(), m.terms.len() * 2) };
        RawRecord {
            inputs: self.inputs,
            aux: self.aux,
            a: (&self.a.ends, flat(&self.a)),
            b: (&self.b.ends, flat(&self.b)),
            coeffs: &self.coeffs,
        }
    }
}

/// [`Precompiled::raw`]: each matrix as (row ends, terms as (variable, coefficient id) pairs of
/// u32), a variable with bit 31 set being aux variable `var & !(1 << 31)`; coefficient ids 0 and 1
/// are +1 and −1, every other id indexes `coeffs` (in Montgomery form, as blstrs keeps them).
pub struct RawRecord<'a> {
    pub inputs: usize,
    pub aux: usize,
    pub a: (&'a [u32], &'a [u32]),
    pub b: (&'a [u32], &'a [u32]),
    pub coeffs: &'a [Fr],
}

impl Witness {
    /// Evaluates A and B of a witness whose synthesis deferred them ([`Precompiled::defer`]) on
    /// the host, with the closing constraint per input; a witness already whole is left as it is.
    pub fn fill_deferred(&mut self) {
        if let Some(record) = self.record.take() {
            record.fill_ab(self);
            close_inputs(self);
        }
    }
}

/// Appends bellperson's closing `x_i · 0 = 0` constraint per input to a and b.
pub(super) fn close_inputs(w: &mut Witness) {
    let n = w.input.len();
    w.a.extend_from_slice(&w.input);
    w.b.resize(w.b.len() + n, Fr::ZERO);
}

/// The constraint system [`Precompiled::record`] runs: variables are only counted, and each
/// constraint's A and B are kept as rows (C is never built, as in [`super::WitnessCs`]). Public
/// only because the parts given to [`Precompiled::record_parts`] name it as their `CS`.
#[derive(Default)]
pub struct Recorder {
    pre: Precompiled,
    coeff_ids: HashMap<[u8; 32], u32>,
    too_large: Option<&'static str>,
}

impl Default for Precompiled {
    fn default() -> Self {
        Precompiled {
            inputs: 0,
            aux: 0,
            a: Matrix::default(),
            b: Matrix::default(),
            coeffs: vec![Fr::ONE, -Fr::ONE],
            a_aux_density: Density::default(),
            b_input_density: Density::default(),
            b_aux_density: Density::default(),
        }
    }
}

impl Recorder {
    fn finish(self) -> Result<Precompiled, PrecompileError> {
        if let Some(what) = self.too_large {
            return Err(PrecompileError::TooLarge(what));
        }
        let mut pre = self.pre;
        for m in [&mut pre.a, &mut pre.b] {
            m.ends.shrink_to_fit();
            m.terms.shrink_to_fit();
        }
        Ok(pre)
    }

    /// A recorder for a part that reads the first `inputs` inputs and `aux` aux variables of
    /// the whole (a PoRep challenge reads the prefix's): it numbers its own variables after
    /// them, as the whole would, and [`Recorder::append`] moves them to their place.
    fn after(inputs: usize, aux: usize) -> Recorder {
        let mut r = Recorder::default();
        let pre = &mut r.pre;
        (pre.inputs, pre.aux) = (inputs, aux);
        pre.a_aux_density.grow(aux);
        pre.b_aux_density.grow(aux);
        pre.b_input_density.grow(inputs);
        r
    }

    /// Records `items` in parallel, each reading what is recorded here and nothing of another
    /// item, and returns what each returned: [`super::WitnessCs::fork_map`] for a record, for
    /// parts whose results later parts read (SnapDeals' apex tree, a row of hashes at a time).
    /// Each item is recorded where the sequential record puts it, so the variables it returns
    /// carry their final indices; that needs every item to allocate as many variables as the
    /// first, which is recorded alone first to count them (items of one row are one gadget: a
    /// circuit's structure cannot depend on its values). An item of another size is an error.
    pub fn fork_map<T: Send, R: Send>(
        &mut self,
        items: Vec<T>,
        f: impl Fn(&mut Recorder, T) -> Result<R, SynthesisError> + Sync,
    ) -> Result<Vec<R>, SynthesisError> {
        let mut items = items.into_iter();
        let Some(first) = items.next() else {
            return Ok(Vec::new());
        };
        let (inputs, aux) = (self.pre.inputs, self.pre.aux);
        let mut part = Recorder::after(inputs, aux);
        let mut results = vec![f(&mut part, first)?];
        let size = (part.pre.inputs - inputs, part.pre.aux - aux);
        self.append(part, inputs, aux);
        let at = |i: usize| (inputs + i * size.0, aux + i * size.1);
        let recorded: Vec<(Recorder, R)> = (items.collect::<Vec<T>>().into_par_iter().enumerate())
            .map(|(i, item)| {
                let (inputs, aux) = at(i + 1);
                let mut cs = Recorder::after(inputs, aux);
                let r = f(&mut cs, item)?;
                let got = (cs.pre.inputs - inputs, cs.pre.aux - aux);
                match got == size {
                    true => Ok((cs, r)),
                    false => Err(SynthesisError::IoError(std::io::Error::other(format!(
                        "item {} of a recorded fork allocates {} inputs and {} aux variables, item 0 {} and {}",
                        i + 1,
                        got.0,
                        got.1,
                        size.0,
                        size.1
                    )))),
                }
            })
            .collect::<Result<_, SynthesisError>>()?;
        let (parts, rest): (Vec<Recorder>, Vec<R>) = recorded.into_iter().unzip();
        self.reserve_for(&parts, 0);
        for (i, part) in parts.into_iter().enumerate() {
            let (inputs, aux) = at(i + 1);
            self.append(part, inputs, aux);
        }
        results.extend(rest);
        Ok(results)
    }

    /// Makes room for `batch` and for `left` more parts of the batch's average size (after the
    /// first batch the room is already there): appending then never grows the matrices by
    /// doubling, which copies gigabytes at 32 GiB (an allocator without glibc's `mremap` copies a
    /// grown block) and leaves up to half of it spare. Parts of one circuit are alike
    /// (challenges, sectors), so the estimate is exact for them.
    fn reserve_for(&mut self, batch: &[Recorder], left: usize) {
        if batch.is_empty() {
            return;
        }
        let sum = |len: fn(&Precompiled) -> usize| batch.iter().map(|r| len(&r.pre)).sum::<usize>();
        let more = |n: usize| n + n / batch.len() * left;
        let (a_terms, a_ends) = (more(sum(|p| p.a.terms.len())), more(sum(|p| p.a.ends.len())));
        let (b_terms, b_ends) = (more(sum(|p| p.b.terms.len())), more(sum(|p| p.b.ends.len())));
        let pre = &mut self.pre;
        pre.a.terms.reserve_exact(a_terms);
        pre.a.ends.reserve_exact(a_ends);
        pre.b.terms.reserve_exact(b_terms);
        pre.b.ends.reserve_exact(b_ends);
    }

    /// Appends `part`, whose first `shared_inputs` inputs and `shared_aux` aux variables are
    /// ours ([`Recorder::after`]; a part recorded as a circuit of its own shares only input 0,
    /// ONE, as [`super::WitnessCs::extend`] appends a synthesized one): its other inputs and aux
    /// variables are numbered after ours, and its coefficients join our table.
    fn append(&mut self, part: Recorder, shared_inputs: usize, shared_aux: usize) {
        if let Some(what) = part.too_large {
            self.too_large.get_or_insert(what);
        }
        let (pre, p) = (&mut self.pre, &part.pre);
        let (aux_base, input_base) = (pre.aux as u64, pre.inputs as u64);
        let (shared_in, shared_aux_u) = (shared_inputs as u64, shared_aux as u64);
        // the part's coefficient ids in our table, looked up once each (a part has a few hundred)
        let ids: Vec<u32> = p
            .coeffs
            .iter()
            .enumerate()
            .map(|(k, c)| match k as u32 {
                ONE | MINUS_ONE => k as u32,
                _ => *self.coeff_ids.entry(c.to_bytes_le()).or_insert_with(|| {
                    pre.coeffs.push(*c);
                    pre.coeffs.len() as u32 - 1
                }),
            })
            .collect();
        for (whole, m) in [(&mut pre.a, &p.a), (&mut pre.b, &p.b)] {
            let base = whole.terms.len() as u64;
            whole.terms.reserve(m.terms.len());
            for t in &m.terms {
                let (index, flag) = match t.var {
                    v if v & AUX != 0 => match u64::from(v & !AUX) {
                        i if i < shared_aux_u => (i, AUX),
                        i => (aux_base + i - shared_aux_u, AUX),
                    },
                    v if u64::from(v) < shared_in => (u64::from(v), 0),
                    v => (input_base + u64::from(v) - shared_in, 0),
                };
                let coeff = ids[t.coeff as usize];
                match u32::try_from(index) {
                    Ok(index) if index < AUX => whole.terms.push(Term { var: index | flag, coeff }),
                    _ => self.too_large = Some("2^31 variables of a kind or more"),
                }
            }
            for &end in &m.ends {
                match u32::try_from(base + u64::from(end)) {
                    Ok(end) => whole.ends.push(end),
                    Err(_) => self.too_large = Some("more than 2^32 terms in one matrix"),
                }
            }
        }
        pre.a_aux_density.extend_sharing(&p.a_aux_density, shared_aux);
        pre.b_aux_density.extend_sharing(&p.b_aux_density, shared_aux);
        pre.b_input_density.extend_sharing(&p.b_input_density, shared_inputs);
        pre.aux += p.aux - shared_aux;
        pre.inputs += p.inputs - shared_inputs;
        if pre.aux >= AUX as usize {
            self.too_large = Some("2^31 aux variables or more");
        }
    }

    /// Appends `lc`'s nonzero terms as a row of `a` (or of B), marking the densities as
    /// `assignment::eval` marks them: A's inputs untracked, everything else by nonzero coefficient.
    fn row(&mut self, lc: &LinearCombination<Fr>, in_a: bool) {
        let pre = &mut self.pre;
        let terms = lc
            .iter_inputs()
            .map(|(&i, c)| (i as u64, c))
            .chain(lc.iter_aux().map(|(&i, c)| (i as u64 | AUX as u64, c)))
            .filter(|(_, c)| !c.is_zero_vartime());
        let matrix = if in_a { &mut pre.a } else { &mut pre.b };
        for (var, c) in terms {
            if var & AUX as u64 != 0 {
                let i = (var & !(AUX as u64)) as usize;
                if in_a { pre.a_aux_density.set(i) } else { pre.b_aux_density.set(i) }
            } else if !in_a {
                pre.b_input_density.set(var as usize);
            }
            let coeff = if *c == Fr::ONE {
                ONE
            } else if *c == -Fr::ONE {
                MINUS_ONE
            } else {
                *self.coeff_ids.entry(c.to_bytes_le()).or_insert_with(|| {
                    pre.coeffs.push(*c);
                    pre.coeffs.len() as u32 - 1
                })
            };
            matrix.terms.push(Term { var: var as u32, coeff });
        }
        match u32::try_from(matrix.terms.len()) {
            Ok(end) => matrix.ends.push(end),
            Err(_) => self.too_large = Some("more than 2^32 terms in one matrix"),
        }
    }
}

impl ConstraintSystem<Fr> for Recorder {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let pre = &mut self.pre;
        pre.aux += 1;
        pre.a_aux_density.push(false);
        pre.b_aux_density.push(false);
        if pre.aux >= AUX as usize {
            self.too_large = Some("2^31 aux variables or more");
        }
        Ok(Variable::new_unchecked(Index::Aux(pre.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let pre = &mut self.pre;
        pre.inputs += 1;
        pre.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(pre.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.row(&a(LinearCombination::zero()), true);
        self.row(&b(LinearCombination::zero()), false);
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
}

/// What a synthesis under a record does with A and B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Evaluates them from the record once the assignments are done ([`Precompiled::fill`]).
    Host,
    /// Leaves them to the proving stage ([`Precompiled::defer`]).
    Deferred,
}

thread_local! {
    static CURRENT: RefCell<Option<(Arc<Precompiled>, Fill)>> = const { RefCell::new(None) };
}

/// Runs `f`, a synthesis on this thread, so that [`super::synthesize_with`] (and the statements'
/// `synthesize`, which call it) skips A and B and fills them from `record` instead.
pub fn precompiled<R>(record: Arc<Precompiled>, f: impl FnOnce() -> R) -> R {
    precompiled_as(record, Fill::Host, f)
}

/// [`precompiled`], with A and B filled as `fill` says.
pub fn precompiled_as<R>(record: Arc<Precompiled>, fill: Fill, f: impl FnOnce() -> R) -> R {
    super::scoped(&CURRENT, (record, fill), f)
}

/// The record [`precompiled`] set for this thread's synthesis, if any.
pub(super) fn current() -> Option<(Arc<Precompiled>, Fill)> {
    CURRENT.with(|c| c.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::synthesize;

    /// Inputs and aux variables interleaved, coefficients 1, −1, 2 and one that cancels, a
    /// constraint with an empty B, and a value 0 and 1 among the others.
    struct Mixed(u64);

    impl Circuit<Fr> for Mixed {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let k = Fr::from(self.0);
            let x = cs.alloc_input(|| "x", || Ok(k))?;
            let y = cs.alloc(|| "y", || Ok(k + Fr::ONE))?;
            let zero = cs.alloc(|| "zero", || Ok(Fr::ZERO))?;
            let one = cs.alloc(|| "one", || Ok(Fr::ONE))?;
            let z = cs.alloc_input(|| "z", || Ok(k.double()))?;
            let big = Fr::from(0x1234_5678_9abc_def0u64);
            cs.enforce(|| "1", |lc| lc + x - y + (big, one), |lc| lc + (Fr::from(2u64), y) + zero, |lc| lc);
            cs.enforce(|| "2", |lc| lc + z + y - y, |lc| lc, |lc| lc);
            cs.enforce(|| "3", |lc| lc + CS::one() + (big, zero), |lc| lc + x + z - (big, one), |lc| lc);
            Ok(())
        }
    }

    #[test]
    fn filled_witness_equals_the_full_synthesis() {
        let record = Arc::new(Precompiled::record(Mixed(0)).unwrap());
        assert_eq!(record.constraints(), 3);
        for k in [0, 1, 5, 1 << 40] {
            let full = synthesize(Mixed(k)).unwrap();
            let filled = precompiled(record.clone(), || synthesize(Mixed(k))).unwrap();
            assert_eq!(full.first_difference(&filled), None, "k = {k}");
        }
        // the record is only used inside `precompiled`
        assert!(current().is_none());
    }

    #[test]
    fn deferred_witness_holds_no_a_b_until_filled() {
        let record = Arc::new(Precompiled::record(Mixed(0)).unwrap());
        for k in [0, 3, 1 << 40] {
            let full = synthesize(Mixed(k)).unwrap();
            let mut deferred = precompiled_as(record.clone(), Fill::Deferred, || synthesize(Mixed(k))).unwrap();
            assert!(deferred.a.is_empty() && deferred.b.is_empty());
            assert_eq!(deferred.evaluations(), full.a.len());
            assert_eq!(deferred.bytes(), record.deferred_bytes());
            assert!(deferred.bytes() < full.bytes());
            deferred.fill_deferred();
            assert!(deferred.record.is_none());
            assert_eq!(full.first_difference(&deferred), None, "k = {k}");
        }
    }

    /// The flat arrays a device evaluates from: row ends, (variable, coefficient id) pairs with
    /// the aux bit, and the coefficient table after ±1.
    #[test]
    fn raw_record_is_the_rows_as_recorded() {
        let record = Precompiled::record(Mixed(0)).unwrap();
        let raw = record.raw();
        assert_eq!((raw.inputs, raw.aux), (3, 3));
        // row 0 of A: x − y + big·one  →  input 1 (+1), aux 0 (−1), aux 2 (big)
        assert_eq!(raw.a.0, &[3, 4, 6]);
        assert_eq!(&raw.a.1[..6], &[1, ONE, AUX, MINUS_ONE, AUX | 2, 2]);
        assert_eq!(raw.coeffs[2], Fr::from(0x1234_5678_9abc_def0u64));
    }

    /// A binary tree of "hashes" over four leaves, a row at a time by `row`, its root
    /// constrained against an input.
    fn tree<CS: ConstraintSystem<Fr>>(
        cs: &mut CS,
        mut row: impl FnMut(&mut CS, Vec<(Variable, Variable)>) -> Result<Vec<Variable>, SynthesisError>,
    ) -> Result<(), SynthesisError> {
        let x = cs.alloc_input(|| "x", || Ok(Fr::ONE))?;
        let mut level = (0..4u64).map(|i| cs.alloc(|| "leaf", || Ok(Fr::from(i)))).collect::<Result<Vec<_>, _>>()?;
        while level.len() > 1 {
            level = row(cs, level.chunks(2).map(|p| (p[0], p[1])).collect())?;
        }
        cs.enforce(|| "root", |lc| lc + level[0], |lc| lc + x, |lc| lc);
        Ok(())
    }

    /// One "hash" of `tree`: two aux variables, two constraints, both children read.
    fn hash<CS: ConstraintSystem<Fr>>(cs: &mut CS, (l, r): (Variable, Variable)) -> Result<Variable, SynthesisError> {
        let t = cs.alloc(|| "t", || Ok(Fr::ONE))?;
        cs.enforce(|| "t", |lc| lc + l + (Fr::from(3u64), r), |lc| lc + CS::one(), |lc| lc + t);
        let out = cs.alloc(|| "out", || Ok(Fr::ONE))?;
        cs.enforce(|| "out", |lc| lc + t, |lc| lc + t + l, |lc| lc + out);
        Ok(out)
    }

    #[test]
    fn forked_rows_record_as_in_place() {
        struct Tree;
        impl Circuit<Fr> for Tree {
            fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
                tree(cs, |cs, pairs| pairs.into_iter().map(|pair| hash(cs, pair)).collect())
            }
        }
        let in_place = Precompiled::record(Tree).unwrap();
        let forked = Precompiled::record_forked(
            |cs| tree(cs, |cs, pairs| cs.fork_map(pairs, hash)).map(|()| ((), Vec::<()>::new())),
            |_, (), ()| Ok(()),
        )
        .unwrap();
        assert_eq!((in_place.constraints(), in_place.aux), (7, 10));
        assert_eq!(in_place.first_difference(&forked), None);
    }

    #[test]
    fn forked_items_of_another_size_are_an_error() {
        let mut cs = Recorder::default();
        let err = cs
            .fork_map(vec![1, 2], |cs, extra: usize| (0..extra).try_for_each(|_| cs.alloc(|| "v", || Ok(Fr::ONE)).map(drop)))
            .unwrap_err();
        assert!(err.to_string().contains("item 1 of a recorded fork allocates 0 inputs and 2 aux variables"), "{err}");
    }

    #[test]
    fn another_circuit_is_an_error_not_a_witness() {
        struct Other;
        impl Circuit<Fr> for Other {
            fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
                let a = cs.alloc(|| "a", || Ok(Fr::ONE))?;
                cs.enforce(|| "a", |lc| lc + a, |lc| lc + a, |lc| lc + a);
                Ok(())
            }
        }
        let record = Arc::new(Precompiled::record(Mixed(0)).unwrap());
        let err = precompiled(record, || synthesize(Other)).unwrap_err();
        assert!(err.to_string().contains("precompiled record"), "{err}");
    }
}
