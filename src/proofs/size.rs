//! How big each circuit is, for the memory budget: synthesizing a blank 32 GiB circuit just to
//! count it would take minutes, so the counts are measured once (with [`Counter`]) and kept here.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;

use super::{CircuitSize, ProofKind};

/// The size of `kind`'s circuit at `sector_size`. The 2 KiB rows are exact (the test
/// `circuit_sizes_match_table` re-measures them); the 32/64 GiB constraint counts are measured,
/// their aux counts scaled by the 2 KiB aux/constraint ratio of the same kind. 8 MiB and 512 MiB
/// reuse the 2 KiB row: the same challenge counts with slightly deeper trees.
pub fn circuit_size(kind: ProofKind, sector_size: u64) -> CircuitSize {
    let small = sector_size <= 512 << 20;
    let (constraints, aux, inputs) = match kind {
        ProofKind::PorepC2 if small => (2_687_921, 2_687_921, 1),
        ProofKind::PorepC2 => (130_278_541, 130_278_541, 1),
        ProofKind::SnapDeals if small => (1_705_039, 1_705_039, 1),
        ProofKind::SnapDeals => (81_049_499, 81_049_499, 1),
        ProofKind::WindowPost if small => (21_866, 21_866, 1),
        ProofKind::WindowPost => (129_887_900, 129_887_900, 1),
        ProofKind::WinningPost if small => (90_750, 90_750, 1),
        ProofKind::WinningPost => (370_590, 370_590, 1),
    };
    CircuitSize { constraints, aux, inputs }
}

/// Counts a circuit's variables and constraints without evaluating any assignment.
pub(crate) struct Counter {
    size: CircuitSize,
}

impl Counter {
    pub(crate) fn measure<C: Circuit<Fr>>(circuit: C) -> Result<CircuitSize, SynthesisError> {
        let mut cs = Counter { size: CircuitSize { constraints: 0, aux: 0, inputs: 1 } };
        circuit.synthesize(&mut cs)?;
        // bellperson adds one constraint per input, ONE included.
        cs.size.constraints += cs.size.inputs;
        Ok(cs.size)
    }
}

impl ConstraintSystem<Fr> for Counter {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.size.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.size.aux as usize - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.size.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.size.inputs as usize - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.size.constraints += 1;
    }

    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
