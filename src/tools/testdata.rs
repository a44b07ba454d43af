//! Real inputs for every proof kind, made offline: seal a small sector with filecoin-proofs-api and
//! keep what Lotus and Curio would hand over (C1 output, PoSt and SnapDeals vanilla proofs) together
//! with every public value a verifier needs.
//!
//! Used by the tests, the differential check against filecoin-proofs' own provers and the benchmark.
//! Sealing needs no Groth16 parameters; proving and verifying the results does.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use filecoin_proofs_api::post::{generate_fallback_sector_challenges, generate_single_vanilla_proof};
use filecoin_proofs_api::seal::{add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2};
use filecoin_proofs_api::update::{empty_sector_update_encode_into, generate_partition_proofs};
use filecoin_proofs_api::{
    PieceInfo, PrivateReplicaInfo, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId,
    UnpaddedBytesAmount,
};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::proofs::request::{Base64Bytes, Bytes32, PoStProofType, ProofRequest, UpdateProofType};
use crate::proofs::shape::{self, Registered};
use crate::proofs::{prover_id, ProofKind};

/// What [`generate`] wrote, saved as `manifest.json` next to the files it names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub sector_size: u64,
    pub miner_id: u64,
    /// filecoin-ffi's prover id for `miner_id`.
    pub prover_id: Bytes32,
    pub sector_number: u64,
    pub porep: PorepData,
    pub window_post: PostData,
    pub winning_post: PostData,
    pub snap_deals: SnapData,
    /// A ready-to-send request per kind (file names relative to the manifest).
    pub requests: BTreeMap<ProofKind, String>,
    /// The directory holding the manifest; not saved.
    #[serde(skip)]
    pub dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PorepData {
    pub registered_proof: RegisteredSealProof,
    pub comm_r: Bytes32,
    pub comm_d: Bytes32,
    pub ticket: Bytes32,
    pub seed: Bytes32,
    /// `serde_json` of `SealCommitPhase1Output`.
    pub c1_output: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostData {
    pub registered_proof: RegisteredPoStProof,
    pub randomness: Bytes32,
    /// The sector's comm_r, which the verifier looks up on chain.
    pub comm_r: Bytes32,
    /// WindowPoSt only.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub partition_index: Option<usize>,
    /// bincode `FallbackPoStSectorProof` files, one per sector.
    pub vanilla_proofs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapData {
    pub registered_proof: RegisteredUpdateProof,
    pub comm_r_old: Bytes32,
    pub comm_r_new: Bytes32,
    pub comm_d_new: Bytes32,
    /// bincode `PartitionProof` files, one per partition.
    pub vanilla_proofs: Vec<String>,
}

impl Manifest {
    pub fn load(dir: &Path) -> anyhow::Result<Manifest> {
        let path = dir.join("manifest.json");
        let text = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut manifest: Manifest =
            serde_json::from_slice(&text).with_context(|| format!("{} is not a manifest", path.display()))?;
        manifest.dir = dir.to_path_buf();
        Ok(manifest)
    }

    /// The request a client would send for `kind`.
    pub fn request(&self, kind: ProofKind) -> anyhow::Result<ProofRequest> {
        let file = self.requests.get(&kind).with_context(|| format!("manifest has no {kind} request"))?;
        Ok(ProofRequest::from_json(&self.read(file)?)?)
    }

    /// Reads a file the manifest names.
    pub fn read(&self, file: &str) -> anyhow::Result<Vec<u8>> {
        let path = self.dir.join(file);
        fs::read(&path).with_context(|| format!("cannot read {}", path.display()))
    }
}

const MINER_ID: u64 = 1000;
const SECTOR_NUMBER: u64 = 7;

/// Seals one sector of `sector_size` under `out` and writes its proof inputs, the request per kind
/// and `manifest.json`. `params_dir` becomes filecoin-proofs' parameter cache (see
/// [`super::reference::use_parameter_dir`]) so that the results can be proved and verified afterwards.
pub fn generate(sector_size: u64, out: &Path, params_dir: &Path) -> anyhow::Result<Manifest> {
    super::reference::use_parameter_dir(params_dir)?;
    let (Registered::Seal(seal), Registered::PoSt(window), Registered::PoSt(winning), Registered::Update(update)) = (
        shape::registered(ProofKind::PorepC2, sector_size)?,
        shape::registered(ProofKind::WindowPost, sector_size)?,
        shape::registered(ProofKind::WinningPost, sector_size)?,
        shape::registered(ProofKind::SnapDeals, sector_size)?,
    ) else {
        unreachable!("shape::registered returns the registered proof of the kind asked for")
    };
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let work = out.join("sector");
    let cache = work.join("cache");
    let update_cache = work.join("update-cache");
    for dir in [&cache, &update_cache] {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let sealed = work.join("sealed");
    let replica = work.join("update");

    let prover = prover_id::from_miner_id(MINER_ID);
    let sector_id = SectorId::from(SECTOR_NUMBER);
    let ticket = random32();
    let seed = random32();

    // PoRep: stage one piece filling the sector, seal it and take the C1 output.
    let piece = stage_piece(seal, &work.join("staged"))?;
    fs::File::create(&sealed)?;
    let p1 = seal_pre_commit_phase1(
        seal,
        &cache,
        work.join("staged"),
        &sealed,
        prover.0,
        sector_id,
        ticket,
        std::slice::from_ref(&piece),
    )
    .context("seal_pre_commit_phase1")?;
    let p2 = seal_pre_commit_phase2(p1, &cache, &sealed).context("seal_pre_commit_phase2")?;
    let (comm_r, comm_d) = (p2.comm_r, p2.comm_d);
    let c1 = seal_commit_phase1(&cache, &sealed, prover.0, sector_id, ticket, seed, p2, &[piece])
        .context("seal_commit_phase1")?;
    write(out, "c1.json", &serde_json::to_vec(&c1)?)?;

    let window_post = post_data(window, Some(0), comm_r, &cache, &sealed, prover, sector_id, out)?;
    let winning_post = post_data(winning, None, comm_r, &cache, &sealed, prover, sector_id, out)?;

    // SnapDeals: encode new data into the sealed sector as a CC upgrade would.
    let new_piece = stage_piece(seal, &work.join("staged-update"))?;
    fs::File::create(&replica)?.set_len(fs::metadata(&sealed)?.len())?;
    let encoded = empty_sector_update_encode_into(
        update,
        &replica,
        &update_cache,
        &sealed,
        &cache,
        work.join("staged-update"),
        &[new_piece],
    )
    .context("empty_sector_update_encode_into")?;
    let partition_proofs = generate_partition_proofs(
        update,
        comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sealed,
        &cache,
        &replica,
        &update_cache,
    )
    .context("generate_partition_proofs")?;
    let mut snap_files = Vec::new();
    for (k, proof) in partition_proofs.iter().enumerate() {
        snap_files.push(write(out, &format!("snap-partition-{k}.bin"), &proof.0)?);
    }

    let mut manifest = Manifest {
        sector_size,
        miner_id: MINER_ID,
        prover_id: prover,
        sector_number: SECTOR_NUMBER,
        porep: PorepData {
            registered_proof: seal,
            comm_r: Bytes32(comm_r),
            comm_d: Bytes32(comm_d),
            ticket: Bytes32(ticket),
            seed: Bytes32(seed),
            c1_output: "c1.json".into(),
        },
        window_post,
        winning_post,
        snap_deals: SnapData {
            registered_proof: update,
            comm_r_old: Bytes32(comm_r),
            comm_r_new: Bytes32(encoded.comm_r_new),
            comm_d_new: Bytes32(encoded.comm_d_new),
            vanilla_proofs: snap_files,
        },
        requests: BTreeMap::new(),
        dir: out.to_path_buf(),
    };
    for kind in ProofKind::ALL {
        let request = build_request(&manifest, kind)?;
        let file = write(out, &format!("request-{kind}.json"), &serde_json::to_vec_pretty(&request)?)?;
        manifest.requests.insert(kind, file);
    }
    write(out, "manifest.json", &serde_json::to_vec_pretty(&manifest)?)?;
    crate::tools::fuzz::write_seeds(&manifest, &out.join("fuzz-seeds"))?;
    // The sealed sector and its trees were only needed to make the vanilla proofs.
    fs::remove_dir_all(&work).with_context(|| format!("cannot remove {}", work.display()))?;
    Ok(manifest)
}

/// Writes one piece of random data, as large as the sector holds, into a new staged sector file.
fn stage_piece(seal: RegisteredSealProof, staged: &Path) -> anyhow::Result<PieceInfo> {
    let size = UnpaddedBytesAmount::from(filecoin_proofs_api::PaddedBytesAmount(u64::from(seal.sector_size())));
    let mut data = vec![0u8; size.0 as usize];
    rand::rngs::OsRng.fill_bytes(&mut data);
    let mut target = fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(staged)?;
    let (piece, _) = add_piece(seal, &data[..], &mut target, size, &[]).context("add_piece")?;
    target.flush()?;
    target.rewind()?;
    Ok(piece)
}

#[allow(clippy::too_many_arguments)]
fn post_data(
    proof: RegisteredPoStProof,
    partition_index: Option<usize>,
    comm_r: [u8; 32],
    cache: &Path,
    sealed: &Path,
    prover: Bytes32,
    sector_id: SectorId,
    out: &Path,
) -> anyhow::Result<PostData> {
    let mut randomness = random32();
    // Lotus clears the top two bits so that the randomness is a field element.
    randomness[31] &= 0x3f;
    let challenges = generate_fallback_sector_challenges(proof, &randomness, &[sector_id], prover.0)
        .context("generate_fallback_sector_challenges")?;
    let replica = PrivateReplicaInfo::new(proof, comm_r, cache.to_path_buf(), sealed.to_path_buf());
    let vanilla = generate_single_vanilla_proof(proof, sector_id, &replica, &challenges[&sector_id])
        .context("generate_single_vanilla_proof")?;
    let name = match proof.typ() {
        filecoin_proofs_api::PoStType::Window => "window",
        filecoin_proofs_api::PoStType::Winning => "winning",
    };
    Ok(PostData {
        registered_proof: proof,
        randomness: Bytes32(randomness),
        comm_r: Bytes32(comm_r),
        partition_index,
        vanilla_proofs: vec![write(out, &format!("{name}-vanilla-0.bin"), &vanilla)?],
    })
}

fn build_request(m: &Manifest, kind: ProofKind) -> anyhow::Result<ProofRequest> {
    let files = |names: &[String]| -> anyhow::Result<Vec<Base64Bytes>> {
        names.iter().map(|n| m.read(n).map(Base64Bytes)).collect()
    };
    Ok(match kind {
        ProofKind::PorepC2 => ProofRequest::PorepC2 {
            c1_output: Base64Bytes(m.read(&m.porep.c1_output)?),
            sector_number: m.sector_number,
            miner_id: Some(m.miner_id),
            prover_id: None,
        },
        ProofKind::WindowPost => ProofRequest::WindowPost {
            registered_post_proof: PoStProofType(m.window_post.registered_proof),
            randomness: m.window_post.randomness,
            miner_id: Some(m.miner_id),
            prover_id: None,
            partition_index: m.window_post.partition_index.unwrap_or(0),
            vanilla_proofs: files(&m.window_post.vanilla_proofs)?,
        },
        ProofKind::WinningPost => ProofRequest::WinningPost {
            registered_post_proof: PoStProofType(m.winning_post.registered_proof),
            randomness: m.winning_post.randomness,
            miner_id: Some(m.miner_id),
            prover_id: None,
            vanilla_proofs: files(&m.winning_post.vanilla_proofs)?,
        },
        ProofKind::SnapDeals => ProofRequest::SnapDeals {
            registered_update_proof: UpdateProofType(m.snap_deals.registered_proof),
            vanilla_proofs: files(&m.snap_deals.vanilla_proofs)?,
            comm_r_old: m.snap_deals.comm_r_old,
            comm_r_new: m.snap_deals.comm_r_new,
            comm_d_new: m.snap_deals.comm_d_new,
        },
    })
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<String> {
    let path = dir.join(name);
    fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(name.to_string())
}

fn random32() -> [u8; 32] {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    b
}
