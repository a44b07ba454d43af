//! A JSON-RPC client for the daemon's socket, speaking exactly what go-jsonrpc sends in HTTP
//! mode (one POST to /rpc/v0 per call, positional params). Used by `snarkctl`, the demo and the
//! tests, so all three exercise the same path Curio does.

use std::path::{Path, PathBuf};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes as HyperBytes;
use serde_json::{json, Value};

/// What a call can fail with: the daemon's JSON-RPC error, or not reaching it at all.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{message} (error {code})")]
    Rpc { code: i32, message: String, data: Option<Value> },
    #[error("cannot reach snarkd at {path}: {reason}")]
    Transport { path: PathBuf, reason: String },
}

impl ClientError {
    pub fn code(&self) -> Option<i32> {
        match self {
            ClientError::Rpc { code, .. } => Some(*code),
            ClientError::Transport { .. } => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Client {
    socket: PathBuf,
}

impl Client {
    pub fn new(socket: impl AsRef<Path>) -> Client {
        Client { socket: socket.as_ref().to_path_buf() }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    fn transport(&self, reason: impl std::fmt::Display) -> ClientError {
        ClientError::Transport { path: self.socket.clone(), reason: reason.to_string() }
    }

    /// POSTs a raw body and returns the HTTP status and body.
    pub async fn post_raw(&self, path: &str, body: Vec<u8>) -> Result<(u16, Vec<u8>), ClientError> {
        let stream = tokio::net::UnixStream::connect(&self.socket).await.map_err(|e| self.transport(e))?;
        let io = hyper_util::rt::TokioIo::new(stream);
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake::<_, Full<HyperBytes>>(io).await.map_err(|e| self.transport(e))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let req = http::Request::post(path)
            .header("host", "snarkd")
            .header("content-type", "application/json")
            .body(Full::new(HyperBytes::from(body)))
            .map_err(|e| self.transport(e))?;
        let resp = sender.send_request(req).await.map_err(|e| self.transport(e))?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.map_err(|e| self.transport(e))?.to_bytes().to_vec();
        Ok((status, body))
    }

    /// Calls `Snark.<method>` with positional params.
    pub async fn call(&self, method: &str, params: Vec<Value>) -> Result<Value, ClientError> {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": format!("Snark.{method}"), "params": params });
        let (status, bytes) = self.post_raw("/rpc/v0", serde_json::to_vec(&body).expect("json")).await?;
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| self.transport(format!("HTTP {status} with a body that is not JSON-RPC: {e}")))?;
        if let Some(err) = v.get("error") {
            return Err(ClientError::Rpc {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0) as i32,
                message: err.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
                data: err.get("data").cloned(),
            });
        }
        v.get("result").cloned().ok_or_else(|| self.transport(format!("HTTP {status} without result or error")))
    }
}
