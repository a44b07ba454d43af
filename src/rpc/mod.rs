//! The JSON-RPC surface: a Unix socket served through jsonrpsee's tower service, speaking HTTP/1.1
//! POST and WebSocket on the same socket, in the dialect go-jsonrpc uses (`Snark.<Method>`,
//! positional params, `[]byte` as base64).

pub mod errors;
pub mod methods;
pub mod metrics_http;
pub mod server;
pub mod state;
pub mod types;

/// The HTTP paths the daemon answers on; anything else is 404.
pub const RPC_PATHS: [&str; 2] = ["/rpc/v0", "/"];
