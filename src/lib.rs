//! snarkd: a systemd-managed sidecar that proves Filecoin Groth16 SNARKs for Lotus and Curio.
//!
//! The library holds everything; the two binaries (`snarkd`, `snarkctl`) are thin shells over it so
//! that integration tests can start the daemon in-process or as the real binary. Data flows one way:
//! `rpc` (JSON-RPC) or `grpc` (Curio's cuzk protocol) → `engine` → `groth16` synthesis → a proving backend (`groth16::cpu` or `gpu`) → assembly →
//! verification → reply.

pub mod backends;
pub mod cli;
pub mod client;
pub mod config;
pub mod config_doc;
pub mod daemon;
pub mod engine;
pub mod error;
pub mod gpu;
pub mod groth16;
pub mod grpc;
pub mod man;
pub mod proofs;
pub mod rpc;
pub mod srs;
pub mod systemd;
pub mod tools;
pub mod units;

/// The allocator of every binary and test that links snarkd: mimalloc, a heap per thread whose
/// frees from other threads need no lock. With glibc's malloc the sixteen forks of a 64 GiB PoRep
/// partition's synthesis queued on one arena's lock (`futex` on a 64 MiB-aligned arena's mutex,
/// system time twice user time) and a proof took over 92 s instead of 22 s (bench/RESULTS.md, v25).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
