//! The kernels build.rs compiled from cuda/ (or the record that none were), embedded in the library.
include!(concat!(env!("OUT_DIR"), "/cuda_kernels.rs"));
