//! CUDA proving backend (not yet built in).

/// One line for Version and Status saying whether CUDA kernels are compiled into this binary.
pub fn cuda_status() -> String {
    "cuda: not built in".into()
}
