//! The `cuzk.v1.ProvingEngine` methods over snarkd's engine: the same jobs, priorities, queue
//! limits, budget and `request_id` idempotency as JSON-RPC, reached through the same [`State`].
//! Access control is not here: the server checks every call's peer before it reaches a method.
//!
//! A Prove whose client goes away leaves its job running, as over JSON-RPC: Curio's retry of the
//! same task sends the same `request_id` and so waits for that job instead of proving again.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use super::convert::{self, status};
use super::pb;
use super::pb::proving_engine_server::ProvingEngine;
use crate::engine::{AwaitOutcome, JobId, JobInfo, JobState};
use crate::error::{ErrorCode, SnarkError};
use crate::rpc::state::State;

pub struct ProvingService {
    state: Arc<State>,
}

impl ProvingService {
    pub fn new(state: Arc<State>) -> ProvingService {
        ProvingService { state }
    }

    /// Decodes (off the connection task) and submits one request.
    async fn submit(&self, req: pb::SubmitProofRequest) -> Result<JobInfo, Status> {
        // Refuse before decoding a C1 output that could never be queued.
        if self.state.engine.is_draining() {
            return Err(status(SnarkError::new(
                ErrorCode::Draining,
                "the daemon is draining for shutdown; submit elsewhere or retry after restart",
            )));
        }
        let (statement, options) = tokio::task::spawn_blocking(move || convert::prepare(req))
            .await
            .map_err(|e| status(SnarkError::internal(format!("request decoder failed: {e}"))))?
            .map_err(status)?;
        self.state.engine.submit(statement, options).map_err(status)
    }

    /// Waits for `id` up to `timeout` (forever when None). A job's own failure is a reply, not an
    /// RPC error; only an unknown job is.
    async fn wait(&self, id: JobId, timeout: Option<Duration>) -> Result<pb::AwaitProofResponse, Status> {
        match self.state.engine.await_job(&id, timeout).await {
            Ok(AwaitOutcome::Done { info, proof }) => Ok(convert::completed(&info, proof)),
            Ok(AwaitOutcome::Pending(info)) => Ok(convert::timed_out(&info)),
            Err(e) if e.code == ErrorCode::NotFound => Err(status(e)),
            Err(e) => Ok(convert::ended(&id, &e, self.state.engine.job(&id).ok().as_ref())),
        }
    }
}

fn job_id(text: String) -> Result<JobId, Status> {
    if text.is_empty() {
        return Err(status(SnarkError::bad_input("job_id: empty")));
    }
    Ok(JobId(text))
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let info = self.submit(request.into_inner()).await?;
        Ok(Response::new(convert::submitted(&info, &self.state.engine.status())))
    }

    async fn await_proof(&self, request: Request<pb::AwaitProofRequest>) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let req = request.into_inner();
        let timeout = (req.timeout_ms > 0).then(|| Duration::from_millis(req.timeout_ms));
        Ok(Response::new(self.wait(job_id(req.job_id)?, timeout).await?))
    }

    async fn prove(&self, request: Request<pb::ProveRequest>) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| status(SnarkError::bad_input("submit: missing; Prove wraps a SubmitProofRequest")))?;
        let info = self.submit(submit).await?;
        let result = self.wait(info.job_id, None).await?;
        Ok(Response::new(pb::ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(&self, request: Request<pb::CancelProofRequest>) -> Result<Response<pb::CancelProofResponse>, Status> {
        let id = job_id(request.into_inner().job_id)?;
        let (_, found) = self.state.engine.cancel_from(&id).map_err(status)?;
        Ok(Response::new(pb::CancelProofResponse { was_running: found == JobState::Running }))
    }

    async fn get_status(&self, _: Request<pb::GetStatusRequest>) -> Result<Response<pb::GetStatusResponse>, Status> {
        let engine = &self.state.engine;
        let kind_of_job = |id: &JobId| engine.job(id).ok().map(|j| j.kind);
        Ok(Response::new(convert::status_reply(
            &engine.status(),
            &self.state.resident(),
            &kind_of_job,
            engine.finished(),
            self.state.started.elapsed(),
        )))
    }

    async fn get_metrics(&self, _: Request<pb::GetMetricsRequest>) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse { prometheus_text: self.state.engine.metrics() }))
    }

    async fn preload_srs(&self, request: Request<pb::PreloadSrsRequest>) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let circuit = convert::circuit_name(&request.into_inner().circuit_id);
        let state = self.state.clone();
        let loaded = tokio::task::spawn_blocking(move || state.preload(&circuit))
            .await
            .map_err(|e| status(SnarkError::internal(format!("preload task failed: {e}"))))?
            .map_err(status)?;
        Ok(Response::new(pb::PreloadSrsResponse {
            already_loaded: loaded.already_loaded,
            load_time_ms: (loaded.load_seconds * 1000.0).round() as u64,
        }))
    }

    async fn evict_srs(&self, request: Request<pb::EvictSrsRequest>) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let circuit = convert::circuit_name(&request.into_inner().circuit_id);
        match self.state.evict(&circuit) {
            Ok(evicted) => Ok(Response::new(pb::EvictSrsResponse { was_loaded: evicted.evicted, freed_bytes: evicted.freed.get() })),
            // cuzk answers an eviction of what is not loaded with was_loaded = false.
            Err(e) if e.code == ErrorCode::NotFound => Ok(Response::new(pb::EvictSrsResponse { was_loaded: false, freed_bytes: 0 })),
            Err(e) => Err(status(e)),
        }
    }
}
