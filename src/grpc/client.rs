//! A gRPC client for the daemon's cuzk socket, configured as Curio's is (plaintext HTTP/2 over the
//! Unix socket, 256 MiB messages both ways). Used by the tests and the transport benchmark.

use std::path::Path;

use anyhow::Context;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

use super::pb::proving_engine_client::ProvingEngineClient;
use super::MAX_MESSAGE_BYTES;

/// Connects to the gRPC socket at `path`.
pub async fn connect(path: &Path) -> anyhow::Result<ProvingEngineClient<Channel>> {
    let socket = path.to_path_buf();
    // The builder needs a URI; every connection dials the socket instead.
    let channel = Endpoint::from_static("http://snarkd")
        .connect_with_connector(tower::service_fn(move |_: http::Uri| {
            let socket = socket.clone();
            async move { tokio::net::UnixStream::connect(socket).await.map(TokioIo::new) }
        }))
        .await
        .with_context(|| format!("cannot reach snarkd's gRPC socket at {}", path.display()))?;
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES))
}
