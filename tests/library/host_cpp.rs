//! Shared by the host builds of kernel sources (field_host, msm_host): compiling
//! a cuda/test program with the system C++ compiler, feeding it text and reading hex words back.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Montgomery limbs as the kernels read them (blstrs' own memory, little-endian u32 words).
pub fn words<T: Copy, const N: usize>(v: &T) -> [u32; N] {
    assert_eq!(std::mem::size_of::<T>(), 4 * N);
    // SAFETY: the blstrs types used here are plain arrays of u64 limbs of exactly this size.
    unsafe { std::mem::transmute_copy(v) }
}

/// Compiles cuda/test/`source` into a temporary executable.
pub fn compile(source: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let stem = source.trim_end_matches(".cpp");
    let out = std::env::temp_dir().join(format!("snarkd-{stem}-{}", std::process::id()));
    let status = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        // the kernels read points through uint4 views (xyzz.cuh's load_affine)
        .args(["-std=c++17", "-O2", "-fno-strict-aliasing", "-I"])
        .arg(root.join("cuda"))
        .arg("-o")
        .arg(&out)
        .arg(root.join("cuda/test").join(source))
        .status()
        .expect("run the C++ compiler (c++ or $CXX)");
    assert!(status.success(), "cuda/test/{source} did not compile");
    out
}

/// Runs `exe` on `input` and returns its output lines as hex words; the program must succeed.
pub fn run(exe: &Path, input: String) -> Vec<Vec<u32>> {
    let mut child = Command::new(exe).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("run the host program");
    // fed from a thread: the program may answer line by line, so a full stdout pipe would stop it
    let mut stdin = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("host program output");
    feeder.join().expect("feeder thread").expect("feed the host program");
    assert!(out.status.success(), "{} exited with {}", exe.display(), out.status);
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| l.split_whitespace().map(|w| u32::from_str_radix(w, 16).expect("hex")).collect())
        .collect()
}

/// "tag w0 w1 …" with the words in hex.
pub fn line(tag: &str, ws: &[u32]) -> String {
    let mut s = tag.to_string();
    for w in ws {
        s.push_str(&format!(" {w:x}"));
    }
    s
}
