//! WindowPoSt (one partition) and WinningPoSt: the per-sector vanilla proofs into the one
//! FallbackPoSt circuit each proof has, as `generate_single_window_post_with_vanilla` and
//! `generate_winning_post_with_vanilla` build it.
//!
//! A WindowPoSt request carries the sectors of one partition of a deadline, as filecoin-ffi's
//! `GenerateSinglePartitionWindowPoStWithVanilla` does; `partition_index` is that partition's place
//! in the deadline. filecoin-proofs proves it as a one-partition circuit (index 0) and uses
//! `partition_index` only to check the vanilla proofs, so the proof is the same for every index
//! under V1_2, and nothing bounds the index besides the deadline the request does not describe.

use bellperson::groth16::{Parameters, Proof};
use blstrs::Bls12;
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{partition_vanilla_proofs, single_partition_vanilla_proofs, FallbackPoStSectorProof, PoStType};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector};

use super::shape::with_tree;
use super::split;
use super::{
    check_partition, decode_bincode, evaluate_circuit, field_element, guarded, measure_circuit, reference_prove,
    record_circuit, synthesize_circuit, Base64Bytes, Bytes32, CircuitSize, Prepared, ProofKind, Statement,
};
use crate::error::SnarkError;
use crate::groth16::Witness;
use crate::srs::CircuitId;
use crate::units::Bytes;

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

struct Post<Tree: 'static + MerkleTreeTrait> {
    kind: ProofKind,
    circuit: CircuitId,
    size: CircuitSize,
    pub_params: fallback::PublicParams,
    pub_inputs: fallback::PublicInputs<Domain<Tree>>,
    /// The inputs as the verifier states them, which for WinningPoSt differ from the prover's.
    verifier_inputs: fallback::PublicInputs<Domain<Tree>>,
    /// The one partition's proof: every sector's inclusion proofs, padded to the circuit's sector count.
    partition: fallback::Proof<<Tree as MerkleTreeTrait>::Proof>,
}

pub(super) fn prepare(
    kind: ProofKind,
    proof: RegisteredPoStProof,
    randomness: Bytes32,
    prover_id: Bytes32,
    partition_index: Option<usize>,
    vanilla_proofs: &[Base64Bytes],
) -> Result<Box<dyn Prepared>, SnarkError> {
    if let Some(index) = partition_index.filter(|i| *i >= MAX_PARTITIONS_PER_DEADLINE) {
        return Err(SnarkError::bad_input(format!(
            "partition_index: {index} out of range; a deadline has at most {MAX_PARTITIONS_PER_DEADLINE} partitions"
        )));
    }
    let (expected, name) = match kind {
        ProofKind::WindowPost => (PoStType::Window, "WindowPoSt"),
        _ => (PoStType::Winning, "WinningPoSt"),
    };
    if proof.typ() != expected {
        return Err(SnarkError::bad_input(format!("registered_post_proof: {proof:?} is not a {name} proof type")));
    }
    field_element("randomness", &randomness)?;
    let config = proof.as_v1_config();
    match kind {
        ProofKind::WinningPost if vanilla_proofs.len() != config.sector_count => {
            return Err(SnarkError::bad_input(format!(
                "vanilla_proofs: expected {} sector proofs for WinningPoSt, got {}",
                config.sector_count,
                vanilla_proofs.len()
            )))
        }
        _ if vanilla_proofs.is_empty() => return Err(SnarkError::bad_input("vanilla_proofs: empty")),
        _ if vanilla_proofs.len() > config.sector_count => {
            return Err(SnarkError::bad_input(format!(
                "vanilla_proofs: {} sector proofs exceed the {} sectors of one WindowPoSt partition",
                vanilla_proofs.len(),
                config.sector_count
            )))
        }
        _ => {}
    }
    with_tree!(
        u64::from(proof.sector_size()),
        build,
        kind,
        proof,
        randomness,
        prover_id,
        partition_index,
        vanilla_proofs
    )
}

/// Filecoin's `MaxPartitionsPerDeadline` (builtin-actors policy): no real partition index reaches it.
const MAX_PARTITIONS_PER_DEADLINE: usize = 3000;

fn build<Tree: 'static + MerkleTreeTrait>(
    kind: ProofKind,
    proof: RegisteredPoStProof,
    randomness: Bytes32,
    prover_id: Bytes32,
    partition_index: Option<usize>,
    vanilla_proofs: &[Base64Bytes],
) -> Result<Box<dyn Prepared>, SnarkError> {
    let config = proof.as_v1_config();
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| decode_bincode(&format!("vanilla_proofs[{i}]"), &bytes.0))
        .collect::<Result<_, _>>()?;
    // The verifier orders a partition's sectors by number; any other order proves a statement
    // nobody checks.
    if let Some(w) = vanilla.windows(2).find(|w| w[0].sector_id >= w[1].sector_id) {
        return Err(SnarkError::bad_input(format!(
            "vanilla_proofs: sectors must be in ascending order of sector number ({} before {})",
            u64::from(w[0].sector_id),
            u64::from(w[1].sector_id)
        )));
    }

    let vanilla_params = match config.typ {
        PoStType::Window => window_post_setup_params(&config),
        PoStType::Winning => winning_post_setup_params(&config)
            .map_err(|e| SnarkError::internal(format!("winning post setup: {e:#}")))?,
    };
    // One partition in both cases: WindowPoSt requests hold at most one partition of sectors and
    // WinningPoSt has exactly one.
    let setup = compound_proof::SetupParams { vanilla_params, partitions: None, priority: config.priority };
    let compound = <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::setup(&setup)
        .map_err(|e| SnarkError::internal(format!("post setup: {e:#}")))?;
    let pub_params = compound.vanilla_params;

    let pub_inputs = fallback::PublicInputs {
        randomness: guarded("randomness", || filecoin_proofs::as_safe_commitment(&randomness.0, "randomness"))?,
        prover_id: guarded("prover_id", || filecoin_proofs::as_safe_commitment(&prover_id.0, "prover_id"))?,
        sectors: vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect(),
        k: partition_index,
    };
    // Both helpers check the vanilla proofs against the randomness and prover id.
    let partition = match config.typ {
        PoStType::Window => {
            guarded("vanilla_proofs", || single_partition_vanilla_proofs(&config, &pub_params, &pub_inputs, &vanilla))?
        }
        PoStType::Winning => {
            guarded("vanilla_proofs", || partition_vanilla_proofs(&config, &pub_params, &pub_inputs, 1, &vanilla))?
                .pop()
                .ok_or_else(|| SnarkError::internal("winning post: no partition proof"))?
        }
    };

    // `verify_winning_post` lists the one sector once per circuit sector slot, so its challenge
    // indices run over the slots; the prover's one-sector list would repeat challenge 0.
    let verifier_inputs = match config.typ {
        PoStType::Window => pub_inputs.clone(),
        PoStType::Winning => fallback::PublicInputs {
            sectors: pub_inputs.sectors.iter().cycle().take(pub_params.sector_count).cloned().collect(),
            k: None,
            ..pub_inputs.clone()
        },
    };
    let circuit =
        CircuitId(<FallbackPoStCompound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(
            &pub_params,
        ));
    Ok(Box::new(Post::<Tree> {
        kind,
        circuit,
        size: super::circuit_size(kind, u64::from(proof.sector_size())),
        pub_params,
        pub_inputs,
        verifier_inputs,
        partition,
    }))
}

impl<Tree: 'static + MerkleTreeTrait> Post<Tree> {
    /// filecoin-proofs proves the single partition as partition 0 of its own compound proof.
    fn partition_circuit(&self, partition: usize) -> Result<anyhow::Result<FallbackPoStCircuit<Tree>>, SnarkError> {
        check_partition(partition, 1)?;
        Ok(<FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
            &self.pub_inputs,
            Default::default(),
            &self.partition,
            &self.pub_params,
            Some(0),
        ))
    }
}

impl<Tree: 'static + MerkleTreeTrait> Prepared for Post<Tree> {
    fn reference_proof(&self, partition: usize, params: &Parameters<Bls12>) -> Result<Proof<Bls12>, SnarkError> {
        reference_prove(partition, self.partition_circuit(partition)?, params)
    }
    fn measure(&self, partition: usize) -> Result<CircuitSize, SnarkError> {
        measure_circuit(partition, self.partition_circuit(partition)?)
    }
    fn check(&self, partition: usize) -> Result<Vec<blstrs::Scalar>, SnarkError> {
        evaluate_circuit(partition, self.partition_circuit(partition)?)
    }
    fn into_statement(self: Box<Self>) -> Box<dyn Statement> {
        self
    }
}

impl<Tree: 'static + MerkleTreeTrait> Statement for Post<Tree> {
    fn kind(&self) -> ProofKind {
        self.kind
    }
    fn circuit(&self) -> CircuitId {
        self.circuit.clone()
    }
    fn partitions(&self) -> usize {
        1
    }
    fn witness_bytes(&self) -> Bytes {
        self.size.witness_bytes()
    }
    fn synthesize(&self, partition: usize) -> Result<Witness, SnarkError> {
        split::post(partition, &self.circuit, self.partition_circuit(partition)?)
    }
    fn synthesize_sequential(&self, partition: usize) -> Result<Witness, SnarkError> {
        synthesize_circuit(partition, self.partition_circuit(partition)?)
    }
    fn record(&self) -> Result<crate::groth16::Precompiled, SnarkError> {
        split::record_post(0, self.partition_circuit(0)?)
    }
    fn record_sequential(&self) -> Result<crate::groth16::Precompiled, SnarkError> {
        record_circuit(0, self.partition_circuit(0)?)
    }
    fn public_inputs(&self, partition: usize) -> Result<Vec<blstrs::Scalar>, SnarkError> {
        check_partition(partition, 1)?;
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
            &self.verifier_inputs,
            &self.pub_params,
            Some(0),
        )
        .map_err(|e| SnarkError::internal(format!("partition {partition}: public inputs: {e:#}")))
    }
}
