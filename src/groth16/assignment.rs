//! snarkd's own constraint system: runs a bellperson circuit and records exactly what bellperson's
//! (private) `ProvingAssignment` records, so that proofs made from our [`Witness`] are the proofs
//! bellperson would make.
//!
//! Each `enforce` evaluates its three linear combinations straight from their terms; nothing per
//! constraint is kept beyond the three values and the density bits.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use super::precompiled::{self, Fill, Mismatch};
use super::{Density, Witness};

/// Runs `circuit` through snarkd's constraint system and records its witness, as bellperson's
/// prover runs it (on the calling thread, unless the circuit extends the system with parts it
/// synthesized elsewhere, as FallbackPoSt does).
pub fn synthesize<C: Circuit<Fr>>(circuit: C) -> Result<Witness, SynthesisError> {
    synthesize_with(|cs| circuit.synthesize(cs))
}

/// [`synthesize`] for a circuit written against [`WitnessCs`] itself, such as one that runs parts
/// of itself in parallel with [`WitnessCs::fork_map`].
///
/// As bellperson does: the constant ONE is input 0, then the circuit, then one `x_i · 0 = 0`
/// constraint per input (they make the IC query fully dense and pin the inputs into A).
pub fn synthesize_with<E: From<SynthesisError> + From<Mismatch>>(
    circuit: impl FnOnce(&mut WitnessCs) -> Result<(), E>,
) -> Result<Witness, E> {
    let record = precompiled::current();
    let mut cs = WitnessCs(Witness::default(), record.as_ref().map(|_| 0));
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit(&mut cs)?;
    let WitnessCs(mut w, skipped) = cs;
    match (record, skipped) {
        (Some((record, Fill::Deferred)), Some(constraints)) => {
            record.defer(&mut w, constraints)?;
            return Ok(w); // a and b, with their closing constraints, come with the fill
        }
        (Some((record, Fill::Host)), Some(constraints)) => record.fill(&mut w, constraints)?,
        _ => {}
    }
    precompiled::close_inputs(&mut w);
    Ok(w)
}

/// The constraint system behind [`synthesize`]; public only because circuits name it as `CS`.
/// The second field counts the constraints while A and B are skipped, because a precompiled
/// record will fill them ([`precompiled::precompiled`]); it is None when they are evaluated here.
pub struct WitnessCs(pub(super) Witness, pub(super) Option<usize>);

/// Where a linear combination's variables get their values: the witness so far, or for a fork
/// the shared prefix plus the fork's own part.
pub(super) trait Values {
    fn input(&self, i: usize) -> Fr;
    fn aux(&self, i: usize) -> Fr;
}

/// Where a linear combination marks the variables it uses (a density, or nothing).
pub(super) trait Marks {
    fn mark(&mut self, i: usize);
}

impl Marks for Density {
    #[inline(always)]
    fn mark(&mut self, i: usize) {
        self.set(i);
    }
}

/// A's inputs: fully dense anyway (the closing `x_i · 0 = 0` constraints), so not tracked.
pub(super) struct Untracked;

impl Marks for Untracked {
    #[inline(always)]
    fn mark(&mut self, _: usize) {}
}

struct Flat<'a> {
    input: &'a [Fr],
    aux: &'a [Fr],
}

impl Values for Flat<'_> {
    #[inline(always)]
    fn input(&self, i: usize) -> Fr {
        self.input[i]
    }
    #[inline(always)]
    fn aux(&self, i: usize) -> Fr {
        self.aux[i]
    }
}

/// Evaluates one linear combination and marks the variables whose (merged) coefficient is nonzero.
/// A zero coefficient contributes nothing and marks nothing, exactly as bellperson's
/// `eval_with_trackers`.
#[inline]
pub(super) fn eval(
    lc: &LinearCombination<Fr>,
    values: &impl Values,
    input_marks: &mut impl Marks,
    aux_marks: &mut impl Marks,
) -> Fr {
    let mut acc = Fr::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if coeff.is_zero_vartime() {
            continue;
        }
        acc += term(values.input(i), coeff);
        input_marks.mark(i);
    }
    for (&i, coeff) in lc.iter_aux() {
        if coeff.is_zero_vartime() {
            continue;
        }
        acc += term(values.aux(i), coeff);
        aux_marks.mark(i);
    }
    acc
}

/// value · coeff, skipping the multiplication for the 0/1 values and unit coefficients that make up
/// most of a Filecoin circuit (SHA-256 bits, boolean constraints).
#[inline(always)]
pub(super) fn term(value: Fr, coeff: &Fr) -> Fr {
    if value.is_zero_vartime() {
        Fr::ZERO
    } else if *coeff == Fr::ONE {
        value
    } else if value == Fr::ONE {
        *coeff
    } else {
        value * coeff
    }
}

impl ConstraintSystem<Fr> for WitnessCs {
    type Root = Self;

    fn new() -> Self {
        WitnessCs(Witness::default(), None)
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let w = &mut self.0;
        w.aux.push(f()?);
        w.a_aux_density.push(false);
        w.b_aux_density.push(false);
        Ok(Variable::new_unchecked(Index::Aux(w.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let w = &mut self.0;
        w.input.push(f()?);
        w.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(w.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        if let Some(skipped) = &mut self.1 {
            *skipped += 1;
            return;
        }
        let w = &mut self.0;
        let values = Flat { input: &w.input, aux: &w.aux };
        // C is not built at all: see `Witness::a`.
        let av = eval(&a(LinearCombination::zero()), &values, &mut Untracked, &mut w.a_aux_density);
        let bv = eval(&b(LinearCombination::zero()), &values, &mut w.b_input_density, &mut w.b_aux_density);
        w.a.push(av);
        w.b.push(bv);
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

    fn is_extensible() -> bool {
        true
    }

    /// True while a precompiled record stands in for A and B: nothing reads a linear combination
    /// here then, and the gadgets snarkd patches (vendor/bellperson: `UInt32::addmany` and
    /// `MultiEq`, most of SHA-256's work) skip building theirs. The variables, their values and
    /// the number of constraints are the same either way.
    fn is_witness_generator(&self) -> bool {
        self.1.is_some()
    }

    /// Appends a constraint system synthesized separately (FallbackPoSt synthesizes sector chunks
    /// in parallel). `other` began with its own temporary ONE at input 0, which is dropped and
    /// merged into ours; its other inputs and all its aux variables follow ours, so the density bits
    /// append in order. The a/b values were already evaluated against `other`'s own indices and
    /// need no renumbering.
    fn extend(&mut self, other: &Self) {
        let (w, o) = (&mut self.0, &other.0);
        match &mut self.1 {
            // `other` was made by `new`, so it evaluated its A and B; the record refills them
            Some(skipped) => *skipped += other.1.unwrap_or(o.a.len()),
            None => {
                w.a.extend_from_slice(&o.a);
                w.b.extend_from_slice(&o.b);
            }
        }
        w.aux.extend_from_slice(&o.aux);
        w.a_aux_density.extend(&o.a_aux_density);
        w.b_aux_density.extend(&o.b_aux_density);
        if w.input.is_empty() {
            w.input.extend_from_slice(&o.input);
            w.b_input_density = o.b_input_density.clone();
            return;
        }
        if o.input.is_empty() {
            return;
        }
        w.input.extend_from_slice(&o.input[1..]);
        w.b_input_density.extend_sharing(&o.b_input_density, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x · y = z with x, z public, plus a boolean and a zero-coefficient term.
    struct Tiny;

    impl Circuit<Fr> for Tiny {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Fr::from(3u64)))?;
            let y = cs.alloc(|| "y", || Ok(Fr::from(5u64)))?;
            let z = cs.alloc_input(|| "z", || Ok(Fr::from(15u64)))?;
            let bit = cs.alloc(|| "bit", || Ok(Fr::ONE))?;
            cs.enforce(|| "mul", |lc| lc + x, |lc| lc + y, |lc| lc + z);
            // bit · (1 − bit) = 0, with a term on y whose coefficients cancel to zero
            cs.enforce(|| "bool", |lc| lc + bit + y - y, |lc| lc + CS::one() - bit, |lc| lc);
            Ok(())
        }
    }

    #[test]
    fn records_values_and_densities_as_bellperson() {
        let w = synthesize(Tiny).unwrap();
        assert_eq!(w.input, vec![Fr::ONE, Fr::from(3u64), Fr::from(15u64)]);
        assert_eq!(w.aux, vec![Fr::from(5u64), Fr::ONE]);
        // two circuit constraints, then one per input
        assert_eq!(
            w.a,
            vec![Fr::from(3u64), Fr::ONE, Fr::ONE, Fr::from(3u64), Fr::from(15u64)]
        );
        assert_eq!(w.b, vec![Fr::from(5u64), Fr::ZERO, Fr::ZERO, Fr::ZERO, Fr::ZERO]);
        // C's evaluations, which the provers form as a∘b: the circuit's z, then zeros
        let c: Vec<Fr> = w.a.iter().zip(&w.b).map(|(a, b)| *a * b).collect();
        assert_eq!(c, vec![Fr::from(15u64), Fr::ZERO, Fr::ZERO, Fr::ZERO, Fr::ZERO]);
        // y's coefficient in the second A merged to zero: only `bit` is marked there
        assert!(!w.a_aux_density.get(0) && w.a_aux_density.get(1));
        assert!(w.b_aux_density.get(0) && w.b_aux_density.get(1));
        assert!(w.b_input_density.get(0) && !w.b_input_density.get(1) && !w.b_input_density.get(2));
    }

    #[test]
    fn extend_equals_sequential_synthesis() {
        // The same sub-circuit twice: once straight into one system, once as two extensions.
        let sub = |cs: &mut WitnessCs, k: u64| {
            let i = cs.alloc_input(|| "in", || Ok(Fr::from(k))).unwrap();
            let a = cs.alloc(|| "a", || Ok(Fr::from(k + 1))).unwrap();
            cs.enforce(|| "c", |lc| lc + a, |lc| lc + WitnessCs::one() + i, |lc| lc + a + a);
        };
        let mut seq = WitnessCs::new();
        seq.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
        sub(&mut seq, 2);
        sub(&mut seq, 7);

        let mut ext = WitnessCs::new();
        ext.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
        for k in [2, 7] {
            let mut part = WitnessCs::new();
            part.alloc_input(|| "temp one", || Ok(Fr::ONE)).unwrap();
            sub(&mut part, k);
            ext.extend(&part);
        }
        let (s, e) = (seq.0, ext.0);
        assert_eq!((s.a, s.b), (e.a, e.b));
        assert_eq!((s.input, s.aux), (e.input, e.aux));
        assert_eq!(s.a_aux_density, e.a_aux_density);
        assert_eq!(s.b_input_density, e.b_input_density);
        assert_eq!(s.b_aux_density, e.b_aux_density);
    }
}
