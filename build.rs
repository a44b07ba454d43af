//! Compiles `cuda/` into one fatbin that the library embeds, when an nvcc can be found, and
//! `proto/` into the gRPC messages, server and client (`src/grpc/`).
//!
//! The proto files are parsed by protox, a protobuf compiler in Rust, so a fresh machine needs no
//! system `protoc`.
//!
//! nvcc is looked up in `NVCC`, `$CUDA_HOME/bin`, `PATH`, then the pinned PyPI venv `.venv-cuda/`
//! that `cuda/install-nvcc.sh` creates. Without one the build still succeeds: it warns, and the
//! library reports `cuda: not built in` so that hosts fall back to the CPU prover. Either way the
//! build writes `$OUT_DIR/cuda_kernels.rs`, which `src/gpu/kernels.rs` includes.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Machine code for these architectures. All come from one compute_80 PTX (also embedded, for
/// newer GPUs), so the slow front end runs once and only ptxas runs per architecture.
const DEFAULT_ARCHS: &[&str] = &["80", "86", "89", "90"];
/// The virtual architecture everything is compiled through.
const PTX_ARCH: &str = "80";
/// The cuzk protocol Curio speaks, relative to `PROTO_ROOT`.
const PROTO_FILE: &str = "cuzk/v1/proving.proto";
const PROTO_ROOT: &str = "proto";
/// The translation unit that includes every kernel.
const CUDA_MAIN: &str = "cuda/snarkd.cu";
/// The venv `cuda/install-nvcc.sh` creates, relative to the crate root; nvcc lies under
/// `lib/python3.*/site-packages/` + this.
const VENV: &str = ".venv-cuda";
const VENV_NVCC: &str = "site-packages/nvidia/cu13/bin/nvcc";

fn main() {
    compile_proto();
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["NVCC", "CUDA_HOME", "PATH", "SNARKD_CUDA_ARCHS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let generated = out.join("cuda_kernels.rs");
    let text = match find_nvcc().and_then(|nvcc| compile(&nvcc, &out)) {
        Ok((fatbin, version)) => format!(
            "/// True: this build embeds CUDA kernels.\npub const BUILT_IN: bool = true;\n\
             /// The nvcc that built them.\npub const NVCC_VERSION: &str = {version:?};\n\
             /// The fatbin (cubins plus PTX).\npub static FATBIN: &[u8] = include_bytes!({fatbin:?});\n"
        ),
        Err(why) => {
            println!("cargo:warning=CUDA kernels not built: {why}");
            "/// False: this build has no CUDA kernels.\npub const BUILT_IN: bool = false;\n\
             /// No nvcc was used.\npub const NVCC_VERSION: &str = \"\";\n\
             /// Empty: nothing to load.\npub static FATBIN: &[u8] = &[];\n"
                .to_string()
        }
    };
    fs::write(&generated, text).expect("write cuda_kernels.rs");
}

fn compile_proto() {
    println!("cargo:rerun-if-changed={PROTO_ROOT}");
    let descriptors = protox::compile([PROTO_FILE], [PROTO_ROOT]).unwrap_or_else(|e| panic!("{PROTO_ROOT}/{PROTO_FILE}: {e}"));
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)
        .unwrap_or_else(|e| panic!("generating gRPC code from {PROTO_ROOT}/{PROTO_FILE}: {e}"));
}

fn find_nvcc() -> Result<PathBuf, String> {
    if let Some(nvcc) = env::var_os("NVCC").filter(|v| !v.is_empty()) {
        let nvcc = PathBuf::from(nvcc);
        return if runs(&nvcc) { Ok(nvcc) } else { Err(format!("NVCC={} does not run", nvcc.display())) };
    }
    let mut candidates = Vec::new();
    if let Some(home) = env::var_os("CUDA_HOME") {
        candidates.push(Path::new(&home).join("bin/nvcc"));
    }
    if let Some(path) = env::var_os("PATH") {
        candidates.extend(env::split_paths(&path).map(|dir| dir.join("nvcc")));
    }
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    if let Ok(libs) = fs::read_dir(root.join(VENV).join("lib")) {
        candidates.extend(libs.flatten().map(|python| python.path().join(VENV_NVCC)));
    }
    candidates
        .into_iter()
        .find(|c| c.is_file() && runs(c))
        .ok_or_else(|| "no nvcc in NVCC, CUDA_HOME, PATH or .venv-cuda (run cuda/install-nvcc.sh)".to_string())
}

fn runs(nvcc: &Path) -> bool {
    Command::new(nvcc).arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

fn compile(nvcc: &Path, out: &Path) -> Result<(PathBuf, String), String> {
    let version = Command::new(nvcc)
        .arg("--version")
        .output()
        .map_err(|e| format!("{}: {e}", nvcc.display()))?;
    let version = String::from_utf8_lossy(&version.stdout)
        .lines()
        .find(|l| l.contains("release"))
        .unwrap_or("unknown")
        .trim()
        .to_string();
    let archs: Vec<String> = match env::var("SNARKD_CUDA_ARCHS") {
        Ok(list) if !list.trim().is_empty() => list.split(',').map(|a| a.trim().to_string()).collect(),
        _ => DEFAULT_ARCHS.iter().map(|a| a.to_string()).collect(),
    };
    let fatbin = out.join("snarkd.fatbin");
    let mut cmd = Command::new(nvcc);
    cmd.args(["-fatbin", "-std=c++17", "--threads", "0", "-o"]).arg(&fatbin).arg(CUDA_MAIN);
    let codes: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
    cmd.arg(format!("-gencode=arch=compute_{PTX_ARCH},code=[{},compute_{PTX_ARCH}]", codes.join(",")));
    let result = cmd.output().map_err(|e| format!("{}: {e}", nvcc.display()))?;
    if !result.status.success() {
        return Err(format!("nvcc failed:\n{}", String::from_utf8_lossy(&result.stderr)));
    }
    Ok((fatbin, version))
}
