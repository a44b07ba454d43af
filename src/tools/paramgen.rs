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
use rand::rngs::OsRng;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::CacheEntryMetadata;
use storage_proofs_update::constants::TreeRHasher;

use crate::proofs::blank::{with_blank, BlankAction};
use crate::proofs::shape::{self, with_tree, Registered};
use crate::proofs::ProofKind;
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

// `with_tree!` names one type parameter, so each action gets its own entry point.
fn with_blank_writing<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: Registered,
    action: Write<'_>,
) -> anyhow::Result<Vec<PathBuf>> {
    with_blank::<Tree, _>(registered, action)
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
