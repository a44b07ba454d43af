//! The short soak CI runs: `snarkctl bench soak` against a real daemon with concurrent clients,
//! all four kinds and malformed requests mixed in. The long run is recorded in bench/RESULTS.md.

use std::process::Command;

use serde_json::Value;
use snarkd::proofs::ProofKind;

use super::harness::{request, test_params_dir, SNARKCTL};

#[test]
fn a_short_soak_loses_nothing_and_leaks_nothing() {
    for kind in ProofKind::ALL {
        let _ = request(kind); // fails clearly when the test parameters are missing
    }
    let out = Command::new(SNARKCTL)
        .args(["--json", "bench", "soak", "--clients", "4", "--duration", "30s", "--malformed-every", "3", "--params-dir"])
        .arg(test_params_dir())
        .output()
        .expect("run snarkctl bench soak");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "soak failed:\n{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(report["problems"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["lost"], serde_json::json!([]), "{report:#}");
    assert!(report["malformed_sent"].as_u64().unwrap() > 0, "{report:#}");
    for kind in ProofKind::ALL {
        let sent = report["sent"][kind.name()].as_u64().unwrap_or(0);
        assert!(sent > 0 && report["verified"][kind.name()].as_u64() == Some(sent), "{kind}: {report:#}");
    }
    assert_eq!(report["reserved_end"], 0);
    assert!(report["end"]["fds"].as_u64() <= report["baseline"]["fds"].as_u64(), "{report:#}");
}
