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
