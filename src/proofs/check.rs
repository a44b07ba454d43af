//! A constraint system that evaluates a circuit and checks every constraint, so that a statement's
//! circuit and public inputs can be validated against real inputs without any parameters (a
//! PoRep or SnapDeals parameter file takes many minutes to make).

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

/// Runs `circuit` with its assignment and returns its public inputs (without ONE), or the path of
/// the first constraint that does not hold.
pub(crate) fn check<C: Circuit<Fr>>(circuit: C) -> Result<Vec<Fr>, String> {
    let mut cs = Checker { inputs: vec![Fr::ONE], aux: Vec::new(), path: Vec::new(), unsatisfied: None, count: 0 };
    circuit.synthesize(&mut cs).map_err(|e| format!("synthesis failed: {e}"))?;
    match cs.unsatisfied {
        Some(which) => Err(which),
        None => Ok(cs.inputs.split_off(1)),
    }
}

struct Checker {
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    path: Vec<String>,
    unsatisfied: Option<String>,
    count: usize,
}

impl Checker {
    fn eval(&self, lc: &LinearCombination<Fr>) -> Fr {
        lc.iter().fold(Fr::ZERO, |acc, (var, coeff)| {
            let value = match var.get_unchecked() {
                Index::Input(i) => self.inputs[i],
                Index::Aux(i) => self.aux[i],
            };
            acc + value * coeff
        })
    }
}

impl ConstraintSystem<Fr> for Checker {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.count += 1;
        if self.unsatisfied.is_some() {
            return;
        }
        let a = self.eval(&a(LinearCombination::zero()));
        let b = self.eval(&b(LinearCombination::zero()));
        let c = self.eval(&c(LinearCombination::zero()));
        if a * b != c {
            let mut path = self.path.join("/");
            path.push('/');
            path.push_str(&annotation().into());
            self.unsatisfied = Some(format!("constraint {} ({path}) is not satisfied", self.count - 1));
        }
    }

    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, name: N) {
        self.path.push(name().into());
    }
    fn pop_namespace(&mut self) {
        self.path.pop();
    }
    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x·x = y with x private and y public.
    struct Square {
        x: u64,
        y: u64,
    }

    impl Circuit<Fr> for Square {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Fr::from(self.x)))?;
            let y = cs.alloc_input(|| "y", || Ok(Fr::from(self.y)))?;
            cs.enforce(|| "square", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }

    #[test]
    fn returns_inputs_or_the_broken_constraint() {
        assert_eq!(check(Square { x: 3, y: 9 }), Ok(vec![Fr::from(9)]));
        assert_eq!(check(Square { x: 3, y: 8 }), Err("constraint 0 (/square) is not satisfied".to_string()));
    }
}
