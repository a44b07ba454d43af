//! The library's tests, compiled into one binary: each module drives snarkd's crate in-process
//! (kernels built for the host, the Groth16 pipeline against bellperson, proof requests against
//! filecoin-proofs, the engine with fakes, the fuzz targets, the GPU backend), with no daemon.
//! Tests of the real `snarkd`/`snarkctl` binaries live in the `integration` binary.

mod docs;
mod engine;
mod field_host;
mod fuzz;
mod gpu;
mod groth16;
mod host_cpp;
mod msm_host;
mod proofs;
