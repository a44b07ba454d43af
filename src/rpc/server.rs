//! The Unix socket listener: binding (stale-socket removal, refusing a live daemon, mode and
//! group), peer credentials per connection, the connection limit, and jsonrpsee's tower service
//! for HTTP and WebSocket on each accepted stream.
//!
//! A connection must deliver each request, headers and then body, within `socket.request_timeout`
//! and may sit idle between requests no longer than that, so a slow or stalled client (slow-loris)
//! holds a connection slot for a bounded time and never reaches the engine.
//!
//! Shutdown follows reth's ipc server: the accept loop selects on the stop future, each
//! connection holds a permit, and [`RpcServer::stop`] waits until every permit is back.

use std::collections::HashSet;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use http_body_util::BodyExt;
use http_body_util::{Full, Limited};
use jsonrpsee::server::{stop_channel, Methods, ServerConfig, ServerHandle, StopHandle};
use tokio::net::UnixListener;
use tokio::sync::Semaphore;
use tower::Service;

use super::errors::error_body;
use crate::config::{AccessConfig, SocketConfig};
use crate::error::ErrorCode;

/// The credentials of the process at the other end of a connection (SO_PEERCRED), plus its
/// supplementary groups from /proc, so a client added to the socket's group is recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    pub pid: i32,
    pub groups: Vec<u32>,
}

impl Peer {
    pub fn of(stream: &tokio::net::UnixStream) -> std::io::Result<Peer> {
        let cred = stream.peer_cred()?;
        let pid = cred.pid().unwrap_or(0);
        Ok(Peer { uid: cred.uid(), gid: cred.gid(), pid, groups: supplementary_groups(pid) })
    }
}

fn supplementary_groups(pid: i32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| g.split_whitespace().filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

/// Who may call: root, the daemon's own uid, the configured uids, the socket's group and the
/// configured gids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPolicy {
    uids: HashSet<u32>,
    gids: HashSet<u32>,
}

impl AccessPolicy {
    pub fn new(access: &AccessConfig, socket_gid: u32) -> AccessPolicy {
        let mut uids: HashSet<u32> = access.allow_uids.iter().copied().collect();
        uids.insert(0);
        uids.insert(nix::unistd::geteuid().as_raw());
        let mut gids: HashSet<u32> = access.allow_gids.iter().copied().collect();
        gids.insert(socket_gid);
        AccessPolicy { uids, gids }
    }

    pub fn allows(&self, peer: &Peer) -> bool {
        self.uids.contains(&peer.uid)
            || self.gids.contains(&peer.gid)
            || peer.groups.iter().any(|g| self.gids.contains(g))
    }
}

/// Why the socket could not be set up. Each names the path.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error("another snarkd is already serving on {0}; stop it first or set socket.path to another path")]
    Live(PathBuf),
    #[error("{path} exists and is not a socket; refusing to remove it")]
    NotASocket { path: PathBuf },
    #[error("cannot {what} {path}: {source}")]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    #[error("socket.group: no group named {0:?}")]
    UnknownGroup(String),
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> BindError + 'a {
    move |source| BindError::Io { what, path: path.to_path_buf(), source }
}

/// Resolves `socket.group` to a gid; empty means the daemon's own group.
pub fn resolve_group(group: &str) -> Result<u32, BindError> {
    if group.is_empty() {
        return Ok(nix::unistd::getegid().as_raw());
    }
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    match nix::unistd::Group::from_name(group) {
        Ok(Some(g)) => Ok(g.gid.as_raw()),
        _ => Err(BindError::UnknownGroup(group.to_string())),
    }
}

/// Binds the socket: creates the parent directory, refuses when a live daemon answers, removes
/// a stale socket file, then applies mode and group before anyone can connect usefully.
pub fn bind(cfg: &SocketConfig) -> Result<(UnixListener, u32), BindError> {
    let path = &cfg.path;
    let gid = resolve_group(&cfg.group)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err("create directory", parent))?;
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(BindError::NotASocket { path: path.clone() });
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(BindError::Live(path.clone()));
        }
        std::fs::remove_file(path).map_err(io_err("remove stale socket", path))?;
        tracing::info!("removed stale socket {}", path.display());
    }
    let std_listener = std::os::unix::net::UnixListener::bind(path).map_err(io_err("bind", path))?;
    apply_permissions(path, cfg.mode.0, gid)?;
    std_listener.set_nonblocking(true).map_err(io_err("configure", path))?;
    let listener = UnixListener::from_std(std_listener).map_err(io_err("listen on", path))?;
    Ok((listener, gid))
}

/// Takes a listening socket passed by systemd (socket activation, `LISTEN_FDS`).
pub fn from_systemd(cfg: &SocketConfig) -> Result<Option<(UnixListener, u32)>, BindError> {
    let fds: Vec<_> = match sd_notify::listen_fds() {
        Ok(fds) => fds.collect(),
        Err(_) => return Ok(None),
    };
    let Some(fd) = fds.first().copied() else { return Ok(None) };
    use std::os::fd::FromRawFd;
    // SAFETY: systemd passes this fd to us alone; we take ownership exactly once.
    let std_listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
    std_listener.set_nonblocking(true).map_err(io_err("configure", &cfg.path))?;
    let listener = UnixListener::from_std(std_listener).map_err(io_err("listen on", &cfg.path))?;
    let gid = resolve_group(&cfg.group)?;
    Ok(Some((listener, gid)))
}

fn apply_permissions(path: &Path, mode: u32, gid: u32) -> Result<(), BindError> {
    if gid != nix::unistd::getegid().as_raw() {
        nix::unistd::chown(path, None, Some(nix::unistd::Gid::from_raw(gid))).map_err(|e| BindError::Io {
            what: "set group of",
            path: path.to_path_buf(),
            source: std::io::Error::from(e),
        })?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io_err("set mode of", path))
}

/// A running server.
pub struct RpcServer {
    pub path: PathBuf,
    handle: ServerHandle,
    connections: Arc<Semaphore>,
    max_connections: u32,
    accept_loop: tokio::task::JoinHandle<()>,
    /// False for a socket passed by systemd: its socket unit owns the file and keeps listening.
    remove_socket: bool,
}

impl RpcServer {
    /// Leaves the socket file in place on stop, for a socket passed by systemd.
    pub fn keep_socket_file(mut self) -> Self {
        self.remove_socket = false;
        self
    }

    /// Stops accepting, lets in-flight requests finish (up to `grace`), and removes the socket.
    pub async fn stop(self, grace: Duration) {
        let _ = self.handle.stop();
        let _ = self.accept_loop.await;
        let all = self.connections.acquire_many(self.max_connections);
        if tokio::time::timeout(grace, all).await.is_err() {
            tracing::warn!("connections still open after {grace:?}; closing them");
        }
        if !self.remove_socket {
            return;
        }
        if let Err(e) = std::fs::remove_file(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!("cannot remove socket {}: {e}", self.path.display());
            }
        }
    }
}

/// Serves `methods` on `listener` until stopped.
pub fn serve(
    listener: UnixListener,
    cfg: &SocketConfig,
    methods: impl Into<Methods>,
    access: Arc<RwLock<AccessPolicy>>,
) -> RpcServer {
    let (stop_handle, server_handle) = stop_channel();
    let server_cfg = ServerConfig::builder()
        .max_request_body_size(cfg.max_request_bytes.get() as u32)
        .max_response_body_size(cfg.max_response_bytes.get() as u32)
        .max_connections(cfg.max_connections)
        .build();
    let builder = jsonrpsee::server::Server::builder().set_config(server_cfg).to_service_builder();
    let methods: Methods = methods.into();
    let connections = Arc::new(Semaphore::new(cfg.max_connections as usize));
    let max_request = cfg.max_request_bytes.get();
    let max_connections = cfg.max_connections;
    let request_timeout = cfg.request_timeout;
    let conns = connections.clone();
    let stop = stop_handle.clone();
    let accept_loop = tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                r = listener.accept() => match r {
                    Ok((s, _)) => s,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = stop.clone().shutdown() => break,
            };
            let peer = match Peer::of(&stream) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!("cannot read peer credentials, closing connection: {e}");
                    continue;
                }
            };
            if !access.read().unwrap().allows(&peer) {
                tracing::warn!(uid = peer.uid, pid = peer.pid, "connection from uid {} pid {} is not on the allow-list; its calls will be refused", peer.uid, peer.pid);
            }
            let Ok(permit) = conns.clone().try_acquire_owned() else {
                tracing::warn!("connection limit {max_connections} reached; refusing uid {} pid {}", peer.uid, peer.pid);
                tokio::spawn(refuse(stream, max_connections));
                continue;
            };
            let limits = Limits { max_request, request_timeout, max_connections };
            let svc = connection_service(builder.clone(), methods.clone(), stop.clone(), peer, limits);
            let stop = stop.clone();
            tokio::spawn(async move {
                let _permit = permit;
                if let Err(e) = serve_connection(stream, svc, request_timeout, stop).await {
                    tracing::debug!("connection ended: {e}");
                }
            });
        }
    });
    RpcServer { path: cfg.path.clone(), handle: server_handle, connections, max_connections, accept_loop, remove_socket: true }
}

/// Serves HTTP/1.1 (and WebSocket upgrades) on one connection until it ends or the server stops,
/// closing it when a request's headers take longer than `request_timeout` to arrive or it idles
/// that long between requests.
async fn serve_connection<S>(
    stream: tokio::net::UnixStream,
    svc: S,
    request_timeout: Duration,
    stop: StopHandle,
) -> Result<(), hyper::Error>
where
    S: tower::Service<http::Request<hyper::body::Incoming>, Response = HttpResponse, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let io = hyper_util::rt::TokioIo::new(stream);
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(request_timeout)
        .serve_connection(io, hyper_util::service::TowerToHyperService::new(svc))
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => r,
        _ = stop.shutdown() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What one connection may send.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_request: u64,
    request_timeout: Duration,
    max_connections: u32,
}

type Builder = jsonrpsee::server::TowerServiceBuilder<tower::layer::util::Identity, tower::layer::util::Identity>;
type HttpResponse = jsonrpsee::server::HttpResponse;

fn json_response(status: u16, body: String) -> HttpResponse {
    http_response(status, "application/json", body)
}

fn http_response(status: u16, content_type: &str, body: String) -> HttpResponse {
    jsonrpsee::server::HttpResponse::builder()
        .status(status)
        .header("content-type", content_type)
        .body(jsonrpsee::server::HttpBody::from(body))
        .expect("static response parts are valid")
}

/// The per-connection service: attaches the peer, checks the path, reads the body within the
/// request timeout, and answers an over-size body with a JSON-RPC error with status 200 instead
/// of jsonrpsee's HTTP 413, because go-jsonrpc reports non-200 statuses as opaque transport
/// errors.
fn connection_service(
    builder: Builder,
    methods: Methods,
    stop: StopHandle,
    peer: Peer,
    limits: Limits,
) -> impl tower::Service<
    http::Request<hyper::body::Incoming>,
    Response = HttpResponse,
    Error = BoxError,
    Future = impl Send + 'static,
> + Clone
       + Send
       + 'static {
    let Limits { max_request, request_timeout, max_connections } = limits;
    tower::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(peer.clone());
        let peer = peer.clone();
        let path_ok = super::RPC_PATHS.contains(&req.uri().path());
        let mut svc = builder.clone().build(methods.clone(), stop.clone());
        async move {
            if !path_ok {
                return Ok(http_response(404, "text/plain", format!("not found; JSON-RPC is served at {}\n", super::RPC_PATHS.join(" and "))));
            }
            let declared = req
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > max_request) {
                // Read and discard the body (bounded) so the client is not cut off mid-write
                // and can read the error instead of a broken pipe.
                let mut body = req.into_body();
                let drain = async {
                    let mut seen = 0u64;
                    while let Some(frame) = body.frame().await {
                        seen += frame.ok().and_then(|f| f.into_data().ok()).map_or(0, |d| d.len() as u64);
                        if seen > DRAIN_CAP {
                            break;
                        }
                    }
                };
                let _ = tokio::time::timeout(request_timeout, drain).await;
                return Ok(too_large(max_request));
            }
            if req.headers().contains_key(http::header::UPGRADE) {
                // A WebSocket handshake has no body; jsonrpsee takes the upgraded stream.
                return svc.call(req).await.map(|resp| over_limit_as_rpc_error(resp, max_request, max_connections));
            }
            let (parts, body) = req.into_parts();
            let body = match tokio::time::timeout(request_timeout, Limited::new(body, max_request as usize).collect()).await {
                Ok(Ok(collected)) => collected.to_bytes(),
                Ok(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => return Ok(too_large(max_request)),
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    tracing::warn!(uid = peer.uid, pid = peer.pid, "request body from uid {} pid {} not received within socket.request_timeout; closing", peer.uid, peer.pid);
                    return Ok(timed_out(request_timeout));
                }
            };
            let resp = svc.call(http::Request::from_parts(parts, Full::new(body))).await?;
            Ok(over_limit_as_rpc_error(resp, max_request, max_connections))
        }
    })
}

/// jsonrpsee answers its own limits with bare HTTP statuses: 413 for a body over
/// `max_request_bytes`, and 429 once `max_connections` requests and WebSocket connections are
/// open (an upgraded WebSocket leaves the accept loop's count, but not jsonrpsee's). Both become
/// the JSON-RPC errors go-jsonrpc can decode.
fn over_limit_as_rpc_error(resp: HttpResponse, max_request: u64, max_connections: u32) -> HttpResponse {
    match resp.status() {
        http::StatusCode::PAYLOAD_TOO_LARGE => too_large(max_request),
        http::StatusCode::TOO_MANY_REQUESTS => too_many(max_connections),
        _ => resp,
    }
}

fn too_many(max_connections: u32) -> HttpResponse {
    json_response(
        200,
        error_body(ErrorCode::QueueFull, &format!("too many connections (socket.max_connections = {max_connections}); retry later")),
    )
}

/// The most an over-size body is read (and discarded) before the error goes out.
const DRAIN_CAP: u64 = 4 << 30;

fn too_large(max_request: u64) -> HttpResponse {
    json_response(
        200,
        error_body(ErrorCode::BadInput, &format!("request body exceeds socket.max_request_bytes ({max_request} bytes)")),
    )
}

fn timed_out(request_timeout: Duration) -> HttpResponse {
    let mut resp = json_response(
        200,
        error_body(
            ErrorCode::BadInput,
            &format!(
                "request body not received within socket.request_timeout ({})",
                crate::config::duration_text::format(&request_timeout)
            ),
        ),
    );
    resp.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    resp
}

/// Answers every request on an over-limit connection with a JSON-RPC error, then closes it.
async fn refuse(stream: tokio::net::UnixStream, limit: u32) {
    let svc = tower::service_fn(move |_req: http::Request<hyper::body::Incoming>| async move {
        Ok::<_, std::convert::Infallible>(too_many(limit))
    });
    let io = hyper_util::rt::TokioIo::new(stream);
    let svc = hyper_util::service::TowerToHyperService::new(svc);
    let conn = hyper::server::conn::http1::Builder::new().keep_alive(false).serve_connection(io, svc);
    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
}
