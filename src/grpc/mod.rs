//! Curio's drop-in: the cuzk gRPC protocol (`cuzk.v1.ProvingEngine`, `proto/cuzk/v1/proving.proto`)
//! on its own Unix socket, so that Curio's `[Cuzk] Address = "unix:///run/snarkd/cuzk.sock"`
//! proves with snarkd unchanged. It is a second door to the same engine as JSON-RPC: same jobs,
//! queues, budget, allow-list and drain; only the wire differs.

mod cid;
pub mod client;
mod convert;
pub mod server;
mod service;

pub use cid::{encode as commitment_cid, Commitment};
pub use server::serve;

/// The messages and the client and server stubs generated from the proto file by `build.rs`.
pub mod pb {
    tonic::include_proto!("cuzk.v1");
}

/// The largest message either way, as Curio's client sets it (a 32 GiB C1 output is about 50 MB).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;
