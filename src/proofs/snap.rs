//! SnapDeals (empty sector update): the partition vanilla proofs into one Groth16 circuit per
//! partition, as `generate_empty_sector_update_proof_with_vanilla` builds them.

use bellperson::groth16::{Parameters, Proof};
use blstrs::Bls12;
use filecoin_hashers::Domain;
use filecoin_proofs::types::SectorUpdateConfig;
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof, PublicInputs, PublicParams,
    SetupParams,
};

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

struct Snap<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    circuit: CircuitId,
    size: CircuitSize,
    pub_params: PublicParams,
    pub_inputs: PublicInputs,
    vanilla: Vec<PartitionProof<Tree>>,
}

pub(super) fn prepare(
    proof: RegisteredUpdateProof,
    vanilla_proofs: &[Base64Bytes],
    comm_r_old: Bytes32,
    comm_r_new: Bytes32,
    comm_d_new: Bytes32,
) -> Result<Box<dyn Prepared>, SnarkError> {
    // All three become circuit inputs, so each must be a field element (comm_d is fr32-trimmed).
    field_element("comm_r_old", &comm_r_old)?;
    field_element("comm_r_new", &comm_r_new)?;
    field_element("comm_d_new", &comm_d_new)?;
    with_tree!(u64::from(proof.sector_size()), build, proof, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new)
}

fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
    vanilla_proofs: &[Base64Bytes],
    comm_r_old: Bytes32,
    comm_r_new: Bytes32,
    comm_d_new: Bytes32,
) -> Result<Box<dyn Prepared>, SnarkError> {
    let config = SectorUpdateConfig::from_porep_config(&proof.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    if vanilla_proofs.len() != partitions {
        return Err(SnarkError::bad_input(format!(
            "vanilla_proofs: expected {partitions} partition proofs for {proof:?}, got {}",
            vanilla_proofs.len()
        )));
    }
    let vanilla: Vec<PartitionProof<Tree>> = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| decode_bincode(&format!("vanilla_proofs[{i}]"), &bytes.0))
        .collect::<Result<_, _>>()?;

    let pub_inputs = PublicInputs {
        k: partitions,
        comm_r_old: guarded("comm_r_old", || TreeRDomain::try_from_bytes(&comm_r_old.0))?,
        comm_d_new: guarded("comm_d_new", || TreeDDomain::try_from_bytes(&comm_d_new.0))?,
        comm_r_new: guarded("comm_r_new", || TreeRDomain::try_from_bytes(&comm_r_new.0))?,
        h: config.h,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams { sector_bytes: u64::from(config.sector_size) },
        partitions: Some(partitions),
        priority: false,
    };
    let compound = <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::setup(&setup)
        .map_err(|e| SnarkError::internal(format!("update setup: {e:#}")))?;
    let pub_params = compound.vanilla_params;

    // The `_with_vanilla` prover trusts its inputs; checking them here makes a wrong commitment or
    // a corrupted partition proof bad input rather than a proof that fails verification.
    let valid = guarded("vanilla_proofs", || {
        EmptySectorUpdate::<Tree>::verify_all_partitions(&pub_params, &pub_inputs, &vanilla)
    })?;
    if !valid {
        return Err(SnarkError::bad_input(
            "vanilla_proofs: do not verify against comm_r_old, comm_r_new and comm_d_new",
        ));
    }

    let circuit = CircuitId(<EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        _,
    >>::cache_identifier(&pub_params));
    Ok(Box::new(Snap::<Tree> {
        circuit,
        size: super::circuit_size(ProofKind::SnapDeals, u64::from(proof.sector_size())),
        pub_params,
        pub_inputs,
        vanilla,
    }))
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Snap<Tree> {
    fn partition_circuit(
        &self,
        partition: usize,
    ) -> Result<anyhow::Result<EmptySectorUpdateCircuit<Tree>>, SnarkError> {
        check_partition(partition, self.vanilla.len())?;
        Ok(<EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::circuit(
            &self.pub_inputs,
            (),
            &self.vanilla[partition],
            &self.pub_params,
            Some(partition),
        ))
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Prepared for Snap<Tree> {
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

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Statement for Snap<Tree> {
    fn kind(&self) -> ProofKind {
        ProofKind::SnapDeals
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
        split::snap(partition, &self.circuit, self.partition_circuit(partition)?)
    }
    fn synthesize_sequential(&self, partition: usize) -> Result<Witness, SnarkError> {
        synthesize_circuit(partition, self.partition_circuit(partition)?)
    }
    fn record(&self) -> Result<crate::groth16::Precompiled, SnarkError> {
        split::record_snap(0, self.partition_circuit(0)?)
    }
    fn record_sequential(&self) -> Result<crate::groth16::Precompiled, SnarkError> {
        record_circuit(0, self.partition_circuit(0)?)
    }
    fn public_inputs(&self, partition: usize) -> Result<Vec<blstrs::Scalar>, SnarkError> {
        check_partition(partition, self.partitions())?;
        <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(partition),
        )
        .map_err(|e| SnarkError::internal(format!("partition {partition}: public inputs: {e:#}")))
    }
}
