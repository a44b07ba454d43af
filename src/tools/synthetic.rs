//! Synthetic proof requests at any published sector size, made in seconds instead of sealing a
//! sector (hours and terabytes at 32 GiB): the inputs for benchmarking the engine at 32 and 64 GiB.
//!
//! Every structure has its real shape (registered proof, partitions, challenges per partition,
//! DRG and expander parents, columns of labels, merkle paths of the real arity and depth), so the
//! request parser, the daemon's checks, circuit construction and synthesis do exactly the work they
//! do for a real sector, with the real constraint count.
//!
//! No sector exists, yet the values cannot all be random: `proofs::prepare` verifies every vanilla
//! proof before it builds a circuit, and the production path must not learn to skip that. So what
//! is free in a real sector is random here (data, unopened labels, tree siblings, comm_c) and what a
//! real sector derives is derived the way the library derives it (challenges, labels, encodings,
//! roots, comm_r). Two kinds of tree make that cheap:
//! - a [`SparseTree`] holds only the opened leaves and random siblings along their paths; it serves
//!   trees whose root is needed only after the challenges are known (PoRep's tree_c and tree_r_last,
//!   each PoSt sector's tree_r_last);
//! - a [`PeriodicTree`] repeats its leaves with a short period, so that the whole tree, and its
//!   root, is known before any challenge: PoRep's comm_d fixes the replica id and so the challenges,
//!   and SnapDeals' challenges come from comm_r_new, which hashes every new replica node.
//!
//! The result passes the daemon's checks, the circuits are satisfied and the proofs verify, but only
//! against these made-up commitments: they attest to no sector and must never reach a chain. The
//! manifest says so.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use blstrs::Scalar as Fr;
use ff::PrimeField;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Function, Sha256Hasher};
use filecoin_hashers::{Domain, HashFunction, Hasher, PoseidonArity};
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::types::{SectorUpdateConfig, VanillaSealProof as RawVanillaSealProof};
use filecoin_proofs::{
    FallbackPoStSectorProof, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
};
use filecoin_proofs_api::post::generate_fallback_sector_challenges;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId};
use merkletree::hash::Algorithm as _;
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use storage_proofs_core::drgraph::{Graph, BASE_DEGREE};
use storage_proofs_core::merkle::{base_path_length, MerkleProof, MerkleTreeTrait};
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Column, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof, EXP_DEGREE,
    TOTAL_PARENTS,
};
use storage_proofs_post::fallback::{self, SectorProof};
use storage_proofs_update::constants::{TreeDHasher, TreeRHasher};
use storage_proofs_update::{phi, rho, ChallengeProof, Challenges, PartitionProof};
use typenum::Unsigned;

use crate::proofs::request::{Base64Bytes, Bytes32, PoStProofType, ProofRequest, UpdateProofType};
use crate::proofs::shape::{self, with_tree, Registered};
use crate::proofs::{circuit_size, prover_id, ProofKind};
use crate::units::Bytes;

/// What the manifest says before anything else.
pub const WARNING: &str = "SYNTHETIC INPUTS, NOT A SEALED SECTOR: data, unopened labels and merkle \
    siblings are random (seeded); challenges, labels, encodings and commitments are derived from them \
    as filecoin-proofs derives them, so the daemon's checks pass, the circuits are satisfied and the \
    proofs verify, but only against these made-up commitments. They attest to no sector: benchmark \
    with them, never submit them to a chain.";

/// What [`generate`] wrote, saved as `manifest.json` next to the request files it names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticManifest {
    /// Always true: a reader of the file alone must not mistake it for testdata of a real sector.
    pub synthetic: bool,
    pub warning: String,
    /// The seed of every random value: the same seed, size and kinds give the same bytes.
    pub seed: u64,
    pub sector_size: u64,
    pub miner_id: u64,
    pub kinds: BTreeMap<ProofKind, SyntheticKind>,
    /// The directory holding the manifest; not saved.
    #[serde(skip)]
    pub dir: PathBuf,
}

/// One kind's request and its shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticKind {
    /// The `Prove` request, relative to the manifest.
    pub request: String,
    pub registered_proof: String,
    /// Groth16 circuits in the proof.
    pub partitions: usize,
    /// Challenges one partition's circuit opens (for PoSt: over all its sectors).
    pub challenges_per_partition: usize,
    /// Sectors in the request (WindowPoSt: one full partition of a deadline).
    pub sectors: usize,
    /// Merkle path lengths (levels, leaf to root) and the other counts that size the circuit.
    pub shape: BTreeMap<String, usize>,
    /// Constraints of one partition's circuit in snarkd's size table (`proofs::circuit_size`).
    pub constraints_per_partition: u64,
    pub request_bytes: u64,
    pub generation_ms: u64,
}

impl SyntheticManifest {
    pub fn load(dir: &Path) -> anyhow::Result<SyntheticManifest> {
        let path = dir.join("manifest.json");
        let text = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut manifest: SyntheticManifest =
            serde_json::from_slice(&text).with_context(|| format!("{} is not a synthetic manifest", path.display()))?;
        manifest.dir = dir.to_path_buf();
        Ok(manifest)
    }

    /// The request for `kind`, parsed as the daemon parses it.
    pub fn request(&self, kind: ProofKind) -> anyhow::Result<ProofRequest> {
        let entry = self.kinds.get(&kind).with_context(|| format!("manifest has no {kind} request"))?;
        let path = self.dir.join(&entry.request);
        let text = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        ProofRequest::from_json(&text).with_context(|| format!("{} is not a proof request", path.display()))
    }
}

const MINER_ID: u64 = 1000;
/// PoRep's and SnapDeals' sector; PoSt's sectors are numbered from here.
const SECTOR_NUMBER: u64 = 7;
/// Leaves per period of a [`PeriodicTree`]: 16 KiB of distinct data, a power of every arity in use
/// (2 and 8). Small, because SnapDeals' new replica repeats it once per rho region (1024 at 32 GiB).
const PERIOD: u64 = 1 << 9;

/// Writes a synthetic `Prove` request for each of `kinds` at `sector_size` into `out`
/// (`request-<kind>.json`), and `manifest.json`. All random values come from `seed`.
pub fn generate(
    sector_size: u64,
    kinds: &[ProofKind],
    seed: u64,
    out: &Path,
    progress: &dyn Fn(&str),
) -> anyhow::Result<SyntheticManifest> {
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut manifest = SyntheticManifest {
        synthetic: true,
        warning: WARNING.into(),
        seed,
        sector_size,
        miner_id: MINER_ID,
        kinds: BTreeMap::new(),
        dir: out.to_path_buf(),
    };
    for kind in kinds.iter().copied().collect::<BTreeSet<_>>() {
        let start = Instant::now();
        progress(&format!("{kind}: synthetic inputs for a {} sector", Bytes(sector_size)));
        let made = match shape::registered(kind, sector_size)? {
            Registered::Seal(proof) => with_tree!(sector_size, porep, proof, seed)?,
            Registered::PoSt(proof) => with_tree!(sector_size, post, kind, proof, seed)?,
            Registered::Update(proof) => with_tree!(sector_size, snap, proof, seed)?,
        };
        let bytes = serde_json::to_vec(&made.request)?;
        let file = format!("request-{kind}.json");
        let path = out.join(&file);
        fs::write(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
        let entry = SyntheticKind {
            request: file,
            registered_proof: made.registered_proof,
            partitions: made.partitions,
            challenges_per_partition: made.challenges_per_partition,
            sectors: made.sectors,
            shape: made.shape.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            constraints_per_partition: circuit_size(kind, sector_size).constraints,
            request_bytes: bytes.len() as u64,
            generation_ms: start.elapsed().as_millis() as u64,
        };
        progress(&format!(
            "{kind}: {} partition(s) × {} challenges, {} sector(s): {} request in {:.1} s",
            entry.partitions,
            entry.challenges_per_partition,
            entry.sectors,
            Bytes(entry.request_bytes),
            entry.generation_ms as f64 / 1e3
        ));
        manifest.kinds.insert(kind, entry);
    }
    let path = out.join("manifest.json");
    fs::write(&path, serde_json::to_vec_pretty(&manifest)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(manifest)
}

/// Where `snarkctl` keeps synthetic inputs unless told otherwise: beside the test parameters.
pub fn default_dir(params_dir: &Path, sector_size: u64) -> PathBuf {
    params_dir.join(format!("synthetic-{sector_size}"))
}

/// The manifest in `dir` when it holds every one of `kinds` made from `seed`, else a fresh
/// [`generate`] into it (requests are rewritten, never half-kept).
pub fn ensure(
    sector_size: u64,
    kinds: &[ProofKind],
    seed: u64,
    dir: &Path,
    progress: &dyn Fn(&str),
) -> anyhow::Result<SyntheticManifest> {
    let same = SyntheticManifest::load(dir).ok().filter(|m| m.seed == seed && m.sector_size == sector_size);
    let mut all: BTreeSet<ProofKind> = kinds.iter().copied().collect();
    if let Some(m) = same {
        if all.iter().all(|k| m.kinds.contains_key(k)) {
            progress(&format!("synthetic inputs reused from {}", dir.display()));
            return Ok(m);
        }
        all.extend(m.kinds.keys().copied());
    }
    generate(sector_size, &all.into_iter().collect::<Vec<_>>(), seed, dir, progress)
}

/// One kind's request and the figures the manifest reports about it.
struct Made {
    request: ProofRequest,
    registered_proof: String,
    partitions: usize,
    challenges_per_partition: usize,
    sectors: usize,
    shape: Vec<(&'static str, usize)>,
}

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// PoRep C2: the C1 output of a sector whose comm_d tree is periodic data and whose tree_c and
/// tree_r_last exist only where the challenges and their parents open them.
fn porep<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof, seed: u64) -> anyhow::Result<Made> {
    let config = proof.as_v1_config();
    let pub_params = public_params::<Tree>(&config)?;
    let graph = &pub_params.graph;
    let nodes = graph.size() as u64;
    let layers = pub_params.num_layers;
    let mut rng = stream(seed, ProofKind::PorepC2, 0);
    let ticket = random_bytes(&mut rng);
    let porep_seed = random_bytes(&mut rng);

    let period = PERIOD.min(nodes);
    let data: Vec<Sha256Domain> = (0..period).map(|_| fr32(&mut rng)).collect();
    let tree_d = PeriodicTree::build::<Sha256Hasher>(binary_arities(nodes), 1, period, |_, p| data[p as usize]);
    let comm_d = tree_d.root();

    // What verify_seal derives and the daemon compares with C1's replica id.
    let prover = prover_id::from_miner_id(MINER_ID);
    let replica_id =
        generate_replica_id::<Tree::Hasher, _>(&prover.0, SECTOR_NUMBER, &ticket, comm_d, &config.porep_id);
    let inputs = stacked::PublicInputs::<TreeDomain<Tree>, Sha256Domain> {
        replica_id,
        seed: Some(porep_seed),
        tau: None,
        k: None,
    };
    let partitions = usize::from(config.partitions);
    let challenges: Vec<Vec<usize>> =
        (0..partitions).map(|k| inputs.challenges(&pub_params.challenges, nodes as usize, Some(k))).collect();

    // Every challenged node with its 6 DRG and 8 expander parents, in ascending order: a DRG
    // parent precedes its child, so labelling in this order sees a challenged parent's final label.
    let mut parents: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &c in challenges.iter().flatten() {
        let mut ps = vec![0u32; graph.degree()];
        graph.parents(c, &mut ps)?;
        parents.insert(c as u32, ps);
    }
    let opened: BTreeSet<u32> = parents.iter().flat_map(|(c, ps)| std::iter::once(c).chain(ps)).copied().collect();
    let mut columns: BTreeMap<u32, Vec<TreeDomain<Tree>>> =
        opened.iter().map(|&n| (n, (0..layers).map(|_| fr32(&mut rng)).collect())).collect();
    for layer in 1..=layers {
        for (&c, ps) in &parents {
            let label = label(&replica_id, layer, c, &layer_parents(&columns, ps, layer));
            columns.get_mut(&c).expect("challenged nodes have columns")[layer - 1] = label;
        }
    }

    let column_hashes: Vec<(u64, TreeDomain<Tree>)> = columns
        .par_iter()
        .map(|(&n, rows)| Ok((u64::from(n), Column::<Tree::Hasher>::new(n, rows.clone())?.hash().into())))
        .collect::<anyhow::Result<_>>()?;
    let tree_c = SparseTree::build::<Tree::Hasher>(tree_arities::<Tree>(nodes), column_hashes, &mut rng);
    // The replica node is the last layer's label (the encoding key) plus the data node.
    let replica = parents.keys().map(|&c| {
        let key: Fr = columns[&c][layers - 1].into();
        let data: Fr = tree_d.node(0, u64::from(c)).into();
        (u64::from(c), (key + data).into())
    });
    let tree_r = SparseTree::build::<Tree::Hasher>(tree_arities::<Tree>(nodes), replica.collect(), &mut rng);
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&tree_c.root(), &tree_r.root());

    let column_proof = |n: u32| ColumnProof::new(n, columns[&n].clone(), tree_c.proof(u64::from(n)));
    let vanilla: Vec<Vec<RawVanillaSealProof<Tree>>> = challenges
        .par_iter()
        .map(|partition| {
            partition
                .iter()
                .map(|&c| {
                    let ps = &parents[&(c as u32)];
                    let labeling_proofs: Vec<LabelingProof<Tree::Hasher>> = (1..=layers)
                        .map(|layer| LabelingProof::new(layer as u32, c as u64, layer_parents(&columns, ps, layer)))
                        .collect();
                    RawVanillaSealProof::<Tree> {
                        comm_d_proofs: tree_d.proof(c as u64),
                        comm_r_last_proof: tree_r.proof(c as u64),
                        replica_column_proofs: ReplicaColumnProof {
                            c_x: column_proof(c as u32),
                            drg_parents: ps[..BASE_DEGREE].iter().map(|&p| column_proof(p)).collect(),
                            exp_parents: ps[BASE_DEGREE..].iter().map(|&p| column_proof(p)).collect(),
                        },
                        labeling_proofs,
                        encoding_proof: EncodingProof::new(
                            layers as u32,
                            c as u64,
                            layer_parents(&columns, ps, layers),
                        ),
                    }
                })
                .collect()
        })
        .collect();

    let c1 = SealCommitPhase1Output {
        registered_proof: proof,
        vanilla_proofs: tagged::<Tree>(u64::from(proof.sector_size()), vanilla)?,
        comm_r: repr(comm_r),
        comm_d: repr(comm_d),
        replica_id: convert(replica_id),
        seed: porep_seed,
        ticket,
    };
    Ok(Made {
        request: ProofRequest::PorepC2 {
            c1_output: Base64Bytes(serde_json::to_vec(&c1)?),
            sector_number: SECTOR_NUMBER,
            miner_id: Some(MINER_ID),
            prover_id: None,
        },
        registered_proof: format!("{proof:?}"),
        partitions,
        challenges_per_partition: pub_params.challenges.num_challenges_per_partition(),
        sectors: 1,
        shape: vec![
            ("layers", layers),
            ("drg_parents", BASE_DEGREE),
            ("expander_parents", EXP_DEGREE),
            ("comm_d_path", tree_d.arities.len()),
            ("comm_c_path", tree_c.arities.len()),
            ("comm_r_last_path", tree_r.arities.len()),
        ],
    })
}

/// The parent labels `LabelingProof` hashes for a node in `layer` (1-based): DRG parents from the
/// same layer, expander parents from the one below (none in layer 1), repeated to 37.
fn layer_parents<D: Domain>(columns: &BTreeMap<u32, Vec<D>>, parents: &[u32], layer: usize) -> Vec<D> {
    let drg = parents[..BASE_DEGREE].iter().map(|p| columns[p][layer - 1]);
    let labels: Vec<D> = if layer == 1 {
        drg.collect()
    } else {
        drg.chain(parents[BASE_DEGREE..].iter().map(|p| columns[p][layer - 2])).collect()
    };
    labels.iter().copied().cycle().take(TOTAL_PARENTS).collect()
}

/// A node's label, as `LabelingProof::verify` recomputes it (its `create_label` is private):
/// SHA-256 of the replica id, layer, node and parent labels, trimmed to a field element.
fn label<D: Domain>(replica_id: &D, layer: usize, node: u32, parents: &[D]) -> D {
    let mut preimage = Vec::with_capacity(64 + 32 * parents.len());
    preimage.extend_from_slice(replica_id.as_ref());
    preimage.extend_from_slice(&(layer as u32).to_be_bytes());
    preimage.extend_from_slice(&u64::from(node).to_be_bytes());
    preimage.resize(64, 0);
    for p in parents {
        preimage.extend_from_slice(p.as_ref());
    }
    convert(<Sha256Function as HashFunction<Sha256Domain>>::hash(&preimage))
}

/// C1 tags its vanilla proofs by sector size; filecoin-proofs-api's own conversion (`from_raw`)
/// is private, so this does what it does. The tag follows the sector size, not the tree type:
/// 2 KiB, 8 MiB and 512 MiB sectors share one tree shape.
fn tagged<Tree: 'static + MerkleTreeTrait>(
    sector_size: u64,
    proofs: Vec<Vec<RawVanillaSealProof<Tree>>>,
) -> anyhow::Result<VanillaSealProof> {
    let proofs: Box<dyn Any> = Box::new(proofs);
    macro_rules! tag {
        ($($size:expr, $shape:ty => $variant:ident),*) => {{
            $(if sector_size == $size {
                return match proofs.downcast::<Vec<Vec<RawVanillaSealProof<$shape>>>>() {
                    Ok(p) => Ok(VanillaSealProof::$variant(*p)),
                    Err(_) => bail!("a {} sector's vanilla proofs are not over tree {}", $size, Tree::display()),
                };
            })*
        }};
    }
    tag!(
        2 << 10, SectorShape2KiB => StackedDrg2KiBV1,
        8 << 20, SectorShape8MiB => StackedDrg8MiBV1,
        512 << 20, SectorShape512MiB => StackedDrg512MiBV1,
        32 << 30, SectorShape32GiB => StackedDrg32GiBV1,
        64 << 30, SectorShape64GiB => StackedDrg64GiBV1
    );
    bail!("no C1 vanilla proof tag for {sector_size}-byte sectors")
}

/// WindowPoSt (one full partition of sectors) or WinningPoSt (one sector): each sector's tree_r_last
/// is sparse over the challenges filecoin-proofs derives for it, and its comm_c random.
fn post<Tree: 'static + MerkleTreeTrait>(
    kind: ProofKind,
    proof: RegisteredPoStProof,
    seed: u64,
) -> anyhow::Result<Made> {
    let config = proof.as_v1_config();
    let nodes = u64::from(proof.sector_size()) / NODE_SIZE as u64;
    let mut rng = stream(seed, kind, 0);
    let mut randomness = random_bytes(&mut rng);
    // Lotus clears the top two bits so that the randomness is a field element.
    randomness[31] &= 0x3f;
    let prover = prover_id::from_miner_id(MINER_ID);
    // WindowPoSt: the sectors of one partition; WinningPoSt: its one sector.
    let sectors: Vec<SectorId> = (0..config.sector_count as u64).map(|i| SectorId::from(SECTOR_NUMBER + i)).collect();
    let challenges = generate_fallback_sector_challenges(proof, &randomness, &sectors, prover.0)?;
    let arities = tree_arities::<Tree>(nodes);
    let vanilla_proofs = sectors
        .par_iter()
        .enumerate()
        .map(|(i, &sector_id)| {
            let mut rng = stream(seed, kind, 1 + i as u64);
            let leaves = &challenges[&sector_id];
            let replica = leaves.iter().map(|&c| (c, TreeDomain::<Tree>::random(&mut rng))).collect();
            let tree = SparseTree::build::<Tree::Hasher>(arities.clone(), replica, &mut rng);
            let comm_c = TreeDomain::<Tree>::random(&mut rng);
            let sector = SectorProof {
                inclusion_proofs: leaves.iter().map(|&c| tree.proof(c)).collect(),
                comm_c,
                comm_r_last: tree.root(),
            };
            let proof = FallbackPoStSectorProof::<Tree> {
                sector_id,
                comm_r: <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &tree.root()),
                vanilla_proof: fallback::Proof { sectors: vec![sector] },
            };
            bincode::serialize(&proof).map(Base64Bytes)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let registered_post_proof = PoStProofType(proof);
    let randomness = Bytes32(randomness);
    let request = match kind {
        ProofKind::WindowPost => ProofRequest::WindowPost {
            registered_post_proof,
            randomness,
            miner_id: Some(MINER_ID),
            prover_id: None,
            partition_index: 0,
            vanilla_proofs,
        },
        _ => ProofRequest::WinningPost {
            registered_post_proof,
            randomness,
            miner_id: Some(MINER_ID),
            prover_id: None,
            vanilla_proofs,
        },
    };
    Ok(Made {
        request,
        registered_proof: format!("{proof:?}"),
        partitions: 1,
        challenges_per_partition: sectors.len() * config.challenge_count,
        sectors: sectors.len(),
        shape: vec![("challenges_per_sector", config.challenge_count), ("comm_r_last_path", arities.len())],
    })
}

/// SnapDeals: tree_r_old and tree_d_new are periodic; the new replica node is
/// `old + data · rho(high bits)`, so tree_r_new is periodic within each of the 2^h regions that
/// share a rho. All three roots exist before comm_r_new fixes the challenges.
fn snap<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
    seed: u64,
) -> anyhow::Result<Made> {
    let config = SectorUpdateConfig::from_porep_config(&proof.as_v1_config());
    let pub_params = storage_proofs_update::PublicParams::from_sector_size(u64::from(config.sector_size));
    let nodes = pub_params.sector_nodes as u64;
    let regions = 1u64 << config.h;
    let period = PERIOD.min(nodes / regions);
    let mut rng = stream(seed, ProofKind::SnapDeals, 0);
    let old: Vec<Fr> = (0..period).map(|_| TreeDomain::<Tree>::random(&mut rng).into()).collect();
    let data: Vec<Sha256Domain> = (0..period).map(|_| fr32(&mut rng)).collect();
    let comm_c = TreeDomain::<Tree>::random(&mut rng);

    let r_arities = tree_arities::<Tree>(nodes);
    let tree_r_old = PeriodicTree::build::<TreeRHasher>(r_arities.clone(), 1, period, |_, p| old[p as usize].into());
    let tree_d_new = PeriodicTree::build::<TreeDHasher>(binary_arities(nodes), 1, period, |_, p| data[p as usize]);
    let comm_r_old = <TreeRHasher as Hasher>::Function::hash2(&comm_c, &tree_r_old.root());
    let comm_d_new = tree_d_new.root();
    let phi = phi(&comm_d_new, &comm_r_old);
    let rhos: Vec<Fr> = (0..regions).map(|high| rho(&phi, high as u32)).collect();
    let tree_r_new = PeriodicTree::build::<TreeRHasher>(r_arities, regions, period, |region, p| {
        let data: Fr = data[p as usize].into();
        (old[p as usize] + data * rhos[region as usize]).into()
    });
    let comm_r_new = <TreeRHasher as Hasher>::Function::hash2(&comm_c, &tree_r_new.root());

    let apex_level = pub_params.challenge_bit_len - pub_params.partition_bit_len - pub_params.apex_leaf_bit_len;
    let apex_count = pub_params.apex_leaf_count as u64;
    let vanilla_proofs = (0..pub_params.partition_count)
        .into_par_iter()
        .map(|k| {
            let proof = PartitionProof::<Tree> {
                comm_c,
                apex_leafs: (0..apex_count).map(|i| tree_d_new.node(apex_level, k as u64 * apex_count + i)).collect(),
                challenge_proofs: Challenges::new(pub_params.sector_nodes, comm_r_new, k)
                    .map(|c| ChallengeProof {
                        proof_r_old: tree_r_old.proof(u64::from(c)),
                        proof_d_new: tree_d_new.proof(u64::from(c)),
                        proof_r_new: tree_r_new.proof(u64::from(c)),
                    })
                    .collect(),
            };
            bincode::serialize(&proof).map(Base64Bytes)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Made {
        request: ProofRequest::SnapDeals {
            registered_update_proof: UpdateProofType(proof),
            vanilla_proofs,
            comm_r_old: Bytes32(repr(comm_r_old)),
            comm_r_new: Bytes32(repr(comm_r_new)),
            comm_d_new: Bytes32(repr(comm_d_new)),
        },
        registered_proof: format!("{proof:?}"),
        partitions: pub_params.partition_count,
        challenges_per_partition: pub_params.challenge_count,
        sectors: 1,
        shape: vec![
            ("h", config.h),
            ("apex_leaves", pub_params.apex_leaf_count),
            ("comm_r_old_path", tree_r_old.arities.len()),
            ("comm_d_new_path", tree_d_new.arities.len()),
            ("comm_r_new_path", tree_r_new.arities.len()),
        ],
    })
}

/// A merkle tree of which only some nodes are known; the nodes a proof opens must be.
trait OpenTree<D: Domain> {
    /// The arity of each level, leaves first.
    fn arities(&self) -> &[usize];
    /// Node `index` of `level` (0: the leaves; the root is the one node above the last level).
    fn node(&self, level: usize, index: u64) -> D;

    fn root(&self) -> D {
        self.node(self.arities().len(), 0)
    }

    /// The inclusion proof of `leaf`, as storage-proofs stores one (`from_parts` splits the last
    /// levels off into the sub- and top-tree paths).
    fn proof<H, A, B, C>(&self, leaf: u64) -> MerkleProof<H, A, B, C>
    where
        H: Hasher<Domain = D>,
        A: PoseidonArity,
        B: PoseidonArity,
        C: PoseidonArity,
    {
        let mut path = Vec::with_capacity(self.arities().len());
        let mut index = leaf;
        for (level, &arity) in self.arities().iter().enumerate() {
            let arity = arity as u64;
            let first = index - index % arity;
            let siblings = (first..first + arity).filter(|&i| i != index).map(|i| self.node(level, i)).collect();
            path.push((siblings, (index % arity) as usize));
            index /= arity;
        }
        MerkleProof::from_parts(self.node(0, leaf), self.root(), path)
    }
}

/// One tree node from its children, as `InclusionPath::root` hashes them (neither hasher uses the
/// height).
fn hash_children<H: Hasher>(children: &[H::Domain]) -> H::Domain {
    H::Function::default().multi_node(children, 0)
}

/// The given leaves, random siblings along their paths, and the nodes above them.
struct SparseTree<D> {
    arities: Vec<usize>,
    levels: Vec<BTreeMap<u64, D>>,
}

impl<D: Domain> SparseTree<D> {
    fn build<H: Hasher<Domain = D>>(
        arities: Vec<usize>,
        leaves: Vec<(u64, D)>,
        rng: &mut impl RngCore,
    ) -> SparseTree<D> {
        let mut levels = Vec::with_capacity(arities.len() + 1);
        let mut known: BTreeMap<u64, D> = leaves.into_iter().collect();
        for &arity in &arities {
            let arity = arity as u64;
            let parents: Vec<u64> = known.keys().map(|i| i / arity).collect::<BTreeSet<_>>().into_iter().collect();
            for &p in &parents {
                for i in p * arity..(p + 1) * arity {
                    known.entry(i).or_insert_with(|| D::random(rng));
                }
            }
            let above = parents
                .par_iter()
                .map(|&p| {
                    let children: Vec<D> = (p * arity..(p + 1) * arity).map(|i| known[&i]).collect();
                    (p, hash_children::<H>(&children))
                })
                .collect();
            levels.push(std::mem::replace(&mut known, above));
        }
        levels.push(known);
        SparseTree { arities, levels }
    }
}

impl<D: Domain> OpenTree<D> for SparseTree<D> {
    fn arities(&self) -> &[usize] {
        &self.arities
    }
    fn node(&self, level: usize, index: u64) -> D {
        self.levels[level][&index]
    }
}

/// A full tree whose leaves depend only on their region (`regions` equal runs of leaves) and
/// their position modulo `period`. Every node is then one of few distinct values per level, which
/// are all computed: a node spanning at most `period` leaves depends on its region and its position
/// modulo `period / span`, a larger one within a region only on the region, and one spanning whole
/// regions is distinct. All sizes are powers of two, so these cases cover every node.
struct PeriodicTree<D> {
    arities: Vec<usize>,
    region: u64,
    period: u64,
    /// Per level, the distinct nodes in the order [`PeriodicTree::slot`] numbers them.
    levels: Vec<Vec<D>>,
}

impl<D: Domain> PeriodicTree<D> {
    fn build<H: Hasher<Domain = D>>(
        arities: Vec<usize>,
        regions: u64,
        period: u64,
        leaf: impl Fn(u64, u64) -> D + Sync,
    ) -> PeriodicTree<D> {
        let leaves: u64 = arities.iter().map(|&a| a as u64).product();
        let mut tree = PeriodicTree { region: leaves / regions, period, levels: Vec::new(), arities };
        assert!(tree.region % period == 0, "a region holds whole periods");
        tree.levels.push((0..regions * period).into_par_iter().map(|s| leaf(s / period, s % period)).collect());
        for level in 1..=tree.arities.len() {
            let arity = tree.arities[level - 1] as u64;
            let (span, below) = (tree.span(level), &tree.levels[level - 1]);
            let nodes = (0..tree.slots(level, leaves / span))
                .into_par_iter()
                .map(|slot| {
                    let first = tree.representative(level, slot as u64) * arity;
                    let children: Vec<D> = (first..first + arity).map(|i| below[tree.slot(level - 1, i)]).collect();
                    hash_children::<H>(&children)
                })
                .collect();
            tree.levels.push(nodes);
        }
        tree
    }

    /// Leaves under one node of `level`.
    fn span(&self, level: usize) -> u64 {
        self.arities[..level].iter().map(|&a| a as u64).product()
    }

    /// Distinct nodes per region at `level`, for a level whose nodes lie within one region.
    fn distinct(&self, level: usize) -> u64 {
        (self.period / self.span(level)).max(1)
    }

    /// How many distinct nodes `level` has, given its `width` (node count).
    fn slots(&self, level: usize, width: u64) -> usize {
        if self.span(level) >= self.region {
            width as usize
        } else {
            (width / (self.region / self.span(level)) * self.distinct(level)) as usize
        }
    }

    /// Where node `index` of `level` is stored.
    fn slot(&self, level: usize, index: u64) -> usize {
        let span = self.span(level);
        if span >= self.region {
            return index as usize;
        }
        let per_region = self.region / span;
        let distinct = self.distinct(level);
        ((index / per_region) * distinct + (index % per_region) % distinct) as usize
    }

    /// A node stored in `slot` of `level`.
    fn representative(&self, level: usize, slot: u64) -> u64 {
        let span = self.span(level);
        if span >= self.region {
            return slot;
        }
        let distinct = self.distinct(level);
        (slot / distinct) * (self.region / span) + slot % distinct
    }
}

impl<D: Domain> OpenTree<D> for PeriodicTree<D> {
    fn arities(&self) -> &[usize] {
        &self.arities
    }
    fn node(&self, level: usize, index: u64) -> D {
        self.levels[level][self.slot(level, index)]
    }
}

/// tree_c / tree_r_last of `Tree` over `nodes` leaves: the base trees' levels, then one level each
/// for the sub- and top-tree when the shape has them.
fn tree_arities<Tree: MerkleTreeTrait>(nodes: u64) -> Vec<usize> {
    let base = base_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(nodes as usize);
    let mut arities = vec![Tree::Arity::to_usize(); base];
    arities.extend([Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize()].into_iter().filter(|&a| a > 0));
    arities
}

/// The SHA-256 data trees (comm_d) are binary over all nodes.
fn binary_arities(nodes: u64) -> Vec<usize> {
    vec![2; nodes.trailing_zeros() as usize]
}

/// An independent, reproducible random stream per seed, kind and item, so that items made in
/// parallel do not depend on the order rayon runs them in.
fn stream(seed: u64, kind: ProofKind, item: u64) -> StdRng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8] = kind as u8;
    key[16..24].copy_from_slice(&item.to_le_bytes());
    StdRng::from_seed(key)
}

fn random_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// A random value shaped like SHA-256 output trimmed to a field element (data, labels): the top
/// two bits clear, so always below the modulus.
fn fr32<D: Domain>(rng: &mut impl RngCore) -> D {
    let mut bytes = random_bytes(rng);
    bytes[31] &= 0x3f;
    D::from(bytes)
}

fn convert<A: Domain, B: Domain>(value: A) -> B {
    let fr: Fr = value.into();
    fr.into()
}

fn repr<D: Domain>(value: D) -> [u8; 32] {
    let fr: Fr = value.into();
    fr.to_repr()
}

#[cfg(test)]
mod tests {
    use storage_proofs_core::merkle::MerkleProofTrait;

    use super::*;
    use crate::groth16::{CpuBackend, ProvingBackend};
    use crate::proofs::{self, blank};
    use crate::srs::{PointCheck, ResidentSrs};

    const KIB2: u64 = 2 << 10;

    fn params_dir() -> PathBuf {
        std::env::var_os("SNARKD_TEST_PARAMS")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/var/tmp/snarkd-test-params"))
    }

    fn timed_generate(sector_size: u64, kinds: &[ProofKind], dir: &Path) -> SyntheticManifest {
        let start = Instant::now();
        let manifest = generate(sector_size, kinds, 1, dir, &|line| eprintln!("{line}")).expect("generate");
        eprintln!("generated {kinds:?} for {} in {:.1?}", Bytes(sector_size), start.elapsed());
        manifest
    }

    /// The synthetic 2 KiB requests pass the daemon's checks and make the same circuits as a real
    /// sealed sector: same parameters, same counts, and every constraint satisfied.
    #[test]
    fn circuits_match_a_real_2kib_sector() {
        let real = crate::tools::ensure_testdata(&params_dir(), KIB2).expect("2 KiB testdata");
        let dir = tempfile::tempdir().expect("tempdir");
        let synthetic = timed_generate(KIB2, &ProofKind::ALL, dir.path());
        assert!(synthetic.synthetic);
        assert_eq!(SyntheticManifest::load(dir.path()).expect("manifest"), synthetic);
        for kind in ProofKind::ALL {
            let request = synthetic.request(kind).expect("request parses");
            let reference = real.request(kind).expect("real request");
            let ours = proofs::prepare(&request).unwrap_or_else(|e| panic!("{kind}: rejected: {e}"));
            let theirs = proofs::prepare(&reference).expect("real request prepares");
            assert_eq!(ours.circuit(), theirs.circuit(), "{kind}");
            assert_eq!(ours.partitions(), theirs.partitions(), "{kind}");
            assert_eq!(ours.partitions(), synthetic.kinds[&kind].partitions, "{kind}");
            for partition in 0..ours.partitions() {
                let size = proofs::measure(&request, partition).expect("measure");
                assert_eq!(size, proofs::measure(&reference, partition).expect("measure"), "{kind} {partition}");
                proofs::check_circuit(&request, partition).unwrap_or_else(|e| panic!("{kind} {partition}: {e}"));
                let w = ours.synthesize(partition).expect("synthesis");
                let v = theirs.synthesize(partition).expect("synthesis");
                assert_eq!((w.a.len(), w.input.len(), w.aux.len()), (v.a.len(), v.input.len(), v.aux.len()), "{kind}");
            }
        }
    }

    #[test]
    fn the_seed_fixes_every_byte() {
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().expect("tempdir")).collect();
        for (dir, seed) in dirs.iter().zip([7, 7, 8]) {
            generate(KIB2, &ProofKind::ALL, seed, dir.path(), &|_| {}).expect("generate");
        }
        for kind in ProofKind::ALL {
            let read = |i: usize| fs::read(dirs[i].path().join(format!("request-{kind}.json"))).expect("request");
            assert_eq!(read(0), read(1), "{kind}");
            assert_ne!(read(0), read(2), "{kind}");
        }
    }

    /// What the daemon does after its checks: synthesis, proving (snarkd's CPU backend) and the
    /// verify stage, which accepts the synthetic proofs.
    fn prove_and_verify(kinds: &[ProofKind]) {
        crate::tools::paramgen::generate(KIB2, kinds, &params_dir(), &|line| eprintln!("{line}")).expect("parameters");
        let dir = tempfile::tempdir().expect("tempdir");
        let manifest = generate(KIB2, kinds, 3, dir.path(), &|_| {}).expect("generate");
        let resident = ResidentSrs::new(params_dir(), PointCheck::None);
        let verifier = crate::engine::assembly::groth16_verifier();
        for &kind in kinds {
            let statement = proofs::prepare(&manifest.request(kind).expect("request")).expect("prepare");
            let (srs, _) = resident.get_or_load(&statement.circuit()).expect("2 KiB parameters");
            let proofs: Vec<_> = (0..statement.partitions())
                .map(|p| {
                    CpuBackend::new()
                        .prove(statement.synthesize(p).expect("synthesis"), &srs, &|_| {})
                        .expect("prove")
                        .0
                })
                .collect();
            assert!(verifier(statement.as_ref(), &srs, &proofs).expect("verify"), "{kind}");
        }
    }

    #[test]
    fn post_proofs_verify_at_2kib() {
        prove_and_verify(&[ProofKind::WindowPost, ProofKind::WinningPost]);
    }

    #[test]
    #[ignore = "loads 1.8 GB of parameters and proves 4.4 M constraints: about 3 minutes on 2 cores"]
    fn porep_and_snap_proofs_verify_at_2kib() {
        prove_and_verify(&[ProofKind::PorepC2, ProofKind::SnapDeals]);
    }

    /// Expected figures at one sector size, from filecoin-proofs' constants rather than this module.
    struct Expected {
        sector_size: u64,
        /// Levels of the binary SHA-256 data trees: log2 of the sector's nodes.
        comm_d_path: usize,
        /// Levels of tree_c / tree_r_last: base levels plus the sub- and top-tree levels.
        tree_r_path: usize,
        window_sectors: usize,
    }

    /// Every request passes the daemon's checks (which verify each vanilla proof against its
    /// commitments and challenges), and its decoded vanilla proofs have the published shape.
    fn check_shapes<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        expected: Expected,
        dir: &Path,
    ) -> SyntheticManifest {
        let Expected { sector_size, comm_d_path, tree_r_path, window_sectors } = expected;
        let manifest = timed_generate(sector_size, &ProofKind::ALL, dir);
        for kind in ProofKind::ALL {
            let request = manifest.request(kind).expect("request");
            let start = Instant::now();
            let statement = proofs::prepare(&request).unwrap_or_else(|e| panic!("{kind}: rejected: {e}"));
            eprintln!("{kind}: daemon checks passed in {:.1?}", start.elapsed());
            assert_eq!(statement.partitions(), manifest.kinds[&kind].partitions, "{kind}");
            assert_eq!(statement.circuit(), blank::circuit_id(kind, sector_size).expect("circuit id"), "{kind}");
        }

        // PoRep: 176 challenges over 10 partitions, 18 per partition; 11 layers, 6 + 8 parents.
        let ProofRequest::PorepC2 { c1_output, .. } = manifest.request(ProofKind::PorepC2).expect("request") else {
            unreachable!("a PoRep request")
        };
        let c1: SealCommitPhase1Output = serde_json::from_slice(&c1_output.0).expect("C1 JSON");
        let porep: Vec<Vec<RawVanillaSealProof<Tree>>> = c1.vanilla_proofs.try_into().expect("vanilla proofs");
        assert_eq!(porep.len(), 10);
        assert!(porep.iter().all(|p| p.len() == 18));
        for proof in porep.iter().flatten() {
            assert_eq!(proof.comm_d_proofs.path().len(), comm_d_path);
            assert_eq!(proof.comm_r_last_proof.path().len(), tree_r_path);
            let columns = &proof.replica_column_proofs;
            assert_eq!((columns.drg_parents.len(), columns.exp_parents.len()), (6, 8));
            for column in std::iter::once(&columns.c_x).chain(&columns.drg_parents).chain(&columns.exp_parents) {
                assert!(column.get_node_at_layer(11).is_ok());
            }
            assert_eq!(proof.labeling_proofs.len(), 11);
        }

        // WindowPoSt: one partition of sectors, 10 challenges each; WinningPoSt: 66 in one sector.
        for (kind, sectors, challenges) in
            [(ProofKind::WindowPost, window_sectors, 10), (ProofKind::WinningPost, 1, 66)]
        {
            let request = manifest.request(kind).expect("request");
            let (ProofRequest::WindowPost { vanilla_proofs, .. } | ProofRequest::WinningPost { vanilla_proofs, .. }) =
                &request
            else {
                unreachable!("a PoSt request")
            };
            assert_eq!(vanilla_proofs.len(), sectors, "{kind}");
            for bytes in vanilla_proofs {
                let proof: FallbackPoStSectorProof<Tree> = bincode::deserialize(&bytes.0).expect("sector proof");
                let [sector] = &proof.vanilla_proof.sectors[..] else { panic!("{kind}: one sector per proof") };
                assert_eq!(sector.inclusion_proofs.len(), challenges, "{kind}");
                assert!(sector.inclusion_proofs.iter().all(|p| p.path().len() == tree_r_path), "{kind}");
            }
        }

        // SnapDeals: 16 partitions of 86 challenges, 128 apex leaves.
        let ProofRequest::SnapDeals { vanilla_proofs, .. } = manifest.request(ProofKind::SnapDeals).expect("request")
        else {
            unreachable!("a SnapDeals request")
        };
        assert_eq!(vanilla_proofs.len(), 16);
        for bytes in &vanilla_proofs {
            let proof: PartitionProof<Tree> = bincode::deserialize(&bytes.0).expect("partition proof");
            assert_eq!((proof.challenge_proofs.len(), proof.apex_leafs.len()), (86, 128));
            for c in &proof.challenge_proofs {
                let paths = (c.proof_r_old.path().len(), c.proof_d_new.path().len(), c.proof_r_new.path().len());
                assert_eq!(paths, (tree_r_path, comm_d_path, tree_r_path));
            }
        }
        manifest
    }

    /// 32 GiB: base arity 8 over 8 sub-trees; WinningPoSt's circuit counted against the blank one.
    #[test]
    fn shapes_at_32gib() {
        let expected = Expected { sector_size: 32 << 30, comm_d_path: 30, tree_r_path: 10, window_sectors: 2349 };
        let dir = tempfile::tempdir().expect("tempdir");
        let manifest = check_shapes::<SectorShape32GiB>(expected, dir.path());
        let request = manifest.request(ProofKind::WinningPost).expect("request");
        let size = proofs::measure(&request, 0).expect("measure");
        eprintln!("winning_post 32 GiB: {size:?}");
        assert_eq!(size, blank::blank_circuit_size(ProofKind::WinningPost, 32 << 30).expect("blank count"));
    }

    /// 64 GiB: the top tree of arity 2 adds a level.
    #[test]
    fn shapes_at_64gib() {
        let expected = Expected { sector_size: 64 << 30, comm_d_path: 31, tree_r_path: 11, window_sectors: 2300 };
        check_shapes::<SectorShape64GiB>(expected, tempfile::tempdir().expect("tempdir").path());
    }

    /// The big circuits counted at 32 GiB against snarkd's size table (no witness is kept).
    #[test]
    #[ignore = "counts 337 M constraints: about 8 minutes on 2 cores"]
    fn constraint_counts_at_32gib() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kinds = [ProofKind::PorepC2, ProofKind::WindowPost, ProofKind::SnapDeals];
        let manifest = timed_generate(32 << 30, &kinds, dir.path());
        for kind in kinds {
            let start = Instant::now();
            let size = proofs::measure(&manifest.request(kind).expect("request"), 0).expect("measure");
            eprintln!("{kind} 32 GiB partition 0: {size:?} counted in {:.1?}", start.elapsed());
            let table = circuit_size(kind, 32 << 30);
            assert_eq!((size.constraints, size.inputs), (table.constraints, table.inputs), "{kind}");
        }
    }
}
