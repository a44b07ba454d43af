//! All integration tests, compiled into one binary (ripgrep's habit): each module drives the real
//! `snarkd`/`snarkctl` binaries through the harness.

mod daemon;
mod docs;
mod engine;
mod faults;
mod grpc;
mod harness;
mod proving;
mod soak;
