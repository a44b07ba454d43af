//! filecoin-proofs-api's own provers and verifiers over a [`Manifest`]: the yardstick snarkd's proofs
//! are measured against (differential tests, benchmark, `snarkctl` self-checks).
//!
//! filecoin-proofs reads its parameter directory from `FIL_PROOFS_PARAMETER_CACHE` once per process,
//! on first use, so [`use_parameter_dir`] must run before anything else touches filecoin-proofs.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{ensure, Context};
use filecoin_proofs_api::post::{
    generate_single_window_post_with_vanilla, generate_winning_post_with_vanilla, verify_window_post,
    verify_winning_post,
};
use filecoin_proofs_api::seal::{seal_commit_phase2, verify_seal, SealCommitPhase1Output};
use filecoin_proofs_api::update::{generate_empty_sector_update_proof_with_vanilla, verify_empty_sector_update_proof};
use filecoin_proofs_api::{PartitionProofBytes, PublicReplicaInfo, SectorId};

use super::testdata::{Manifest, PostData};
use crate::proofs::ProofKind;

/// Points filecoin-proofs at `dir` for parameters and verifying keys, or fails if this process
/// already fixed another directory.
pub fn use_parameter_dir(dir: &Path) -> anyhow::Result<()> {
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    let used = &storage_proofs_core::settings::SETTINGS.parameter_cache;
    ensure!(
        Path::new(used) == dir,
        "filecoin-proofs already uses parameter directory {used}; set FIL_PROOFS_PARAMETER_CACHE={} before start",
        dir.display()
    );
    Ok(())
}

/// Whether filecoin-proofs-api accepts `proof` (the bytes a client would get back) for `kind`.
pub fn verify_with_api(manifest: &Manifest, kind: ProofKind, proof: &[u8]) -> anyhow::Result<bool> {
    let m = manifest;
    let sector_id = SectorId::from(m.sector_number);
    match kind {
        ProofKind::PorepC2 => verify_seal(
            m.porep.registered_proof,
            m.porep.comm_r.0,
            m.porep.comm_d.0,
            m.prover_id.0,
            sector_id,
            m.porep.ticket.0,
            m.porep.seed.0,
            proof,
        ),
        ProofKind::WindowPost => verify_window_post(
            &m.window_post.randomness.0,
            &[(m.window_post.registered_proof, proof)],
            &replicas(m, &m.window_post),
            m.prover_id.0,
        ),
        ProofKind::WinningPost => {
            verify_winning_post(&m.winning_post.randomness.0, proof, &replicas(m, &m.winning_post), m.prover_id.0)
        }
        ProofKind::SnapDeals => verify_empty_sector_update_proof(
            m.snap_deals.registered_proof,
            proof,
            m.snap_deals.comm_r_old.0,
            m.snap_deals.comm_r_new.0,
            m.snap_deals.comm_d_new.0,
        ),
    }
    .with_context(|| format!("filecoin-proofs-api could not verify the {kind} proof"))
}

/// The proof filecoin-proofs-api's own prover makes for `kind` from the manifest's inputs.
pub fn prove_with_api(manifest: &Manifest, kind: ProofKind) -> anyhow::Result<Vec<u8>> {
    let m = manifest;
    let sector_id = SectorId::from(m.sector_number);
    let proof = match kind {
        ProofKind::PorepC2 => {
            let c1: SealCommitPhase1Output = serde_json::from_slice(&m.read(&m.porep.c1_output)?)?;
            seal_commit_phase2(c1, m.prover_id.0, sector_id)?.proof
        }
        ProofKind::WindowPost => {
            let post = &m.window_post;
            let vanilla = vanilla_files(m, &post.vanilla_proofs)?;
            generate_single_window_post_with_vanilla(
                post.registered_proof,
                &post.randomness.0,
                m.prover_id.0,
                &vanilla,
                post.partition_index.unwrap_or(0),
            )?
            .0
        }
        ProofKind::WinningPost => {
            let post = &m.winning_post;
            let vanilla = vanilla_files(m, &post.vanilla_proofs)?;
            let mut proofs =
                generate_winning_post_with_vanilla(post.registered_proof, &post.randomness.0, m.prover_id.0, &vanilla)?;
            ensure!(proofs.len() == 1, "winning post returned {} proofs", proofs.len());
            proofs.remove(0).1
        }
        ProofKind::SnapDeals => {
            let snap = &m.snap_deals;
            let vanilla = vanilla_files(m, &snap.vanilla_proofs)?.into_iter().map(PartitionProofBytes).collect();
            generate_empty_sector_update_proof_with_vanilla(
                snap.registered_proof,
                vanilla,
                snap.comm_r_old.0,
                snap.comm_r_new.0,
                snap.comm_d_new.0,
            )?
            .0
        }
    };
    Ok(proof)
}

fn replicas(m: &Manifest, post: &PostData) -> BTreeMap<SectorId, PublicReplicaInfo> {
    BTreeMap::from([(SectorId::from(m.sector_number), PublicReplicaInfo::new(post.registered_proof, post.comm_r.0))])
}

fn vanilla_files(m: &Manifest, names: &[String]) -> anyhow::Result<Vec<Vec<u8>>> {
    names.iter().map(|n| m.read(n)).collect()
}
