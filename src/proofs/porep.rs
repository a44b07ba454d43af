//! PoRep commit phase 2: the C1 output (vanilla proofs of the sealed sector) into one Groth16
//! circuit per partition, exactly as filecoin-proofs' `seal_commit_phase2` builds them.
//!
//! The circuit uses the replica id recorded in C1, but the chain verifies against a replica id it
//! derives from the prover id, sector number and ticket. They are compared here, so that a request
//! with the wrong miner or sector fails as bad input instead of producing a proof that never verifies.

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, setup_params};
use filecoin_proofs::types::VanillaSealProof as RawVanillaSealProof;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{ApiFeature, RegisteredSealProof};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCircuit, StackedCompound, StackedDrg};

use super::shape::with_tree;
use super::split;
use super::{
    check_partition, evaluate_circuit, field_element, guarded, measure_circuit, reference_prove, record_circuit, synthesize_circuit,
    Bytes32, CircuitSize, Prepared, ProofKind, Statement,
};
use crate::error::SnarkError;
use crate::groth16::Witness;
use crate::srs::CircuitId;
use crate::units::Bytes;
use bellperson::groth16::{Parameters, Proof};
use blstrs::Bls12;

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
type Circuit<Tree> = StackedCircuit<Tree, DefaultPieceHasher>;
type PublicInputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain,
    <DefaultPieceHasher as Hasher>::Domain,
>;

struct Porep<Tree: 'static + MerkleTreeTrait> {
    circuit: CircuitId,
    size: CircuitSize,
    pub_params: stacked::PublicParams<Tree>,
    pub_inputs: PublicInputs<Tree>,
    /// Per partition, one vanilla proof per challenge.
    vanilla: Vec<Vec<RawVanillaSealProof<Tree>>>,
}

pub(super) fn prepare(
    c1_output: &[u8],
    sector_number: u64,
    prover_id: Bytes32,
) -> Result<Box<dyn Prepared>, SnarkError> {
    let c1: SealCommitPhase1Output = serde_json::from_slice(c1_output).map_err(|e| {
        let what = if e.is_eof() { "truncated JSON" } else { "not a C1 output" };
        SnarkError::bad_input(format!("c1_output: {what} at line {} column {}: {e}", e.line(), e.column()))
    })?;
    let proof = c1.registered_proof;
    if proof.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(SnarkError::unsupported(format!(
            "c1_output: registered_proof {proof:?} is an aggregated non-interactive PoRep, which this build does not prove"
        )));
    }
    if proof.major_version() != 1 {
        return Err(SnarkError::unsupported(format!("c1_output: registered_proof {proof:?} is not a V1 proof")));
    }
    with_tree!(u64::from(proof.sector_size()), build, c1, sector_number, prover_id)
}

fn build<Tree: 'static + MerkleTreeTrait>(
    c1: SealCommitPhase1Output,
    sector_number: u64,
    prover_id: Bytes32,
) -> Result<Box<dyn Prepared>, SnarkError> {
    let proof = c1.registered_proof;
    let config = proof.as_v1_config();
    check_vanilla_size(&c1.vanilla_proofs, proof)?;
    for (name, value) in [("comm_d", &c1.comm_d), ("comm_r", &c1.comm_r), ("seed", &c1.seed)] {
        if *value == [0; 32] {
            return Err(SnarkError::bad_input(format!("c1_output: {name} is all zero")));
        }
    }
    field_element("c1_output: comm_r", &Bytes32(c1.comm_r))?;

    // What `verify_seal` will derive; C1 recorded what sealing used.
    let expected =
        generate_replica_id::<Tree::Hasher, _>(&prover_id.0, sector_number, &c1.ticket, c1.comm_d, &config.porep_id);
    let replica_id: <Tree::Hasher as Hasher>::Domain = blstrs::Scalar::from(c1.replica_id).into();
    if expected != replica_id {
        // Proving anyway would only yield a proof the chain rejects, so fail now with the code
        // of that outcome and a message that says why.
        return Err(SnarkError::new(
            crate::error::ErrorCode::VerificationFailed,
            "sector_number / miner_id / prover_id: the replica id in c1_output was not sealed for this sector \
             number and prover id, so no proof would verify; check the miner id and sector number",
        ));
    }

    let vanilla: Vec<Vec<RawVanillaSealProof<Tree>>> =
        guarded("c1_output: vanilla_proofs", || c1.vanilla_proofs.try_into())?;
    let partitions = usize::from(config.partitions);
    if vanilla.len() != partitions {
        return Err(SnarkError::bad_input(format!(
            "c1_output: expected vanilla proofs for {partitions} partitions, got {}",
            vanilla.len()
        )));
    }
    let pub_params = guarded("c1_output: registered_proof", || public_params::<Tree>(&config))?;
    let challenges = pub_params.challenges.num_challenges_per_partition();
    if let Some((k, p)) = vanilla.iter().enumerate().find(|(_, p)| p.len() != challenges) {
        return Err(SnarkError::bad_input(format!(
            "c1_output: partition {k} has {} challenge proofs, expected {challenges}",
            p.len()
        )));
    }

    let pub_inputs = stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau {
            comm_d: guarded("c1_output: comm_d", || {
                <DefaultPieceHasher as Hasher>::Domain::try_from_bytes(&c1.comm_d)
            })?,
            comm_r: guarded("c1_output: comm_r", || <Tree::Hasher as Hasher>::Domain::try_from_bytes(&c1.comm_r))?,
        }),
        k: None,
        seed: Some(c1.seed),
    };
    // seal_commit_phase2 does not re-check C1's vanilla proofs; doing it here turns a corrupted or
    // mismatched C1 file into bad input before any circuit is built (and guards synthesis from
    // malformed merkle paths).
    let valid = guarded("c1_output: vanilla_proofs", || {
        StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&pub_params, &pub_inputs, &vanilla)
    })?;
    if !valid {
        return Err(SnarkError::bad_input(
            "c1_output: vanilla proofs do not verify against comm_r, comm_d, replica_id and seed",
        ));
    }

    let setup = setup_params(&config).map_err(|e| SnarkError::internal(format!("porep setup: {e:#}")))?;
    let compound = compound_proof::SetupParams { vanilla_params: setup, partitions: Some(partitions), priority: false };
    let compound = <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::setup(&compound)
        .map_err(|e| SnarkError::internal(format!("porep setup: {e:#}")))?;
    let circuit = CircuitId(<Compound<Tree> as CacheableParameters<Circuit<Tree>, _>>::cache_identifier(
        &compound.vanilla_params,
    ));
    Ok(Box::new(Porep {
        circuit,
        size: super::circuit_size(ProofKind::PorepC2, u64::from(proof.sector_size())),
        pub_params: compound.vanilla_params,
        pub_inputs,
        vanilla,
    }))
}

/// C1 tags its vanilla proofs by sector size only, and 2 KiB, 8 MiB and 512 MiB share one tree
/// shape, so the tag is compared explicitly rather than trusting the type conversion.
fn check_vanilla_size(vanilla: &VanillaSealProof, proof: RegisteredSealProof) -> Result<(), SnarkError> {
    let (tag_size, tag) = match vanilla {
        VanillaSealProof::StackedDrg2KiBV1(_) => (2u64 << 10, "StackedDrg2KiBV1"),
        VanillaSealProof::StackedDrg8MiBV1(_) => (8 << 20, "StackedDrg8MiBV1"),
        VanillaSealProof::StackedDrg512MiBV1(_) => (512 << 20, "StackedDrg512MiBV1"),
        VanillaSealProof::StackedDrg32GiBV1(_) => (32 << 30, "StackedDrg32GiBV1"),
        VanillaSealProof::StackedDrg64GiBV1(_) => (64 << 30, "StackedDrg64GiBV1"),
    };
    if tag_size != u64::from(proof.sector_size()) {
        return Err(SnarkError::bad_input(format!(
            "c1_output: vanilla_proofs are tagged {tag} but registered_proof is {proof:?}"
        )));
    }
    Ok(())
}

impl<Tree: 'static + MerkleTreeTrait> Porep<Tree> {
    fn partition_circuit(&self, partition: usize) -> Result<anyhow::Result<Circuit<Tree>>, SnarkError> {
        check_partition(partition, self.partitions())?;
        Ok(<Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::circuit(
            &self.pub_inputs,
            (),
            &self.vanilla[partition],
            &self.pub_params,
            Some(partition),
        ))
    }
}

impl<Tree: 'static + MerkleTreeTrait> Prepared for Porep<Tree> {
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

impl<Tree: 'static + MerkleTreeTrait> Statement for Porep<Tree> {
    fn kind(&self) -> ProofKind {
        ProofKind::PorepC2
    }
    fn circuit(&self) -> CircuitId {
        self.circuit.clone()
    }
    fn partitions(&self) -> usize {
        self.vanilla.len()
    }
    fn witness_bytes(&self) -> Bytes {
        self.size.witness_bytes()
    }
    fn synthesize(&self, partition: usize) -> Result<Witness, SnarkError> {
        check_partition(partition, self.partitions())?;
        split::porep::<Tree>(partition, &self.circuit, &self.pub_inputs, &self.vanilla[partition])
    }
    fn synthesize_sequential(&self, partition: usize) -> Result<Witness, SnarkError> {
        synthesize_circuit(partition, self.partition_circuit(partition)?)
    }
    fn record(&self) -> Result<crate::groth16::Precompiled, SnarkError> {
        check_partition(0, self.partitions())?;
        split::record_porep::<Tree>(0, &self.pub_inputs, &self.vanilla[0])
    }
    fn record_sequential(&self) -> Result<crate::groth16::Precompiled, SnarkError> {
        record_circuit(0, self.partition_circuit(0)?)
    }
    fn public_inputs(&self, partition: usize) -> Result<Vec<blstrs::Scalar>, SnarkError> {
        check_partition(partition, self.partitions())?;
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(partition),
        )
        .map_err(|e| SnarkError::internal(format!("partition {partition}: public inputs: {e:#}")))
    }
}
