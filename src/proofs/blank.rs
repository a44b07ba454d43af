//! The blank circuit of each kind and sector size, built from the public parameters the way
//! filecoin-proofs builds them: its cache identifier (what `params.preload = ["porep_c2:32GiB"]`
//! resolves to) and its size. Generating parameters from it is a tool (`tools::paramgen`), never
//! part of the proving path.

use anyhow::Context;
use bellperson::Circuit;
use blstrs::Scalar as Fr;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, window_post_public_params, winning_post_public_params};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{CacheEntryMetadata, CacheableParameters};
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound};
use storage_proofs_post::fallback::{FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound};

use super::shape::{self, with_tree, Registered};
use super::size::Counter;
use super::{CircuitSize, ProofKind};
use crate::srs::CircuitId;

/// Counts the blank circuit of `kind` at `sector_size`: the circuit the parameters are made for.
pub fn blank_circuit_size(kind: ProofKind, sector_size: u64) -> anyhow::Result<CircuitSize> {
    let registered = shape::registered(kind, sector_size)?;
    with_tree!(sector_size, with_blank_counting, registered, Count)
}

/// The cache identifier of `kind`'s circuit at `sector_size`: what `params.preload =
/// ["porep_c2:32GiB"]` and `snarkctl preload porep_c2:32GiB` resolve to.
pub fn circuit_id(kind: ProofKind, sector_size: u64) -> anyhow::Result<CircuitId> {
    let registered = shape::registered(kind, sector_size)?;
    with_tree!(sector_size, with_blank_identifying, registered, Identify)
}

/// Only names the circuit; the blank circuit is never built.
struct Identify;

impl BlankAction for Identify {
    type Output = CircuitId;
    fn run<C: Circuit<Fr>>(
        self,
        id: CircuitId,
        _meta: CacheEntryMetadata,
        _blank_circuit: impl FnOnce() -> C,
    ) -> anyhow::Result<CircuitId> {
        Ok(id)
    }
}

fn with_blank_identifying<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: Registered,
    action: Identify,
) -> anyhow::Result<CircuitId> {
    with_blank::<Tree, _>(registered, action)
}

/// What to do with a blank circuit, given its cache identifier and metadata.
pub trait BlankAction {
    type Output;
    fn run<C: Circuit<Fr>>(
        self,
        id: CircuitId,
        meta: CacheEntryMetadata,
        blank_circuit: impl FnOnce() -> C,
    ) -> anyhow::Result<Self::Output>;
}

/// Builds the public parameters of `registered` the way filecoin-proofs does and hands its blank
/// circuit to `action`.
pub fn with_blank<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, A: BlankAction>(
    registered: Registered,
    action: A,
) -> anyhow::Result<A::Output> {
    match registered {
        Registered::Seal(proof) => {
            let pp = public_params::<Tree>(&proof.as_v1_config())?;
            type C<T> = StackedCompound<T, DefaultPieceHasher>;
            type Cs<T> = StackedCircuit<T, DefaultPieceHasher>;
            action.run(
                CircuitId(<C<Tree> as CacheableParameters<Cs<Tree>, _>>::cache_identifier(&pp)),
                <C<Tree> as CacheableParameters<Cs<Tree>, _>>::cache_meta(&pp),
                || <C<Tree> as CompoundProof<_, _>>::blank_circuit(&pp),
            )
        }
        Registered::PoSt(proof) => {
            let config = proof.as_v1_config();
            let pp = match config.typ {
                filecoin_proofs::PoStType::Window => window_post_public_params::<Tree>(&config)?,
                filecoin_proofs::PoStType::Winning => winning_post_public_params::<Tree>(&config)?,
            };
            type C<T> = FallbackPoStCompound<T>;
            action.run(
                CircuitId(<C<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(&pp)),
                <C<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_meta(&pp),
                || <C<Tree> as CompoundProof<_, _>>::blank_circuit(&pp),
            )
        }
        Registered::Update(proof) => {
            let pp = storage_proofs_update::PublicParams::from_sector_size(u64::from(proof.sector_size()));
            type C<T> = EmptySectorUpdateCompound<T>;
            action.run(
                CircuitId(<C<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(&pp)),
                <C<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_meta(&pp),
                || <C<Tree> as CompoundProof<_, _>>::blank_circuit(&pp),
            )
        }
    }
}

// `with_tree!` names one type parameter, so each action gets its own entry point.
fn with_blank_counting<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: Registered,
    action: Count,
) -> anyhow::Result<CircuitSize> {
    with_blank::<Tree, _>(registered, action)
}

struct Count;

impl BlankAction for Count {
    type Output = CircuitSize;
    fn run<C: Circuit<Fr>>(
        self,
        id: CircuitId,
        _: CacheEntryMetadata,
        blank_circuit: impl FnOnce() -> C,
    ) -> anyhow::Result<CircuitSize> {
        Counter::measure(blank_circuit()).with_context(|| format!("cannot count {id}"))
    }
}

