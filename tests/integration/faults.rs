//! The storage faults an operator meets: a parameter file damaged mid-file, a parameter directory
//! that cannot be read, and a full disk. Each must end in a clear error that names the path,
//! promptly, and the daemon must keep serving.

use std::process::Command;
use std::time::{Duration, Instant};

use snarkd::error::ErrorCode;
use snarkd::proofs::ProofKind;

use super::harness::{block_on, daemon, prove, request, test_params_dir, SNARKCTL, SNARKD};

#[test]
fn a_params_file_corrupted_mid_file_is_caught_at_load() {
    let id = snarkd::proofs::blank::circuit_id(ProofKind::WindowPost, 2048).unwrap();
    let req = request(ProofKind::WindowPost);
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path().join(id.params_file());
    std::fs::copy(test_params_dir().join(id.params_file()), &params).unwrap();
    std::fs::copy(test_params_dir().join(id.vk_file()), dir.path().join(id.vk_file())).unwrap();
    // Overwrite 16 bytes in the middle of the file: inside some point of some section.
    let mut bytes = std::fs::read(&params).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 16] {
        *b ^= 0x5a;
    }
    std::fs::write(&params, bytes).unwrap();

    let d = daemon().args(["--params-dir", dir.path().to_str().unwrap()]).start().unwrap();
    let e = prove(&d, req).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::ParamsMissing.code()), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&params.display().to_string()) && msg.contains("is corrupt at offset"), "{msg}");
    // Nothing was kept from the damaged file: asking again reads it again and fails again.
    let again = prove(&d, request(ProofKind::WindowPost)).unwrap_err();
    assert_eq!(again.code(), Some(ErrorCode::ParamsMissing.code()), "{again}");
    let status = block_on(d.client().call("Status", vec![])).unwrap();
    assert_eq!(status["params"]["resident"].as_array().map_or(0, Vec::len), 0, "{status}");
}

#[test]
fn an_unreadable_params_dir_is_a_clear_error_not_a_hang() {
    // A regular file where the directory should be: every open fails with ENOTDIR.
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("params");
    std::fs::write(&not_a_dir, b"not a directory").unwrap();
    let d = daemon().args(["--params-dir", not_a_dir.to_str().unwrap()]).start().unwrap();
    let started = Instant::now();
    let e = prove(&d, request(ProofKind::WinningPost)).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(e.code(), Some(ErrorCode::ParamsMissing.code()), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&not_a_dir.display().to_string()) && msg.contains("Not a directory"), "{msg}");
    assert!(block_on(d.client().call("Version", vec![])).is_ok(), "keeps serving");
}

/// A small tmpfs with `dirs` made and then every byte and inode used up, unmounted on drop.
struct FullDisk(tempfile::TempDir);

impl FullDisk {
    fn new(dirs: &[&str]) -> FullDisk {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256k,nr_inodes=16", "snarkd-full", dir.path().to_str().unwrap()])
            .output()
            .expect("run mount");
        assert!(out.status.success(), "this test mounts a small tmpfs and needs root: {out:?}");
        for d in dirs {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        for i in 0.. {
            let Ok(mut f) = std::fs::File::create(dir.path().join(format!("filler{i}"))) else { break };
            let _ = std::io::Write::write_all(&mut f, &[0u8; 64 << 10]);
        }
        FullDisk(dir)
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_is_a_clear_error_not_a_hang() {
    let full = FullDisk::new(&["testdata", "run"]);
    // Sealing test data onto it fails naming the space problem.
    let started = Instant::now();
    let out = Command::new(SNARKCTL)
        .args(["testdata", "--sector-size", "2KiB", "--out"])
        .arg(full.0.path().join("testdata"))
        .env("SNARKD_TEST_PARAMS", test_params_dir())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&full.0.path().display().to_string()) && err.contains("No space left on device"), "{err}");

    // The daemon cannot create its socket there: it exits 1 naming the path, it does not hang.
    let socket = full.0.path().join("run/snarkd.sock");
    let started = Instant::now();
    let out = Command::new(SNARKD).arg("--socket").arg(&socket).args(["--log-target", "text"]).output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&socket.parent().unwrap().display().to_string()) && err.contains("No space left on device"), "{err}");
}
