//! What the wire costs: the same 2 KiB proof requested through JSON-RPC `Snark.Prove` and through
//! gRPC `Prove`, alternately on one daemon, compared by median wall time. Also builds a
//! manifest's requests in Curio's gRPC field layout, for this comparison and the tests.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use serde::Serialize;

use crate::client::Client;
use crate::grpc::pb;
use crate::grpc::{commitment_cid, Commitment};
use crate::proofs::{ProofKind, ProofRequest};
use crate::tools::testdata::Manifest;

/// Medians of both transports for one kind, and gRPC's time as a fraction of JSON-RPC's.
#[derive(Debug, Clone, Serialize)]
pub struct TransportReport {
    pub kind: ProofKind,
    pub rounds: usize,
    #[serde(with = "crate::units::millis")]
    pub json_rpc_median: Duration,
    #[serde(with = "crate::units::millis")]
    pub grpc_median: Duration,
    /// grpc_median / json_rpc_median: below 1 means gRPC is faster.
    pub ratio: f64,
}

/// `kind`'s request from `manifest` as Curio fills a `SubmitProofRequest`: numeric registered
/// proofs, the raw C1 JSON for PoRep, priority NORMAL for PoRep and SnapDeals (the kind's default
/// for PoSt), SnapDeals commitments as CID bytes. No `request_id`, so every call is a new job.
pub fn curio_request(manifest: &Manifest, kind: ProofKind) -> anyhow::Result<pb::SubmitProofRequest> {
    let base = pb::SubmitProofRequest { sector_size: manifest.sector_size, ..Default::default() };
    Ok(match manifest.request(kind)? {
        ProofRequest::PorepC2 { c1_output, sector_number, miner_id, .. } => pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            registered_proof: manifest.porep.registered_proof as u64,
            priority: pb::Priority::Normal as i32,
            vanilla_proof: c1_output.0,
            sector_number,
            miner_id: miner_id.unwrap_or(manifest.miner_id),
            ..base
        },
        ProofRequest::WindowPost { registered_post_proof, randomness, miner_id, partition_index, vanilla_proofs, .. } => {
            pb::SubmitProofRequest {
                proof_kind: pb::ProofKind::WindowPostPartition as i32,
                registered_proof: registered_post_proof.0 as u64,
                vanilla_proofs: vanilla_proofs.into_iter().map(|p| p.0).collect(),
                miner_id: miner_id.unwrap_or(manifest.miner_id),
                randomness: randomness.0.to_vec(),
                partition_index: u32::try_from(partition_index).context("partition_index over u32")?,
                ..base
            }
        }
        ProofRequest::WinningPost { registered_post_proof, randomness, miner_id, vanilla_proofs, .. } => pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::WinningPost as i32,
            registered_proof: registered_post_proof.0 as u64,
            vanilla_proofs: vanilla_proofs.into_iter().map(|p| p.0).collect(),
            miner_id: miner_id.unwrap_or(manifest.miner_id),
            randomness: randomness.0.to_vec(),
            ..base
        },
        ProofRequest::SnapDeals { registered_update_proof, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new } => {
            pb::SubmitProofRequest {
                proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
                registered_proof: registered_update_proof.0 as u64,
                priority: pb::Priority::Normal as i32,
                vanilla_proofs: vanilla_proofs.into_iter().map(|p| p.0).collect(),
                sector_number: manifest.sector_number,
                miner_id: manifest.miner_id,
                comm_r_old: commitment_cid(Commitment::Sealed, &comm_r_old),
                comm_r_new: commitment_cid(Commitment::Sealed, &comm_r_new),
                comm_d_new: commitment_cid(Commitment::Unsealed, &comm_d_new),
                ..base
            }
        }
    })
}

/// Proves `manifest`'s `kind` request `rounds` times through each transport of one daemon,
/// alternating (JSON-RPC first), and reports the medians. Every proof must come back.
pub async fn compare_prove(
    socket: &Path,
    grpc_socket: &Path,
    manifest: &Manifest,
    kind: ProofKind,
    rounds: usize,
) -> anyhow::Result<TransportReport> {
    ensure!(rounds > 0, "rounds: at least one round is needed");
    let json_request = serde_json::to_value(manifest.request(kind)?).context("cannot encode the JSON-RPC request")?;
    let grpc_request = curio_request(manifest, kind)?;
    let json = Client::new(socket);
    let mut grpc = crate::grpc::client::connect(grpc_socket).await?;
    let (mut json_times, mut grpc_times) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for round in 0..rounds {
        let start = Instant::now();
        let result = json.call("Prove", vec![json_request.clone()]).await.with_context(|| format!("JSON-RPC Prove, round {round}"))?;
        json_times.push(start.elapsed());
        ensure!(result["state"] == "done", "JSON-RPC Prove, round {round}: no proof: {result}");

        let start = Instant::now();
        let reply = grpc
            .prove(pb::ProveRequest { submit: Some(grpc_request.clone()) })
            .await
            .with_context(|| format!("gRPC Prove, round {round}"))?
            .into_inner()
            .result
            .context("gRPC Prove returned no result")?;
        grpc_times.push(start.elapsed());
        ensure!(
            reply.status == pb::await_proof_response::Status::Completed as i32,
            "gRPC Prove, round {round}: status {} ({})",
            reply.status,
            reply.error_message
        );
    }
    let (json_rpc_median, grpc_median) = (median(&mut json_times), median(&mut grpc_times));
    Ok(TransportReport {
        kind,
        rounds,
        json_rpc_median,
        grpc_median,
        ratio: grpc_median.as_secs_f64() / json_rpc_median.as_secs_f64(),
    })
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}
