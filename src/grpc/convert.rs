//! Between cuzk's protobuf messages and snarkd's own types: a `SubmitProofRequest` in Curio's
//! field layout becomes a typed [`ProofRequest`] (never JSON), snarkd's errors become gRPC
//! statuses, and jobs, queues, devices and resident parameters become cuzk's replies.
//!
//! Names follow cuzk's server where it has them: queues and a GPU's current proof are
//! `porep-c2`, `snap-update`, `window-post`, `winning-post`; circuits are `porep-32g`,
//! `snap-2k`, `wpost-512m`, `winning-8m`.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use filecoin_proofs_api::RegisteredSealProof;
use serde::Deserialize;
use tonic::{Code, Status};

use super::cid::{self, Commitment};
use super::pb;
use crate::engine::metrics::Finished;
use crate::engine::{DeviceStatus, EngineStatus, JobId, JobInfo, JobState, Priority, SubmitOptions};
use crate::error::{ErrorCode, SnarkError};
use crate::proofs::shape::SECTOR_SIZES;
use crate::proofs::{Base64Bytes, Bytes32, PoStProofType, ProofKind, ProofRequest, Statement, UpdateProofType};
use crate::rpc::errors::named;
use crate::srs::{CircuitId, SrsStatus};

/// The longest `request_id` accepted, as over JSON-RPC.
const MAX_REQUEST_ID: usize = 256;

/// The gRPC code each snarkd error travels as. `unsupported` is UNIMPLEMENTED (this build does not
/// prove that kind, size or feature); `verification_failed` is INTERNAL (a proof was computed and
/// did not check: the inputs or the prover are wrong, and no data was lost).
pub const fn code(e: ErrorCode) -> Code {
    match e {
        ErrorCode::BadInput => Code::InvalidArgument,
        ErrorCode::Unsupported => Code::Unimplemented,
        ErrorCode::ParamsMissing => Code::FailedPrecondition,
        ErrorCode::QueueFull => Code::ResourceExhausted,
        ErrorCode::Draining => Code::Unavailable,
        ErrorCode::NotFound => Code::NotFound,
        ErrorCode::Cancelled => Code::Cancelled,
        ErrorCode::VerificationFailed => Code::Internal,
        ErrorCode::PermissionDenied => Code::PermissionDenied,
        ErrorCode::Internal => Code::Internal,
    }
}

/// `e` as a gRPC status whose message starts with the error's name (`bad_input: randomness: …`).
pub fn status(e: SnarkError) -> Status {
    Status::new(code(e.code), named(e.code, &e.message))
}

/// cuzk's name for a kind's queue and for the proof a GPU is working on.
pub const fn cuzk_kind(kind: ProofKind) -> &'static str {
    match kind {
        ProofKind::PorepC2 => "porep-c2",
        ProofKind::SnapDeals => "snap-update",
        ProofKind::WindowPost => "window-post",
        ProofKind::WinningPost => "winning-post",
    }
}

/// The prefix of cuzk's circuit names.
const fn circuit_prefix(kind: ProofKind) -> &'static str {
    match kind {
        ProofKind::PorepC2 => "porep",
        ProofKind::SnapDeals => "snap",
        ProofKind::WindowPost => "wpost",
        ProofKind::WinningPost => "winning",
    }
}

/// The size suffix of cuzk's circuit names, in [`SECTOR_SIZES`] order.
const SIZE_SUFFIXES: [&str; 5] = ["2k", "8m", "512m", "32g", "64g"];

/// A circuit name as Preload/Evict take it, in the form [`crate::proofs::circuit_id_for`]
/// resolves: cuzk's `porep-32g` becomes `porep_c2:32g`; snarkd's `<kind>:<size>` and cache
/// identifiers pass through.
pub fn circuit_name(name: &str) -> String {
    let parsed = name.split_once('-').and_then(|(prefix, size)| {
        let kind = ProofKind::ALL.into_iter().find(|k| circuit_prefix(*k) == prefix)?;
        SIZE_SUFFIXES.contains(&size).then(|| format!("{}:{size}", kind.name()))
    });
    parsed.unwrap_or_else(|| name.to_string())
}

/// cuzk's name for resident parameters, or the cache identifier for a circuit it has no name for.
fn cuzk_circuit(id: &CircuitId) -> String {
    static NAMES: OnceLock<HashMap<CircuitId, String>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let mut names = HashMap::new();
        for kind in ProofKind::ALL {
            for (size, suffix) in SECTOR_SIZES.into_iter().zip(SIZE_SUFFIXES) {
                if let Ok(id) = crate::proofs::blank::circuit_id(kind, size) {
                    names.insert(id, format!("{}-{suffix}", circuit_prefix(kind)));
                }
            }
        }
        names
    });
    names.get(id).cloned().unwrap_or_else(|| id.0.clone())
}

/// Every RegisteredSealProof at the index go-state-types numbers it with (the enum is
/// append-only, so declaration order is the numbering).
const SEAL_PROOFS: [RegisteredSealProof; 20] = {
    use RegisteredSealProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ]
};

fn kind_of(proof_kind: i32) -> Result<ProofKind, SnarkError> {
    match pb::ProofKind::try_from(proof_kind) {
        Ok(pb::ProofKind::PorepSealCommit) => Ok(ProofKind::PorepC2),
        Ok(pb::ProofKind::SnapDealsUpdate) => Ok(ProofKind::SnapDeals),
        Ok(pb::ProofKind::WindowPostPartition) => Ok(ProofKind::WindowPost),
        Ok(pb::ProofKind::WinningPost) => Ok(ProofKind::WinningPost),
        Ok(pb::ProofKind::Unspecified) => Err(SnarkError::bad_input(
            "proof_kind: unspecified; set POREP_SEAL_COMMIT, SNAP_DEALS_UPDATE, WINDOW_POST_PARTITION or WINNING_POST",
        )),
        Err(_) => Err(SnarkError::bad_input(format!("proof_kind: unknown value {proof_kind}"))),
    }
}

/// The protobuf name of `kind`, for messages.
fn wire_kind(kind: ProofKind) -> &'static str {
    match kind {
        ProofKind::PorepC2 => pb::ProofKind::PorepSealCommit,
        ProofKind::SnapDeals => pb::ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost => pb::ProofKind::WindowPostPartition,
        ProofKind::WinningPost => pb::ProofKind::WinningPost,
    }
    .as_str_name()
}

/// Checks and decodes `req` into the statement the engine proves and its options. Decodes the
/// C1 output and the vanilla proofs, so it costs up to seconds: run it off the connection task.
pub fn prepare(req: pb::SubmitProofRequest) -> Result<(Box<dyn Statement>, SubmitOptions), SnarkError> {
    let kind = kind_of(req.proof_kind)?;
    let options = options(&req)?;
    let request = proof_request(req, kind)?;
    let statement = crate::proofs::prepare(&request).map_err(wire_field_names)?;
    Ok((statement, options))
}

fn options(req: &pb::SubmitProofRequest) -> Result<SubmitOptions, SnarkError> {
    let request_id = match req.request_id.len() {
        0 => None,
        n if n > MAX_REQUEST_ID => {
            return Err(SnarkError::bad_input(format!("request_id: {n} bytes, at most {MAX_REQUEST_ID}")))
        }
        _ => Some(req.request_id.clone()),
    };
    let priority = match pb::Priority::try_from(req.priority) {
        Ok(pb::Priority::Unspecified) => None,
        Ok(pb::Priority::Low) => Some(Priority::Low),
        Ok(pb::Priority::Normal) => Some(Priority::Normal),
        Ok(pb::Priority::High) => Some(Priority::High),
        Ok(pb::Priority::Critical) => Some(Priority::Critical),
        Err(_) => return Err(SnarkError::bad_input(format!("priority: unknown value {}", req.priority))),
    };
    Ok(SubmitOptions { request_id, priority })
}

/// The request in snarkd's terms, once the fields agree with `kind` and with each other.
fn proof_request(req: pb::SubmitProofRequest, kind: ProofKind) -> Result<ProofRequest, SnarkError> {
    fields_fit(&req, kind)?;
    let vanilla_proofs = |req: pb::SubmitProofRequest, what: &str| {
        if req.vanilla_proofs.is_empty() {
            return Err(SnarkError::bad_input(format!("vanilla_proofs: empty; {} takes one {what} each", wire_kind(kind))));
        }
        Ok(req.vanilla_proofs.into_iter().map(Base64Bytes).collect::<Vec<_>>())
    };
    match kind {
        ProofKind::PorepC2 => {
            let n = req.registered_proof;
            let seal = usize::try_from(n).ok().and_then(|i| SEAL_PROOFS.get(i)).copied().ok_or_else(|| {
                SnarkError::bad_input(format!("registered_proof: {n} is not a RegisteredSealProof (0-19)"))
            })?;
            sector_size_fits(req.sector_size, u64::from(seal.sector_size()), n)?;
            let (c1, in_c1) = c1_output(req.vanilla_proof, req.sector_number, req.sector_size)?;
            if in_c1 != seal {
                return Err(SnarkError::bad_input(format!(
                    "registered_proof: {n} is {seal:?}, but vanilla_proof is the C1 output of a {in_c1:?} sector"
                )));
            }
            Ok(ProofRequest::PorepC2 {
                c1_output: Base64Bytes(c1),
                sector_number: req.sector_number,
                miner_id: Some(req.miner_id),
                prover_id: None,
            })
        }
        ProofKind::WindowPost | ProofKind::WinningPost => {
            let n = req.registered_proof;
            let proof = PoStProofType::from_number(n).ok_or_else(|| {
                SnarkError::bad_input(format!("registered_proof: {n} is not a RegisteredPoStProof (0-14)"))
            })?;
            sector_size_fits(req.sector_size, u64::from(proof.0.sector_size()), n)?;
            let randomness = bytes32("randomness", &req.randomness)?;
            let (miner_id, partition_index) = (Some(req.miner_id), req.partition_index);
            let vanilla_proofs = vanilla_proofs(req, "bincode FallbackPoStSectorProof per sector")?;
            Ok(match kind {
                ProofKind::WindowPost => ProofRequest::WindowPost {
                    registered_post_proof: proof,
                    randomness,
                    miner_id,
                    prover_id: None,
                    partition_index: partition_index as usize,
                    vanilla_proofs,
                },
                _ => ProofRequest::WinningPost { registered_post_proof: proof, randomness, miner_id, prover_id: None, vanilla_proofs },
            })
        }
        ProofKind::SnapDeals => {
            let n = req.registered_proof;
            let proof = UpdateProofType::from_number(n).ok_or_else(|| {
                SnarkError::bad_input(format!("registered_proof: {n} is not a RegisteredUpdateProof (0-4)"))
            })?;
            sector_size_fits(req.sector_size, u64::from(proof.0.sector_size()), n)?;
            let comm_r_old = cid::commitment("comm_r_old", &req.comm_r_old, Commitment::Sealed)?;
            let comm_r_new = cid::commitment("comm_r_new", &req.comm_r_new, Commitment::Sealed)?;
            let comm_d_new = cid::commitment("comm_d_new", &req.comm_d_new, Commitment::Unsealed)?;
            let vanilla_proofs = vanilla_proofs(req, "bincode PartitionProof per partition")?;
            Ok(ProofRequest::SnapDeals { registered_update_proof: proof, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new })
        }
    }
}

/// Refuses fields that belong to another kind, so that a request sent with the wrong
/// `proof_kind` is named as such instead of failing deep in decoding.
fn fields_fit(req: &pb::SubmitProofRequest, kind: ProofKind) -> Result<(), SnarkError> {
    use ProofKind::*;
    let fields: [(&str, bool, &[ProofKind]); 7] = [
        ("vanilla_proof", !req.vanilla_proof.is_empty(), &[PorepC2]),
        ("vanilla_proofs", !req.vanilla_proofs.is_empty(), &[WindowPost, WinningPost, SnapDeals]),
        ("randomness", !req.randomness.is_empty(), &[WindowPost, WinningPost]),
        ("partition_index", req.partition_index != 0, &[WindowPost]),
        ("comm_r_old", !req.comm_r_old.is_empty(), &[SnapDeals]),
        ("comm_r_new", !req.comm_r_new.is_empty(), &[SnapDeals]),
        ("comm_d_new", !req.comm_d_new.is_empty(), &[SnapDeals]),
    ];
    if let Some((name, _, takers)) = fields.iter().find(|(_, set, takers)| *set && !takers.contains(&kind)) {
        let takers: Vec<_> = takers.iter().map(|k| wire_kind(*k)).collect();
        return Err(SnarkError::bad_input(format!(
            "{name}: set, but proof_kind {} does not take it (only {})",
            wire_kind(kind),
            takers.join(", ")
        )));
    }
    if kind == PorepC2 && req.vanilla_proof.is_empty() {
        return Err(SnarkError::bad_input("vanilla_proof: empty; POREP_SEAL_COMMIT takes the C1 output JSON"));
    }
    Ok(())
}

fn sector_size_fits(given: u64, of_proof: u64, registered_proof: u64) -> Result<(), SnarkError> {
    if given != 0 && given != of_proof {
        return Err(SnarkError::bad_input(format!(
            "sector_size: {given} bytes, but registered_proof {registered_proof} is for {of_proof}-byte sectors"
        )));
    }
    Ok(())
}

fn bytes32(name: &str, bytes: &[u8]) -> Result<Bytes32, SnarkError> {
    <[u8; 32]>::try_from(bytes)
        .map(Bytes32)
        .map_err(|_| SnarkError::bad_input(format!("{name}: expected 32 bytes, got {}", bytes.len())))
}

/// What a first pass reads of `vanilla_proof`: the proof type of a raw C1 output, or the fields
/// of Curio's wrapper. Everything else is skipped without being kept.
#[derive(Deserialize)]
struct C1Head {
    registered_proof: Option<RegisteredSealProof>,
    #[serde(rename = "Phase1Out")]
    phase1_out: Option<Base64Bytes>,
    #[serde(rename = "SectorNum")]
    sector_num: Option<u64>,
    #[serde(rename = "SectorSize")]
    sector_size: Option<u64>,
}

fn c1_head(field: &str, json: &[u8]) -> Result<C1Head, SnarkError> {
    serde_json::from_slice(json).map_err(|e| {
        let what = if e.is_eof() { "truncated JSON" } else { "not a C1 output" };
        SnarkError::bad_input(format!("{field}: {what} at line {} column {}: {e}", e.line(), e.column()))
    })
}

/// The C1 output JSON in `vanilla_proof` and the proof type it records: the raw
/// `SealCommitPhase1Output` current Curio sends, or the `{"SectorNum", "Phase1Out" (base64),
/// "SectorSize"}` wrapper of cuzk's own clients and older Curio, whose numbers must agree with
/// the request's.
fn c1_output(vanilla_proof: Vec<u8>, sector_number: u64, sector_size: u64) -> Result<(Vec<u8>, RegisteredSealProof), SnarkError> {
    let head = c1_head("vanilla_proof", &vanilla_proof)?;
    let Some(inner) = head.phase1_out else {
        let proof = head.registered_proof.ok_or_else(|| {
            SnarkError::bad_input("vanilla_proof: neither a C1 output (no registered_proof) nor Curio's {\"Phase1Out\": …} wrapper")
        })?;
        return Ok((vanilla_proof, proof));
    };
    if let Some(n) = head.sector_num.filter(|n| *n != sector_number) {
        return Err(SnarkError::bad_input(format!(
            "vanilla_proof: the Phase1Out wrapper is for sector {n}, but sector_number is {sector_number}"
        )));
    }
    if let Some(s) = head.sector_size.filter(|s| sector_size != 0 && *s != sector_size) {
        return Err(SnarkError::bad_input(format!(
            "vanilla_proof: the Phase1Out wrapper says SectorSize {s}, but sector_size is {sector_size}"
        )));
    }
    let proof = c1_head("vanilla_proof.Phase1Out", &inner.0)?
        .registered_proof
        .ok_or_else(|| SnarkError::bad_input("vanilla_proof.Phase1Out: not a C1 output (no registered_proof)"))?;
    Ok((inner.0, proof))
}

/// Errors from [`crate::proofs::prepare`] name JSON-RPC's fields; these are their gRPC names.
fn wire_field_names(mut e: SnarkError) -> SnarkError {
    const RENAMES: [(&str, &str); 3] =
        [("c1_output", "vanilla_proof"), ("registered_post_proof", "registered_proof"), ("registered_update_proof", "registered_proof")];
    for (json, grpc) in RENAMES {
        if let Some(rest) = e.message.strip_prefix(json).filter(|r| r.starts_with(':')) {
            e.message = format!("{grpc}{rest}");
            break;
        }
    }
    e
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// A job's reply with its timings; partition stages are summed over partitions, as in `Snark.Job`.
fn reply(info: &JobInfo, status: pb::await_proof_response::Status) -> pb::AwaitProofResponse {
    let t = &info.timings;
    pb::AwaitProofResponse {
        job_id: info.job_id.0.clone(),
        status: status as i32,
        proof: vec![],
        error_message: String::new(),
        queue_wait_ms: millis(t.queue),
        srs_load_ms: millis(t.params_load),
        synthesis_ms: millis(t.synthesis),
        gpu_compute_ms: millis(t.prove),
        total_ms: millis(t.total),
    }
}

pub fn completed(info: &JobInfo, proof: Vec<u8>) -> pb::AwaitProofResponse {
    pb::AwaitProofResponse { proof, ..reply(info, pb::await_proof_response::Status::Completed) }
}

/// A wait that ended before the job did; the job goes on.
pub fn timed_out(info: &JobInfo) -> pb::AwaitProofResponse {
    reply(info, pb::await_proof_response::Status::Timeout)
}

/// A job that ended with `e`: CANCELLED for a cancel or the drain, FAILED otherwise. `info` is
/// absent when the job's record expired in between; the reply then has no timings.
pub fn ended(id: &JobId, e: &SnarkError, info: Option<&JobInfo>) -> pb::AwaitProofResponse {
    use pb::await_proof_response::Status;
    let status = if e.code == ErrorCode::Cancelled { Status::Cancelled } else { Status::Failed };
    let base = match info {
        Some(info) => reply(info, status),
        None => pb::AwaitProofResponse { job_id: id.0.clone(), status: status as i32, ..Default::default() },
    };
    pb::AwaitProofResponse { error_message: named(e.code, &e.message), ..base }
}

/// SubmitProof's reply. The queue position is the job's 1-based place among all queued jobs
/// (every kind shares the synthesis queue): those of its priority or higher, itself included;
/// 0 once it has started.
pub fn submitted(info: &JobInfo, engine: &EngineStatus) -> pb::SubmitProofResponse {
    let queue_position = if info.state == JobState::Queued {
        let ahead: usize = engine
            .queues
            .iter()
            .flat_map(|q| Priority::ALL.into_iter().filter(|p| *p <= info.priority).map(|p| q.queued.get(p.name()).copied().unwrap_or(0)))
            .sum();
        u32::try_from(ahead).unwrap_or(u32::MAX)
    } else {
        0
    };
    pb::SubmitProofResponse { job_id: info.job_id.0.clone(), queue_position, assigned_gpu: info.device.clone().unwrap_or_default() }
}

/// The CUDA ordinal in a GPU backend's name, "cuda:0 (NVIDIA H200)" (`gpu::device` writes it);
/// None for the CPU backend, which GetStatus does not list as a GPU.
fn cuda_ordinal(name: &str) -> Option<u32> {
    let digits: String = name.strip_prefix("cuda:")?.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn gpu(device: &DeviceStatus, kind_of_job: &dyn Fn(&JobId) -> Option<ProofKind>) -> Option<pb::GpuStatus> {
    let ordinal = cuda_ordinal(&device.name)?;
    let current = device.current_job.clone().map(JobId);
    Some(pb::GpuStatus {
        ordinal,
        name: device.name.clone(),
        vram_total_bytes: device.memory.map_or(0, |m| m.total.get()),
        vram_free_bytes: device.memory.map_or(0, |m| m.free.get()),
        current_proof_kind: current.as_ref().and_then(kind_of_job).map(cuzk_kind).unwrap_or_default().to_string(),
        current_job_id: current.map(|id| id.0).unwrap_or_default(),
    })
}

/// GetStatus's reply. Resident parameters are all HOT with `ref_count` 0 (snarkd does not count
/// the proofs holding them); the pinned-memory fields carry the witness budget (reserved and
/// limit), the memory snarkd holds for proofs in flight, as it keeps no pinned pool.
pub fn status_reply(
    engine: &EngineStatus,
    resident: &[SrsStatus],
    kind_of_job: &dyn Fn(&JobId) -> Option<ProofKind>,
    finished: Finished,
    uptime: Duration,
) -> pb::GetStatusResponse {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    pb::GetStatusResponse {
        gpus: engine.devices.iter().filter_map(|d| gpu(d, kind_of_job)).collect(),
        loaded_srs: resident
            .iter()
            .map(|s| pb::SrsStatus {
                circuit_id: cuzk_circuit(&s.id),
                tier: pb::srs_status::Tier::Hot as i32,
                size_bytes: s.bytes.get(),
                ref_count: 0,
            })
            .collect(),
        queues: engine
            .queues
            .iter()
            .map(|q| pb::QueueStatus {
                proof_kind: cuzk_kind(q.kind).to_string(),
                pending: count(q.queued.values().sum()),
                in_progress: count(q.running),
            })
            .collect(),
        total_proofs_completed: finished.completed,
        total_proofs_failed: finished.failed,
        uptime_seconds: uptime.as_secs(),
        pinned_memory_bytes: engine.budget.reserved.get(),
        pinned_memory_limit_bytes: engine.budget.limit.get(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(kind: pb::ProofKind) -> pb::SubmitProofRequest {
        pb::SubmitProofRequest { proof_kind: kind as i32, ..Default::default() }
    }

    fn err(req: pb::SubmitProofRequest) -> String {
        let kind = kind_of(req.proof_kind);
        kind.and_then(|k| proof_request(req, k)).unwrap_err().message
    }

    #[test]
    fn seal_numbering_is_declaration_order() {
        for (i, p) in SEAL_PROOFS.iter().enumerate() {
            assert_eq!(*p as usize, i);
        }
    }

    #[test]
    fn every_error_keeps_its_name_and_has_a_code() {
        let s = status(SnarkError::bad_input("randomness: expected 32 bytes, got 3"));
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(s.message(), "bad_input: randomness: expected 32 bytes, got 3");
        assert_eq!(code(ErrorCode::Draining), Code::Unavailable);
        assert_eq!(code(ErrorCode::QueueFull), Code::ResourceExhausted);
        assert_eq!(code(ErrorCode::ParamsMissing), Code::FailedPrecondition);
    }

    #[test]
    fn fields_of_another_kind_are_named() {
        let mut r = request(pb::ProofKind::WindowPostPartition);
        r.vanilla_proof = b"{}".to_vec();
        assert!(err(r).starts_with("vanilla_proof: set, but proof_kind WINDOW_POST_PARTITION"));
        let mut r = request(pb::ProofKind::WindowPostPartition);
        r.registered_proof = 10;
        r.randomness = vec![1; 32];
        assert!(err(r).starts_with("vanilla_proofs: empty; WINDOW_POST_PARTITION"));
        let mut r = request(pb::ProofKind::WinningPost);
        r.partition_index = 3;
        assert!(err(r).starts_with("partition_index: set"));
        assert!(err(request(pb::ProofKind::Unspecified)).starts_with("proof_kind: unspecified"));
        assert!(err(request(pb::ProofKind::PorepSealCommit)).starts_with("vanilla_proof: empty"));
    }

    #[test]
    fn randomness_and_sector_size_are_checked() {
        let mut r = request(pb::ProofKind::WinningPost);
        r.vanilla_proofs = vec![vec![0]];
        r.randomness = vec![1; 31];
        assert_eq!(err(r.clone()), "randomness: expected 32 bytes, got 31");
        r.randomness = vec![1; 32];
        r.sector_size = 34359738368;
        assert!(err(r).starts_with("sector_size: 34359738368 bytes, but registered_proof 0 is for 2048-byte sectors"));
    }

    #[test]
    fn the_c1_wrapper_must_agree_with_the_request() {
        use base64::Engine as _;
        let inner = br#"{"registered_proof":"StackedDrg2KiBV1_1","vanilla_proofs":{}}"#;
        let wrapper = format!(
            r#"{{"SectorNum":7,"Phase1Out":"{}","SectorSize":2048}}"#,
            base64::engine::general_purpose::STANDARD.encode(inner)
        );
        let (c1, proof) = c1_output(wrapper.clone().into_bytes(), 7, 2048).unwrap();
        assert_eq!((c1.as_slice(), proof), (&inner[..], RegisteredSealProof::StackedDrg2KiBV1_1));
        let e = c1_output(wrapper.into_bytes(), 8, 0).unwrap_err();
        assert!(e.message.contains("sector 7, but sector_number is 8"), "{}", e.message);
        let (_, proof) = c1_output(inner.to_vec(), 1, 0).unwrap();
        assert_eq!(proof, RegisteredSealProof::StackedDrg2KiBV1_1);
        assert!(c1_output(b"xx".to_vec(), 1, 0).unwrap_err().message.starts_with("vanilla_proof: not a C1 output"));
    }

    #[test]
    fn circuit_names_translate() {
        assert_eq!(circuit_name("porep-32g"), "porep_c2:32g");
        assert_eq!(circuit_name("wpost-2k"), "window_post:2k");
        assert_eq!(circuit_name("winning-512m"), "winning_post:512m");
        assert_eq!(circuit_name("snap-64g"), "snap_deals:64g");
        assert_eq!(circuit_name("window_post:2KiB"), "window_post:2KiB");
        assert_eq!(circuit_name("stacked-proof-of-replication-x"), "stacked-proof-of-replication-x");
        for kind in ProofKind::ALL {
            let id = crate::proofs::circuit_id_for(&circuit_name(&format!("{}-2k", circuit_prefix(kind)))).unwrap();
            assert_eq!(id, crate::proofs::blank::circuit_id(kind, 2048).unwrap());
            assert_eq!(cuzk_circuit(&id), format!("{}-2k", circuit_prefix(kind)));
        }
        assert_eq!(cuda_ordinal("cuda:3 (NVIDIA H200)"), Some(3));
        assert_eq!(cuda_ordinal("cpu (16 threads)"), None);
    }
}
