//! The optional Prometheus endpoint (`metrics.listen`): plain HTTP/1.1 on TCP through hyper, so
//! scrapers get real HTTP (keep-alive, HEAD, 404 for other paths) rather than a canned reply.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};

use crate::engine::Engine;

/// Binds `listen` and serves `GET /metrics` (and `/`) from the engine's counters until the
/// process exits. Bind errors are returned with the address, so start-up can report them.
pub async fn serve(listen: SocketAddr, engine: Arc<Engine>) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("metrics.listen: cannot bind {listen}: {e}"))?;
    tracing::info!("serving Prometheus metrics on http://{listen}/metrics");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let engine = engine.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let engine = engine.clone();
                    async move { Ok::<_, Infallible>(respond(&req, &engine)) }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(std::time::Duration::from_secs(5))
                    .serve_connection(io, svc)
                    .await;
            });
        }
    });
    Ok(())
}

fn respond(req: &Request<Incoming>, engine: &Engine) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, body: String| {
        Response::builder()
            .status(status)
            .header(http::header::CONTENT_TYPE, "text/plain; version=0.0.4")
            .body(Full::new(Bytes::from(body)))
            .expect("static response parts are valid")
    };
    match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics" | "/") => reply(StatusCode::OK, engine.metrics()),
        (&Method::GET | &Method::HEAD, _) => reply(StatusCode::NOT_FOUND, "not found: metrics are at /metrics\n".into()),
        _ => reply(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into()),
    }
}
