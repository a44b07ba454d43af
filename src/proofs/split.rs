//! Each kind's partition synthesized in parallel: the circuit's prefix runs once, then its repeated
//! parts run at once in forks ([`WitnessCs::fork_map`]), in exactly bellperson's variable order
//! (the parameters depend on it), so the witness equals the sequential one byte for byte.
//!
//! storage-proofs 19.1 gives no way to run only a circuit's prefix, so each prefix below restates
//! the library's code (cited by file and line) with the same allocations, inputs and constraints
//! in the same order; the repeated parts call the library where it is public. The tests compare
//! every kind's parallel witness with the sequential one and prove from it.
//!
//! - PoRep: one fork per challenge (18 of 7.2M constraints in a 32 GiB partition) after the
//!   replica id, commitments and `comm_r = H(comm_c ‖ comm_r_last)` (about 600 constraints).
//! - WindowPoSt/WinningPoSt: one fork per sector slot, nothing before them: 2349 in a 32 GiB
//!   WindowPoSt partition, 66 in WinningPoSt (its one sector, once per challenge).
//! - SnapDeals: each row of the apex tree forked per hash (127 hashes, 5.8M constraints), then
//!   one fork per challenge (86 of about 0.87M constraints in a 32 GiB partition). What stays
//!   sequential (public inputs, the partition path, the challenges' bits) is about 0.2%.
//!
//! A circuit's precompiled record is made the same way, a challenge (PoRep, SnapDeals) or a
//! sector (PoSt) at a time in parallel ([`Precompiled::record_forked`]), and SnapDeals' apex tree
//! a row at a time ([`Recorder::fork_map`]); the rest of the prefix is recorded in place.
//!
//! [`Recorder::fork_map`]: crate::groth16::precompiled::Recorder::fork_map

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::multipack::pack_bits;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::VanillaSealProof;
use neptune::circuit::poseidon_hash;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::insertion::select;
use storage_proofs_core::gadgets::por::por_no_challenge_input;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{self, StackedCircuit};
use storage_proofs_post::fallback::FallbackPoStCircuit;
use storage_proofs_update::circuit::{ChallengeProof, PrivateInputs, PublicInputs};
use storage_proofs_update::constants::{
    hs, validate_tree_r_shape, TreeD, TreeDHasher, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS,
};
use storage_proofs_update::{EmptySectorUpdateCircuit, PublicParams};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::{built, recorded};
use crate::error::{ErrorCode, SnarkError};
use crate::groth16::{synthesize_with, ForkError, ItemShape, Precompiled, Witness, WitnessCs};
use crate::srs::CircuitId;

type PorepInputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain,
    <DefaultPieceHasher as Hasher>::Domain,
>;

/// The shape of one stage's items in `circuit`, kept for the life of the process so that each is
/// counted once (a few stages of each circuit this daemon proves).
fn item_shape(circuit: &CircuitId, stage: &'static str) -> Arc<ItemShape> {
    static SHAPES: Mutex<BTreeMap<(CircuitId, &'static str), Arc<ItemShape>>> = Mutex::new(BTreeMap::new());
    let mut shapes = SHAPES.lock().unwrap_or_else(PoisonError::into_inner);
    shapes.entry((circuit.clone(), stage)).or_default().clone()
}

fn synthesized(partition: usize, witness: Result<Witness, ForkError>) -> Result<Witness, SnarkError> {
    witness.map_err(|e| match e {
        ForkError::Stopped { .. } => SnarkError::new(ErrorCode::Cancelled, format!("partition {partition}: synthesis {e}")),
        e => SnarkError::internal(format!("partition {partition}: parallel synthesis failed: {e}")),
    })
}

/// PoRep: `StackedCircuit`'s synthesis (storage-proofs-porep src/stacked/circuit/proof.rs lines
/// 87–172) with the challenge loop (lines 161–169) forked, on the values `StackedCompound::circuit`
/// (lines 285–318) gives it.
pub(super) fn porep<Tree: 'static + MerkleTreeTrait>(
    partition: usize,
    id: &CircuitId,
    pub_inputs: &PorepInputs<Tree>,
    vanilla: &[VanillaSealProof<Tree>],
) -> Result<Witness, SnarkError> {
    let values = porep_values(partition, pub_inputs, vanilla)?;
    let shape = item_shape(id, "challenge");
    let proofs = challenge_circuits(StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<&mut WitnessCs>, vanilla);
    synthesized(
        partition,
        synthesize_with(|cs| {
            let p = porep_prefix::<Tree, _>(cs, &values)?;
            // lines 161–169, one fork per challenge
            cs.fork_map(proofs, &shape, |cs, proof| proof.synthesize(cs, &p.comm_d, &p.comm_c, &p.comm_r_last, &p.replica_id_bits))?;
            Ok(())
        }),
    )
}

/// PoRep recorded for precompiled synthesis a challenge at a time in parallel
/// ([`Precompiled::record_forked`]): a 32 GiB partition's record took 78–91 s on one thread.
/// The same record as the sequential one (tested).
pub(super) fn record_porep<Tree: 'static + MerkleTreeTrait>(
    partition: usize,
    pub_inputs: &PorepInputs<Tree>,
    vanilla: &[VanillaSealProof<Tree>],
) -> Result<Precompiled, SnarkError> {
    let values = porep_values(partition, pub_inputs, vanilla)?;
    let proofs = challenge_circuits(StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<&mut WitnessCs>, vanilla);
    recorded(
        partition,
        Precompiled::record_forked(|cs| Ok((porep_prefix::<Tree, _>(cs, &values)?, proofs)), |cs, p, proof| {
            proof.synthesize(cs, &p.comm_d, &p.comm_c, &p.comm_r_last, &p.replica_id_bits)
        }),
    )
}

/// The values `StackedCompound::circuit` (lines 285–318) gives the prefix: replica id, comm_d,
/// comm_r, comm_r_last and comm_c.
fn porep_values<Tree: 'static + MerkleTreeTrait>(
    partition: usize,
    pub_inputs: &PorepInputs<Tree>,
    vanilla: &[VanillaSealProof<Tree>],
) -> Result<[Fr; 5], SnarkError> {
    let roots = || {
        let first = vanilla.first().ok_or_else(|| anyhow::anyhow!("no vanilla proofs"))?;
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        anyhow::ensure!(
            vanilla.iter().all(|p| p.comm_r_last() == comm_r_last && p.comm_c() == comm_c),
            "inconsistent comm_r_last or comm_c across the challenge proofs"
        );
        let tau = pub_inputs.tau.as_ref().ok_or_else(|| anyhow::anyhow!("missing tau"))?;
        Ok((tau.comm_d.into(), tau.comm_r.into(), comm_r_last.into(), comm_c.into()))
    };
    let (comm_d, comm_r, comm_r_last, comm_c): (Fr, Fr, Fr, Fr) = built(partition, roots())?;
    Ok([pub_inputs.replica_id.into(), comm_d, comm_r, comm_r_last, comm_c])
}

/// What PoRep's challenges read of the prefix.
struct PorepPrefix {
    comm_d: AllocatedNum<Fr>,
    comm_c: AllocatedNum<Fr>,
    comm_r_last: AllocatedNum<Fr>,
    replica_id_bits: Vec<Boolean>,
}

/// `StackedCircuit::synthesize`'s lines 97–159, before its challenge loop, on any constraint
/// system (the witness's, or the record's).
fn porep_prefix<Tree: MerkleTreeTrait, CS: ConstraintSystem<Fr>>(cs: &mut CS, values: &[Fr; 5]) -> Result<PorepPrefix, SynthesisError> {
    let [replica_id, comm_d, comm_r, comm_r_last, comm_c] = *values;
    // lines 97–142
    let replica_id_num = AllocatedNum::alloc(cs.namespace(|| "replica_id"), || Ok(replica_id))?;
    replica_id_num.inputize(cs.namespace(|| "replica_id_input"))?;
    let replica_id_bits = reverse_bit_numbering(replica_id_num.to_bits_le(cs.namespace(|| "replica_id_bits"))?);
    let comm_d_num = AllocatedNum::alloc(cs.namespace(|| "comm_d"), || Ok(comm_d))?;
    comm_d_num.inputize(cs.namespace(|| "comm_d_input"))?;
    let comm_r_num = AllocatedNum::alloc(cs.namespace(|| "comm_r"), || Ok(comm_r))?;
    comm_r_num.inputize(cs.namespace(|| "comm_r_input"))?;
    let comm_r_last_num = AllocatedNum::alloc(cs.namespace(|| "comm_r_last"), || Ok(comm_r_last))?;
    let comm_c_num = AllocatedNum::alloc(cs.namespace(|| "comm_c"), || Ok(comm_c))?;
    // lines 145–159
    let hash_num = <Tree::Hasher as Hasher>::Function::hash2_circuit(
        cs.namespace(|| "H_comm_c_comm_r_last"),
        &comm_c_num,
        &comm_r_last_num,
    )?;
    constraint::equal(cs, || "enforce comm_r = H(comm_c || comm_r_last)", &comm_r_num, &hash_num);
    Ok(PorepPrefix { comm_d: comm_d_num, comm_c: comm_c_num, comm_r_last: comm_r_last_num, replica_id_bits })
}

/// The circuit's per-challenge proofs. Their type (`stacked::circuit::params::Proof`) is public but
/// lives in a private module, so it is named through the signature of `StackedCircuit::synthesize`,
/// which takes a `Vec` of them; the conversion is the one `StackedCompound::circuit` uses (line 316).
#[allow(clippy::type_complexity)]
fn challenge_circuits<S, A, B, C, D, E, P, V: Clone + Into<P>>(
    _synthesize: fn(S, A, B, C, D, E, Vec<P>) -> Result<(), SynthesisError>,
    vanilla: &[V],
) -> Vec<P> {
    vanilla.iter().cloned().map(Into::into).collect()
}

/// WindowPoSt and WinningPoSt: `FallbackPoStCircuit`'s sectors in order (storage-proofs-post
/// src/fallback/circuit.rs lines 198–209), one fork per sector. (The library's own parallel path,
/// lines 211–240, holds every chunk's witness until it copies them into the main one.)
pub(super) fn post<Tree: 'static + MerkleTreeTrait>(
    partition: usize,
    id: &CircuitId,
    circuit: anyhow::Result<FallbackPoStCircuit<Tree>>,
) -> Result<Witness, SnarkError> {
    let circuit = built(partition, circuit)?;
    let shape = item_shape(id, "sector");
    synthesized(
        partition,
        synthesize_with(|cs| {
            cs.fork_map(circuit.sectors.iter().collect(), &shape, |cs, sector| sector.synthesize(cs))?;
            Ok(())
        }),
    )
}

/// WindowPoSt and WinningPoSt recorded for precompiled synthesis a sector at a time in parallel
/// ([`Precompiled::record_parts`]): a 32 GiB WindowPoSt partition's record took over six minutes
/// on one thread. The same record as the sequential one (tested).
pub(super) fn record_post<Tree: 'static + MerkleTreeTrait>(
    partition: usize,
    circuit: anyhow::Result<FallbackPoStCircuit<Tree>>,
) -> Result<Precompiled, SnarkError> {
    let circuit = built(partition, circuit)?;
    recorded(partition, Precompiled::record_parts(circuit.sectors.iter().collect(), |cs, sector| sector.synthesize(cs)))
}

/// A SnapDeals partition's circuit, checked for its sector size (the shape checks of
/// storage-proofs-update src/circuit.rs lines 370–415, as errors; their checks of
/// `k_and_h_select`'s bits are left out: `PublicInputs::new` built it from a validated partition
/// index and `h`), with what its prefix reads worked out once.
struct Update<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>> {
    circuit: EmptySectorUpdateCircuit<TreeR>,
    hs: [usize; 6],
    /// The path from the apex root to comm_d_new, one sibling a row (every challenge's ends with it).
    partition_path: Vec<Option<Fr>>,
}

fn update<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    partition: usize,
    circuit: anyhow::Result<EmptySectorUpdateCircuit<TreeR>>,
) -> Result<Update<TreeR>, SnarkError> {
    let circuit = built(partition, circuit)?;
    let (p, proofs) = (&circuit.pub_params, &circuit.priv_inputs.challenge_proofs);
    validate_tree_r_shape::<TreeR>(p.sector_nodes);
    let at = p.challenge_bit_len - p.partition_bit_len;
    let partition_path = proofs.first().map(|first| &first.path_d_new[at..]);
    let shape_ok = circuit.priv_inputs.apex_leafs.len() == p.apex_leaf_count
        && proofs.len() == p.challenge_count
        && partition_path.is_some_and(|path| {
            path.iter().all(|siblings| siblings.len() == 1) && proofs.iter().all(|proof| proof.path_d_new[at..] == *path)
        });
    let (true, Some(partition_path)) = (shape_ok, partition_path) else {
        return Err(SnarkError::internal(format!(
            "partition {partition}: the update circuit is not shaped for its sector size"
        )));
    };
    let partition_path = partition_path.iter().map(|siblings| siblings[0]).collect();
    Ok(Update { hs: hs(p.sector_nodes), partition_path, circuit })
}

/// One challenge of the loop at lines 582–742: its index, its bits below the partition's, its proof.
type Challenge<'c, TreeR> = (usize, Vec<AllocatedBit>, &'c ChallengeProof<TreeR>);

/// SnapDeals: `EmptySectorUpdateCircuit`'s synthesis (storage-proofs-update src/circuit.rs lines
/// 341–745) with the apex tree's rows and the challenge loop (lines 582–742) forked. The library's
/// gadgets are crate-private, so those used here are restated below from src/gadgets.rs.
pub(super) fn snap<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    partition: usize,
    id: &CircuitId,
    circuit: anyhow::Result<EmptySectorUpdateCircuit<TreeR>>,
) -> Result<Witness, SnarkError> {
    let u = update(partition, circuit)?;
    let (apex_shape, challenge_shape) = (item_shape(id, "apex hash"), item_shape(id, "challenge"));
    synthesized(
        partition,
        synthesize_with(|cs| {
            let (shared, challenges) =
                update_prefix(cs, &u, |cs, pairs| cs.fork_map(pairs, &apex_shape, |cs, pair| apex_hash(cs, pair)))?;
            cs.fork_map(challenges, &challenge_shape, |cs, challenge| update_challenge(cs, challenge, &shared, &u))?;
            Ok(())
        }),
    )
}

/// SnapDeals recorded for precompiled synthesis a challenge at a time in parallel
/// ([`Precompiled::record_forked`]), the apex tree (7 % of the circuit) before them a row at a
/// time ([`Recorder::fork_map`]): a 32 GiB partition's record took 58 s on one thread, 36.5 s
/// with the apex in place on the 2-core build machine. The same record as the sequential one
/// (tested).
///
/// [`Recorder::fork_map`]: crate::groth16::precompiled::Recorder::fork_map
pub(super) fn record_snap<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    partition: usize,
    circuit: anyhow::Result<EmptySectorUpdateCircuit<TreeR>>,
) -> Result<Precompiled, SnarkError> {
    let u = update(partition, circuit)?;
    recorded(
        partition,
        Precompiled::record_forked(
            |cs| update_prefix(cs, &u, |cs, pairs| cs.fork_map(pairs, apex_hash)),
            |cs, shared, challenge| update_challenge(cs, challenge, shared, &u),
        ),
    )
}

/// Lines 420–580, everything before the challenge loop: the public inputs, phi, the roots'
/// checks, the apex tree (each row hashed by `row`, forked in a synthesis and in a record)
/// and the challenges' bits. Returns what the challenges read, and the challenges.
fn update_prefix<'u, CS, E, TreeR>(
    cs: &mut CS,
    u: &'u Update<TreeR>,
    row: impl FnMut(&mut CS, Vec<&[AllocatedNum<Fr>]>) -> Result<Vec<AllocatedNum<Fr>>, E>,
) -> Result<(Shared, Vec<Challenge<'u, TreeR>>), E>
where
    CS: ConstraintSystem<Fr>,
    E: From<SynthesisError>,
    TreeR: MerkleTreeTrait<Hasher = TreeRHasher>,
{
    let EmptySectorUpdateCircuit {
        pub_params: PublicParams { challenge_count, challenge_bit_len, partition_bit_len, .. },
        pub_inputs: PublicInputs { k_and_h_select, comm_r_old, comm_d_new, comm_r_new },
        priv_inputs: PrivateInputs { comm_c, root_r_old, root_r_new, apex_leafs, challenge_proofs },
    } = &u.circuit;

    // lines 420–474
    let k_and_h_select =
        AllocatedNum::alloc(cs.namespace(|| "k_and_h_select"), || k_and_h_select.ok_or(SynthesisError::AssignmentMissing))?;
    k_and_h_select.inputize(cs.namespace(|| "k_and_h_select (public input)"))?;
    let k_and_h_select_bits = {
        let bit_len = partition_bit_len + u.hs.len();
        let bits: Vec<Option<bool>> = match k_and_h_select.get_value() {
            Some(value) => value.to_le_bits().into_iter().take(bit_len).map(Some).collect(),
            None => vec![None; bit_len],
        };
        let bits = bits
            .into_iter()
            .enumerate()
            .map(|(i, bit)| AllocatedBit::alloc(cs.namespace(|| format!("k_and_h_select_bit_{i}")), bit))
            .collect::<Result<Vec<AllocatedBit>, SynthesisError>>()?;
        enforce_binary_decomp(cs, "k_and_h_select binary decomp", &bits, &k_and_h_select);
        bits
    };
    let partition_bits = k_and_h_select_bits[..*partition_bit_len].to_vec();
    let h_select_bits = k_and_h_select_bits[*partition_bit_len..].to_vec();
    let partition_num = pack_bits(
        cs.namespace(|| "pack partition bits"),
        &partition_bits.iter().cloned().map(Into::into).collect::<Vec<Boolean>>(),
    )?;

    // lines 476–496
    let mut public = |name: &'static str, value: &Option<Fr>| -> Result<AllocatedNum<Fr>, SynthesisError> {
        let num = AllocatedNum::alloc(cs.namespace(|| name), || value.ok_or(SynthesisError::AssignmentMissing))?;
        num.inputize(cs.namespace(|| format!("{name}_input")))?;
        Ok(num)
    };
    let comm_r_old = public("comm_r_old", comm_r_old)?;
    let comm_d_new = public("comm_d_new", comm_d_new)?;
    let comm_r_new = public("comm_r_new", comm_r_new)?;
    let phi = poseidon_hash(
        cs.namespace(|| "phi"),
        vec![comm_d_new.clone(), comm_r_old.clone()],
        &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;

    // lines 500–532
    let mut private = |name: String, value: &Option<Fr>| {
        AllocatedNum::alloc(cs.namespace(|| name), || value.ok_or(SynthesisError::AssignmentMissing))
    };
    let comm_c = private("comm_c".into(), comm_c)?;
    let root_r_old = private("root_r_old".into(), root_r_old)?;
    let root_r_new = private("root_r_new".into(), root_r_new)?;
    let apex_leafs = (apex_leafs.iter().enumerate())
        .map(|(i, leaf)| private(format!("apex_leaf_{i}"), leaf))
        .collect::<Result<Vec<AllocatedNum<Fr>>, SynthesisError>>()?;
    let partition_path = (u.partition_path.iter().enumerate())
        .map(|(i, sibling)| private(format!("partition_path_sibling_{i}"), sibling).map(|sibling| vec![sibling]))
        .collect::<Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError>>()?;

    // lines 536–557
    for (name, root, comm_r) in [("comm_r_old", &root_r_old, &comm_r_old), ("comm_r_new", &root_r_new, &comm_r_new)] {
        let calc = <TreeRHasher as Hasher>::Function::hash2_circuit(cs.namespace(|| format!("{name}_calc")), &comm_c, root)?;
        cs.enforce(
            || format!("enforce {name}_calc == {name}"),
            |lc| lc + calc.get_variable(),
            |lc| lc + CS::one(),
            |lc| lc + comm_r.get_variable(),
        );
    }

    // lines 560–580
    apex_por(cs, apex_leafs.clone(), partition_bits.clone(), partition_path, comm_d_new, row)?;
    let generated_bits = gen_challenge_bits(
        cs.namespace(|| "gen_challenge_bits"),
        &comm_r_new,
        &partition_num,
        *challenge_count,
        challenge_bit_len - partition_bit_len,
    )?;
    let challenges = (generated_bits.into_iter().zip(challenge_proofs).enumerate())
        .map(|(c_index, (c_bits, proof))| (c_index, c_bits, proof))
        .collect();
    let shared = Shared { partition_bits, h_select_bits, hs: u.hs, phi, root_r_old, root_r_new, apex_leafs };
    Ok((shared, challenges))
}

/// What every SnapDeals challenge reads from the prefix.
struct Shared {
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    hs: [usize; 6],
    phi: AllocatedNum<Fr>,
    root_r_old: AllocatedNum<Fr>,
    root_r_new: AllocatedNum<Fr>,
    apex_leafs: Vec<AllocatedNum<Fr>>,
}

/// One SnapDeals challenge: the body of the loop at lines 582–742.
fn update_challenge<CS: ConstraintSystem<Fr>, TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut CS,
    (c_index, c_bits_without_partition, challenge_proof): Challenge<'_, TreeR>,
    s: &Shared,
    u: &Update<TreeR>,
) -> Result<(), SynthesisError> {
    let PublicParams { challenge_bit_len, partition_bit_len, apex_leaf_bit_len, .. } = u.circuit.pub_params;
    let c_bits: Vec<AllocatedBit> = c_bits_without_partition.iter().chain(s.partition_bits.iter()).cloned().collect();

    let c_high = get_challenge_high_bits(
        cs.namespace(|| format!("get_challenge_high_bits (c_index={c_index})")),
        &c_bits,
        &s.h_select_bits,
        &s.hs,
    )?;
    let rho = poseidon_hash(
        cs.namespace(|| format!("rho (c_index={c_index})")),
        vec![s.phi.clone(), c_high.clone()],
        &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;

    let leaf_r_old = AllocatedNum::alloc(cs.namespace(|| format!("leaf_r_old (c_index={c_index})")), || {
        challenge_proof.leaf_r_old.ok_or(SynthesisError::AssignmentMissing)
    })?;
    let leaf_d_new = AllocatedNum::alloc(cs.namespace(|| format!("leaf_d_new (c_index={c_index})")), || {
        challenge_proof.leaf_d_new.ok_or(SynthesisError::AssignmentMissing)
    })?;
    let leaf_r_new =
        label_r_new(cs.namespace(|| format!("leaf_r_new (c_index={c_index})")), &leaf_r_old, &leaf_d_new, &rho)?;
    // The library asserts this (line 631); a vanilla proof that disagrees cannot be satisfied.
    if leaf_r_new.get_value().is_some_and(|v| Some(v) != challenge_proof.leaf_r_new) {
        return Err(SynthesisError::Unsatisfiable);
    }

    let alloc_path = |cs: &mut CS, tree: &str, path: &[Vec<Option<Fr>>]| {
        path.iter()
            .enumerate()
            .map(|(tree_row, siblings)| {
                siblings
                    .iter()
                    .enumerate()
                    .map(|(sibling_index, sibling)| {
                        AllocatedNum::alloc(
                            cs.namespace(|| {
                                format!(
                                    "{tree} sibling (c_index={c_index}, tree_row={tree_row}, sibling_index={sibling_index})"
                                )
                            }),
                            || sibling.ok_or(SynthesisError::AssignmentMissing),
                        )
                    })
                    .collect::<Result<Vec<AllocatedNum<Fr>>, SynthesisError>>()
            })
            .collect::<Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError>>()
    };
    let path_r_old = alloc_path(cs, "path_r_old", &challenge_proof.path_r_old)?;
    por_no_challenge_input::<TreeR, _>(
        cs.namespace(|| format!("por tree_r_old (c_index={c_index})")),
        c_bits.clone(),
        leaf_r_old,
        path_r_old,
        s.root_r_old.clone(),
    )?;
    let path_r_new = alloc_path(cs, "path_r_new", &challenge_proof.path_r_new)?;
    por_no_challenge_input::<TreeR, _>(
        cs.namespace(|| format!("por tree_r_new (c_index={c_index})")),
        c_bits.clone(),
        leaf_r_new,
        path_r_new,
        s.root_r_new.clone(),
    )?;

    let path_len_to_apex_leaf = challenge_bit_len - partition_bit_len - apex_leaf_bit_len;
    let apex_leaf_bits: Vec<Boolean> = c_bits[path_len_to_apex_leaf..path_len_to_apex_leaf + apex_leaf_bit_len]
        .iter()
        .cloned()
        .map(Into::into)
        .collect();
    let apex_leaf =
        select(cs.namespace(|| format!("select_apex_leaf (c_index={c_index})")), &s.apex_leafs, &apex_leaf_bits)?;
    let c_bits_to_apex_leaf: Vec<AllocatedBit> = c_bits.into_iter().take(path_len_to_apex_leaf).collect();
    let path_to_apex_leaf = challenge_proof
        .path_d_new
        .iter()
        .take(path_len_to_apex_leaf)
        .enumerate()
        .map(|(tree_row, siblings)| {
            AllocatedNum::alloc(
                cs.namespace(|| format!("path_to_apex_leaf sibling (c_index={c_index}, tree_row={tree_row})")),
                || siblings[0].ok_or(SynthesisError::AssignmentMissing),
            )
            .map(|sibling| vec![sibling])
        })
        .collect::<Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError>>()?;
    por_no_challenge_input::<TreeD, _>(
        cs.namespace(|| format!("por to_apex_leaf (c_index={c_index})")),
        c_bits_to_apex_leaf,
        leaf_d_new,
        path_to_apex_leaf,
        apex_leaf,
    )
}

/// gadgets.rs lines 46–89, the apex tree built a row at a time by `row`.
fn apex_por<CS: ConstraintSystem<Fr>, E: From<SynthesisError>>(
    cs: &mut CS,
    apex_leafs: Vec<AllocatedNum<Fr>>,
    partition_bits: Vec<AllocatedBit>,
    partition_path: Vec<Vec<AllocatedNum<Fr>>>,
    comm_d: AllocatedNum<Fr>,
    mut row: impl FnMut(&mut CS, Vec<&[AllocatedNum<Fr>]>) -> Result<Vec<AllocatedNum<Fr>>, E>,
) -> Result<(), E> {
    let mut level = apex_leafs;
    for _ in 0..level.len().trailing_zeros() {
        level = row(cs, level.chunks(2).collect())?;
    }
    let apex_root = level.swap_remove(0);
    Ok(por_no_challenge_input::<TreeD, _>(
        cs.namespace(|| "partition-tree por"),
        partition_bits,
        apex_root,
        partition_path,
        comm_d,
    )?)
}

/// One hash of the apex tree (gadgets.rs line 64).
fn apex_hash<CS: ConstraintSystem<Fr>>(cs: &mut CS, siblings: &[AllocatedNum<Fr>]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    <TreeDHasher as Hasher>::Function::hash2_circuit(cs.namespace(|| "apex_tree generation hash"), &siblings[0], &siblings[1])
}

/// gadgets.rs lines 92–159.
fn gen_challenge_bits<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    comm_r_new: &AllocatedNum<Fr>,
    partition: &AllocatedNum<Fr>,
    challenges: usize,
    bits_per_challenge: usize,
) -> Result<Vec<Vec<AllocatedBit>>, SynthesisError> {
    let challenges_per_digest = Fr::CAPACITY as usize / bits_per_challenge;
    let digests_per_partition = (challenges as f32 / challenges_per_digest as f32).ceil() as u64;
    let mut generated_bits = Vec::with_capacity(challenges);
    for j in 0..digests_per_partition {
        let digest_index = AllocatedNum::alloc(cs.namespace(|| format!("digest_index_{j}")), || {
            let k = partition.get_value().ok_or(SynthesisError::AssignmentMissing)?;
            Ok(k * Fr::from(digests_per_partition) + Fr::from(j))
        })?;
        cs.enforce(
            || format!("digest_index_{j} == k * digests_per_partition + {j}"),
            |lc| lc + (Fr::from(digests_per_partition), partition.get_variable()) + (Fr::from(j), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + digest_index.get_variable(),
        );
        let digest = poseidon_hash(
            cs.namespace(|| format!("digest_{j}")),
            vec![comm_r_new.clone(), digest_index.clone()],
            &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;
        let digest_bits = allocated_num_to_allocated_bits(cs.namespace(|| format!("digest_{j}_bits")), &digest)?;
        let challenges_to_take =
            if j == digests_per_partition - 1 { challenges - generated_bits.len() } else { challenges_per_digest };
        generated_bits.extend(digest_bits.chunks(bits_per_challenge).take(challenges_to_take).map(<[_]>::to_vec));
    }
    Ok(generated_bits)
}

/// gadgets.rs lines 18–40.
fn allocated_num_to_allocated_bits<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    num: &AllocatedNum<Fr>,
) -> Result<Vec<AllocatedBit>, SynthesisError> {
    let bits = field_into_allocated_bits_le(&mut cs, num.get_value())?;
    enforce_binary_decomp(&mut cs, "binary decomp", &bits, num);
    Ok(bits)
}

/// Enforces `num` = Σ 2^i · bits[i] (bits little-endian): the "binary decomp" constraint of
/// gadgets.rs' bit decomposition (lines 18–40) and of `k_and_h_select`'s (src/circuit.rs line 455).
fn enforce_binary_decomp<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    annotation: &'static str,
    bits: &[AllocatedBit],
    num: &AllocatedNum<Fr>,
) {
    let mut lc = LinearCombination::<Fr>::zero();
    let mut pow2 = Fr::ONE;
    for bit in bits {
        lc = lc + (pow2, bit.get_variable());
        pow2 = pow2.double();
    }
    cs.enforce(|| annotation, |_| lc, |lc| lc + CS::one(), |lc| lc + num.get_variable());
}

/// gadgets.rs lines 164–244.
fn get_challenge_high_bits<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    c_bits: &[AllocatedBit],
    h_select_bits: &[AllocatedBit],
    hs: &[usize],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let bit_len = c_bits.len();
    let c_bits: Vec<Boolean> = c_bits.iter().cloned().map(Into::into).collect();
    let c_high_and_zeros = hs
        .iter()
        .zip(h_select_bits.iter())
        .enumerate()
        .map(|(k, (h, h_select_bit))| {
            let c_high = pack_bits(cs.namespace(|| format!("c_high (h={h}, k={k})")), &c_bits[bit_len - h..])?;
            let c_high_or_zero =
                AllocatedNum::alloc(cs.namespace(|| format!("c_high_or_zero (h={h}, k={k})")), || {
                    if h_select_bit.get_value().ok_or(SynthesisError::AssignmentMissing)? {
                        c_high.get_value().ok_or(SynthesisError::AssignmentMissing)
                    } else {
                        Ok(Fr::ZERO)
                    }
                })?;
            cs.enforce(
                || format!("c_high_or_zero == c_high * h_select_bit (h={h}, k={k})"),
                |lc| lc + c_high.get_variable(),
                |lc| lc + h_select_bit.get_variable(),
                |lc| lc + c_high_or_zero.get_variable(),
            );
            Ok(c_high_or_zero)
        })
        .collect::<Result<Vec<AllocatedNum<Fr>>, SynthesisError>>()?;
    let c_high_selected = AllocatedNum::alloc(cs.namespace(|| "c_high_selected"), || {
        let mut sum = c_high_and_zeros[0].get_value().ok_or(SynthesisError::AssignmentMissing)?;
        for c_high_or_zero in &c_high_and_zeros[1..] {
            sum += c_high_or_zero.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        }
        Ok(sum)
    })?;
    cs.enforce(
        || "c_high_selected == dot(c_highs, h_select_bits)",
        |mut lc| {
            for c_high_or_zero in c_high_and_zeros.iter() {
                lc = lc + c_high_or_zero.get_variable();
            }
            lc
        },
        |lc| lc + CS::one(),
        |lc| lc + c_high_selected.get_variable(),
    );
    Ok(c_high_selected)
}

/// gadgets.rs lines 247–274.
fn label_r_new<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    label_r_old: &AllocatedNum<Fr>,
    label_d_new: &AllocatedNum<Fr>,
    rho: &AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let label_d_new_rho = label_d_new.mul(cs.namespace(|| "label_d_new * rho"), rho)?;
    let label_r_new = AllocatedNum::alloc(cs.namespace(|| "label_r_new"), || {
        let label_r_old = label_r_old.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        let label_d_new_rho = label_d_new_rho.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        Ok(label_r_old + label_d_new_rho)
    })?;
    cs.enforce(
        || "label_r_new == label_r_old + label_d_new * rho",
        |lc| lc + label_r_old.get_variable() + label_d_new_rho.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + label_r_new.get_variable(),
    );
    Ok(label_r_new)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use super::super::{prepare_any, ProofKind};
    use crate::groth16::{CpuBackend, Fill, ProvingBackend};
    use crate::srs::{load, PointCheck};
    use crate::tools::reference::verify_with_api;
    use crate::tools::testdata::Manifest;

    /// The 2 KiB test sector and the parameter directory holding its circuits' parameters
    /// (`$SNARKD_TEST_PARAMS`, default `/var/tmp/snarkd-test-params`).
    fn sector() -> &'static (PathBuf, Manifest) {
        static SECTOR: OnceLock<(PathBuf, Manifest)> = OnceLock::new();
        SECTOR.get_or_init(|| {
            let dir = std::env::var_os("SNARKD_TEST_PARAMS")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/var/tmp/snarkd-test-params"));
            let manifest = crate::tools::ensure_testdata(&dir, 2048).expect("2 KiB test data");
            (dir, manifest)
        })
    }

    /// For every partition of `kind`, the parallel witness equals the sequential one field by
    /// field (whether the items' shapes were counted or remembered, and with A and B filled from
    /// the circuit's precompiled record, at once or deferred to the proving stage), and the proof
    /// made from the deferred witness verifies with filecoin-proofs-api.
    fn parallel_witness_is_sequential_and_proves(kind: ProofKind) {
        let (dir, manifest) = sector();
        let statement = prepare_any(&manifest.request(kind).unwrap()).unwrap();
        let srs = load(dir, &statement.circuit(), PointCheck::None).unwrap();
        let record = std::sync::Arc::new(statement.record().unwrap());
        assert_eq!(record.first_difference(&statement.record_sequential().unwrap()), None, "{kind}: record");
        let mut proof = Vec::new();
        for partition in 0..statement.partitions() {
            let sequential = statement.synthesize_sequential(partition).unwrap();
            let counted = statement.synthesize(partition).unwrap();
            assert_eq!(counted.first_difference(&sequential), None, "{kind} partition {partition}");
            drop(counted);
            let parallel = statement.synthesize(partition).unwrap();
            assert_eq!(parallel.first_difference(&sequential), None, "{kind} partition {partition}, shapes remembered");
            drop(parallel);
            let parallel = crate::groth16::precompiled(record.clone(), || statement.synthesize(partition)).unwrap();
            assert_eq!(parallel.first_difference(&sequential), None, "{kind} partition {partition}, precompiled");
            drop(parallel);
            // A and B left to the proving stage, which fills them (the CPU backend on the host)
            let deferred = crate::groth16::precompiled_as(record.clone(), Fill::Deferred, || statement.synthesize(partition)).unwrap();
            assert!(deferred.a.is_empty() && deferred.b.is_empty() && deferred.record.is_some(), "{kind}: a and b deferred");
            assert_eq!(deferred.evaluations(), sequential.a.len(), "{kind} partition {partition}");
            let mut filled = deferred.clone();
            filled.fill_deferred();
            assert_eq!(filled.first_difference(&sequential), None, "{kind} partition {partition}, deferred then filled");
            drop(filled);
            let (p, _) = CpuBackend::new().prove(deferred, &srs, &|_| {}).unwrap();
            p.write(&mut proof).unwrap();
        }
        assert!(verify_with_api(manifest, kind, &proof).unwrap(), "{kind}: filecoin-proofs-api rejected the proof");
    }

    #[test]
    fn porep_c2_parallel_witness_is_sequential_and_proves() {
        parallel_witness_is_sequential_and_proves(ProofKind::PorepC2);
    }

    #[test]
    fn window_post_parallel_witness_is_sequential_and_proves() {
        parallel_witness_is_sequential_and_proves(ProofKind::WindowPost);
    }

    #[test]
    fn winning_post_parallel_witness_is_sequential_and_proves() {
        parallel_witness_is_sequential_and_proves(ProofKind::WinningPost);
    }

    #[test]
    fn snap_deals_parallel_witness_is_sequential_and_proves() {
        parallel_witness_is_sequential_and_proves(ProofKind::SnapDeals);
    }
}
