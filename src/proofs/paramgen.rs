//! Test parameters for small sector sizes, written under the production file names.
//!
//! Only 2 KiB … 512 MiB parameters are practical to make locally; the published ones for 32/64 GiB
//! come from the trusted setup. This does what filecoin-proofs' `paramcache` does
//! (`groth16::generate_random_parameters` on the compound's blank circuit) but writes the files
//! itself, because filecoin-proofs fixes its cache directory from `FIL_PROOFS_PARAMETER_CACHE` once
//! per process, and a daemon or test may want another directory.

use std::fs;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context;
use bellperson::groth16::{self, Parameters};
use bellperson::Circuit;
use blstrs::{Bls12, Scalar as Fr};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, window_post_public_params, winning_post_public_params};
use rand::rngs::OsRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{CacheEntryMetadata, CacheableParameters};
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound};
use storage_proofs_post::fallback::{FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound};

use crate::proofs::shape::{self, with_tree, Registered};
use crate::proofs::size::Counter;
use crate::proofs::{CircuitSize, ProofKind};
use crate::srs::CircuitId;

/// Generates random (insecure) Groth16 parameters for each of `kinds` at `sector_size` into `dir`
/// as `v28-<id>.params`, `.vk` and `.meta`, skipping kinds whose three files already exist.
/// Returns the paths of the files written. `progress` receives one line per step.
pub fn generate(
    sector_size: u64,
    kinds: &[ProofKind],
    dir: &Path,
    progress: &dyn Fn(&str),
) -> anyhow::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create parameter directory {}", dir.display()))?;
    let mut written = Vec::new();
    for &kind in kinds {
        let registered = shape::registered(kind, sector_size)?;
        written.extend(with_tree!(sector_size, with_blank_writing, registered, Write { dir, progress })?);
    }
    Ok(written)
}

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
trait BlankAction {
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
fn with_blank<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, A: BlankAction>(
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
fn with_blank_writing<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: Registered,
    action: Write<'_>,
) -> anyhow::Result<Vec<PathBuf>> {
    with_blank::<Tree, _>(registered, action)
}

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

/// Writes the three files of one circuit. Each is written to a temporary name and renamed, so an
/// interrupted run never leaves a truncated file under the name a prover would load.
struct Write<'a> {
    dir: &'a Path,
    progress: &'a dyn Fn(&str),
}

impl BlankAction for Write<'_> {
    type Output = Vec<PathBuf>;
    fn run<C: Circuit<Fr>>(
        self,
        id: CircuitId,
        meta: CacheEntryMetadata,
        blank_circuit: impl FnOnce() -> C,
    ) -> anyhow::Result<Vec<PathBuf>> {
        let params_path = self.dir.join(id.params_file());
        let vk_path = self.dir.join(id.vk_file());
        let meta_path = self.dir.join(format!("v28-{id}.meta"));
        if params_path.exists() && vk_path.exists() && meta_path.exists() {
            (self.progress)(&format!("{id}: parameters exist, skipped"));
            return Ok(Vec::new());
        }
        (self.progress)(&format!("{id}: generating parameters"));
        let start = std::time::Instant::now();
        let params: Parameters<Bls12> = groth16::generate_random_parameters(blank_circuit(), &mut OsRng)
            .with_context(|| format!("cannot generate parameters for {id}"))?;
        write_atomically(&params_path, |w| Ok(params.write(w)?))?;
        write_atomically(&vk_path, |w| Ok(params.vk.write(w)?))?;
        write_atomically(&meta_path, |w| Ok(serde_json::to_writer(w, &meta)?))?;
        (self.progress)(&format!("{id}: written in {:.0?}", start.elapsed()));
        Ok(vec![params_path, vk_path, meta_path])
    }
}

fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<fs::File>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let tmp = path.with_extension("partial");
    let mut w = BufWriter::new(fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?);
    write(&mut w).and_then(|()| Ok(w.flush()?)).with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}
