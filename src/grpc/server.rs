//! The gRPC socket's server: accepting connections (each tagged with its peer's credentials and
//! holding one of `socket.max_connections` slots), checking every call against the same
//! allow-list as JSON-RPC, and stopping at the daemon's command.
//!
//! It stops where the JSON-RPC server stops, after the drain: while the engine drains, new
//! proofs get UNAVAILABLE and waits on jobs in flight still get their answers. Stopping lets
//! calls in progress finish (up to a grace period), then removes the socket file.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::Connected;
use tonic::{Request, Status};

use super::pb::proving_engine_server::ProvingEngineServer;
use super::service::ProvingService;
use super::MAX_MESSAGE_BYTES;
use crate::error::{ErrorCode, SnarkError};
use crate::rpc::server::{AccessPolicy, Peer};
use crate::rpc::state::State;

/// A running gRPC server.
pub struct GrpcServer {
    pub path: PathBuf,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    accept_loop: tokio::task::JoinHandle<()>,
}

/// One accepted connection: the stream, who is at the other end, and its connection slot.
struct PeerStream {
    stream: UnixStream,
    peer: Peer,
    _slot: OwnedSemaphorePermit,
}

impl Connected for PeerStream {
    type ConnectInfo = Peer;
    fn connect_info(&self) -> Peer {
        self.peer.clone()
    }
}

impl AsyncRead for PeerStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for PeerStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Refuses a call whose peer the allow-list does not admit, before any method runs.
fn check_peer(access: &RwLock<AccessPolicy>, req: &Request<()>) -> Result<(), Status> {
    let Some(peer) = req.extensions().get::<Peer>() else {
        return Err(super::convert::status(SnarkError::new(ErrorCode::PermissionDenied, "peer credentials unavailable")));
    };
    if access.read().unwrap().allows(peer) {
        return Ok(());
    }
    tracing::warn!(uid = peer.uid, pid = peer.pid, "refused a gRPC call from uid {} pid {}: not on the allow-list", peer.uid, peer.pid);
    Err(super::convert::status(SnarkError::new(
        ErrorCode::PermissionDenied,
        format!("uid {} (gid {}) is not allowed by access.allow_uids / access.allow_gids", peer.uid, peer.gid),
    )))
}

/// Serves `cuzk.v1.ProvingEngine` on `listener` (bound at `path`) until stopped.
pub fn serve(listener: UnixListener, path: PathBuf, state: Arc<State>) -> GrpcServer {
    let access = state.access.clone();
    let max_connections = state.config.read().unwrap().socket.max_connections;
    let service = ProvingEngineServer::new(ProvingService::new(state))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let service = InterceptedService::new(service, move |req: Request<()>| check_peer(&access, &req).map(|()| req));

    let (conns_tx, conns_rx) = mpsc::channel::<Result<PeerStream, std::io::Error>>(16);
    let accept_loop = tokio::spawn(accept(listener, conns_tx, Arc::new(Semaphore::new(max_connections as usize)), max_connections));
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming_shutdown(tokio_stream::wrappers::ReceiverStream::new(conns_rx), async {
                let _ = stopped.await;
            }),
    );
    GrpcServer { path, stop, server, accept_loop }
}

/// Accepts connections and hands them to the server with their peer, while a slot is free.
async fn accept(
    listener: UnixListener,
    conns: mpsc::Sender<Result<PeerStream, std::io::Error>>,
    slots: Arc<Semaphore>,
    max_connections: u32,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!("gRPC accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let peer = match Peer::of(&stream) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("cannot read peer credentials, closing gRPC connection: {e}");
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!("gRPC connection limit {max_connections} (socket.max_connections) reached; closing uid {} pid {}", peer.uid, peer.pid);
            continue;
        };
        if conns.send(Ok(PeerStream { stream, peer, _slot: slot })).await.is_err() {
            return;
        }
    }
}

impl GrpcServer {
    /// Stops accepting, lets calls in progress finish (up to `grace`), and removes the socket.
    pub async fn stop(self, grace: Duration) {
        self.accept_loop.abort();
        let _ = self.stop.send(());
        let mut server = self.server;
        match tokio::time::timeout(grace, &mut server).await {
            Ok(Ok(Err(e))) => tracing::warn!("gRPC server ended with an error: {e}"),
            Ok(_) => {}
            Err(_) => {
                tracing::warn!("gRPC calls still open after {grace:?}; closing them");
                server.abort();
            }
        }
        if let Err(e) = std::fs::remove_file(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!("cannot remove socket {}: {e}", self.path.display());
            }
        }
    }
}
