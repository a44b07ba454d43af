//! The `Snark.*` methods. Each is registered through [`guarded`], which checks the caller's peer
//! credentials first, so no method can forget access control. Heavy work (decoding a 50 MB C1,
//! waiting for a proof) never blocks the connection's task.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{Extensions, RpcModule};
use serde_json::Value;

use super::errors::to_rpc;
use super::server::Peer;
use super::types::{ProofResult, VersionInfo};
use super::state::State;
use crate::engine::{AwaitOutcome, JobId, Priority, SubmitOptions};
use crate::error::{ErrorCode, SnarkError};

type RpcResult = Result<Value, ErrorObjectOwned>;

/// The method names, in the order `man snarkd` lists them.
pub const METHODS: [(&str, &str); 13] = [
    ("Snark.Version", "() -> version, API level and whether CUDA kernels are built in"),
    ("Snark.Status", "() -> devices, queues, memory budget, resident parameters"),
    ("Snark.Metrics", "() -> Prometheus text"),
    ("Snark.Reload", "() -> re-reads the config; fails with the reason when it is rejected"),
    ("Snark.Submit", "(request) -> job; idempotent on request.request_id: while a job's result is retained (queue.job_retention), the same request_id returns that job, even a failed one; retry a failure with a new request_id"),
    ("Snark.Await", "(job_id, timeout_ms?) -> {state: done, proof} or {state: pending}"),
    ("Snark.Prove", "(request, timeout_ms?) -> Submit then Await"),
    ("Snark.Cancel", "(job_id) -> job; a queued job leaves the queue and frees its place at once; a running job stops at its next stage boundary (the partition being synthesized or proved finishes first), and each witness it holds frees its memory reservation when it is dropped there"),
    ("Snark.Job", "(job_id) -> state, stage, partitions done, timings"),
    ("Snark.Preload", "(circuit) -> loads a circuit's parameters and keeps them resident"),
    ("Snark.Evict", "(circuit) -> drops a circuit's resident parameters"),
    ("Snark.Kinds", "() -> the proof kinds and sector sizes this build proves"),
    ("Snark.Shutdown", "() -> starts a drain, as SIGTERM does"),
];

/// Positional params as go-jsonrpc sends them (always an array; absent means none).
fn positional(params: &Params<'_>) -> Result<Vec<Value>, ErrorObjectOwned> {
    if params.as_str().is_none() {
        return Ok(vec![]);
    }
    match params.parse::<Value>() {
        Ok(Value::Array(v)) => Ok(v),
        Ok(Value::Null) => Ok(vec![]),
        Ok(_) => Err(to_rpc(SnarkError::bad_input("params: must be a positional array, as go-jsonrpc sends"))),
        Err(e) => Err(to_rpc(SnarkError::bad_input(format!("params: {}", e.message())))),
    }
}

fn job_id_param(args: &[Value]) -> Result<JobId, SnarkError> {
    match args.first() {
        Some(Value::String(s)) if !s.is_empty() => Ok(JobId(s.clone())),
        Some(other) => Err(SnarkError::bad_input(format!("job_id: expected a string, got {other}"))),
        None => Err(SnarkError::bad_input("job_id: missing (params[0])")),
    }
}

fn circuit_param(args: &[Value]) -> Result<String, SnarkError> {
    match args.first() {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(SnarkError::bad_input("circuit: expected a string (params[0])")),
    }
}

fn timeout_param(args: &[Value], index: usize) -> Result<Option<Duration>, SnarkError> {
    match args.get(index) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) | None => Err(SnarkError::bad_input(format!("timeout_ms: {n} is not a positive integer"))),
            Some(ms) => Ok(Some(Duration::from_millis(ms))),
        },
        Some(other) => Err(SnarkError::bad_input(format!("timeout_ms: expected milliseconds, got {other}"))),
    }
}

fn json<T: serde::Serialize>(v: T) -> RpcResult {
    serde_json::to_value(v).map_err(|e| to_rpc(SnarkError::internal(format!("cannot encode result: {e}"))))
}

/// Registers `f` under `name` behind the peer-credential check.
fn guarded<F, Fut>(module: &mut RpcModule<Arc<State>>, name: &'static str, f: F)
where
    F: Fn(Vec<Value>, Arc<State>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = RpcResult> + Send + 'static,
{
    module
        .register_async_method(name, move |params, state: Arc<Arc<State>>, ext: Extensions| {
            let f = f.clone();
            async move {
                let state: Arc<State> = (*state).clone();
                check_peer(&state, &ext, name)?;
                let args = positional(&params)?;
                f(args, state).await
            }
        })
        .expect("method names are unique");
}

fn check_peer(state: &State, ext: &Extensions, method: &str) -> Result<(), ErrorObjectOwned> {
    let Some(peer) = ext.get::<Peer>() else {
        return Err(to_rpc(SnarkError::new(ErrorCode::PermissionDenied, "peer credentials unavailable")));
    };
    if state.access.read().unwrap().allows(peer) {
        return Ok(());
    }
    tracing::warn!(uid = peer.uid, pid = peer.pid, "refused {method} from uid {} pid {}: not on the allow-list", peer.uid, peer.pid);
    Err(to_rpc(SnarkError::new(
        ErrorCode::PermissionDenied,
        format!("permission denied: uid {} (gid {}) is not allowed by access.allow_uids / access.allow_gids", peer.uid, peer.gid),
    )))
}

/// Splits a Submit/Prove request into the proof statement and the engine options.
async fn prepare(request: Option<&Value>) -> Result<(Box<dyn crate::proofs::Statement>, SubmitOptions), SnarkError> {
    let Some(Value::Object(obj)) = request else {
        return Err(SnarkError::bad_input("request: expected an object with a \"kind\" field (params[0])"));
    };
    let mut obj = obj.clone();
    let request_id = match obj.remove("request_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 256 => Some(s),
        Some(other) => return Err(SnarkError::bad_input(format!("request_id: expected a string of 1..256 bytes, got {other}"))),
    };
    let priority = match obj.remove("priority") {
        None | Some(Value::Null) => None,
        Some(v) => Some(serde_json::from_value::<Priority>(v.clone()).map_err(|_| {
            SnarkError::bad_input(format!("priority: {v} is not one of critical, high, normal, low"))
        })?),
    };
    let statement = tokio::task::spawn_blocking(move || crate::proofs::statement_from_json(Value::Object(obj)))
        .await
        .map_err(|e| SnarkError::internal(format!("request decoder failed: {e}")))??;
    Ok((statement, SubmitOptions { request_id, priority }))
}

async fn await_result(state: &State, id: &JobId, timeout: Option<Duration>) -> RpcResult {
    match state.engine.await_job(id, timeout).await.map_err(to_rpc)? {
        AwaitOutcome::Done { info, proof } => json(ProofResult::done(info, proof)),
        AwaitOutcome::Pending(info) => json(ProofResult::pending(info)),
    }
}

pub fn module(state: Arc<State>) -> RpcModule<Arc<State>> {
    let mut m = RpcModule::new(state);
    guarded(&mut m, "Snark.Version", |_, state| async move { json(version(&state)) });
    guarded(&mut m, "Snark.Status", |_, s| async move { json(s.status()) });
    guarded(&mut m, "Snark.Metrics", |_, s| async move { json(s.engine.metrics()) });
    guarded(&mut m, "Snark.Kinds", |_, _| async move { json(crate::proofs::supported()) });
    guarded(&mut m, "Snark.Reload", |_, s| async move {
        let report = tokio::task::spawn_blocking(move || s.reload())
            .await
            .map_err(|e| to_rpc(SnarkError::internal(format!("reload task failed: {e}"))))?
            .map_err(to_rpc)?;
        json(report)
    });
    guarded(&mut m, "Snark.Shutdown", |_, s| async move {
        s.request_shutdown();
        json("draining")
    });
    guarded(&mut m, "Snark.Submit", |args, s| async move {
        let (statement, opts) = prepare(args.first()).await.map_err(to_rpc)?;
        json(s.engine.submit(statement, opts).map_err(to_rpc)?)
    });
    guarded(&mut m, "Snark.Prove", |args, s| async move {
        let timeout = timeout_param(&args, 1).map_err(to_rpc)?;
        let (statement, opts) = prepare(args.first()).await.map_err(to_rpc)?;
        let info = s.engine.submit(statement, opts).map_err(to_rpc)?;
        await_result(&s, &info.job_id, timeout).await
    });
    guarded(&mut m, "Snark.Await", |args, s| async move {
        let id = job_id_param(&args).map_err(to_rpc)?;
        let timeout = timeout_param(&args, 1).map_err(to_rpc)?;
        await_result(&s, &id, timeout).await
    });
    guarded(&mut m, "Snark.Cancel", |args, s| async move {
        let id = job_id_param(&args).map_err(to_rpc)?;
        json(s.engine.cancel(&id).map_err(to_rpc)?)
    });
    guarded(&mut m, "Snark.Job", |args, s| async move {
        let id = job_id_param(&args).map_err(to_rpc)?;
        json(s.engine.job(&id).map_err(to_rpc)?)
    });
    guarded(&mut m, "Snark.Preload", |args, s| async move {
        let circuit = circuit_param(&args).map_err(to_rpc)?;
        let out = tokio::task::spawn_blocking(move || s.preload(&circuit))
            .await
            .map_err(|e| to_rpc(SnarkError::internal(format!("preload task failed: {e}"))))?
            .map_err(to_rpc)?;
        json(out)
    });
    guarded(&mut m, "Snark.Evict", |args, s| async move {
        let circuit = circuit_param(&args).map_err(to_rpc)?;
        json(s.evict(&circuit).map_err(to_rpc)?)
    });
    m
}

pub fn version(state: &State) -> VersionInfo {
    VersionInfo { version: env!("CARGO_PKG_VERSION").into(), api: "v0".into(), cuda: state.cuda.clone() }
}
