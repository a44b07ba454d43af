//! All integration tests, compiled into one binary (ripgrep's habit): each module drives the real
//! `snarkd`/`snarkctl` binaries, most of them through the harness, and `packaging` through the
//! installed units' own command lines. In-process tests of the library are in the `library` binary.

mod daemon;
mod faults;
mod grpc;
mod harness;
mod packaging;
mod proving;
mod soak;
