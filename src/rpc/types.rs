//! Wire types of the `Snark` namespace that are not engine snapshots: results of Await/Prove,
//! Version and Reload. Bytes travel as [`Base64Bytes`], the one base64 `[]byte` type shared with
//! the requests.

use serde::{Deserialize, Serialize};

use crate::engine::JobInfo;
use crate::proofs::Base64Bytes;

/// The result of `Snark.Await` and `Snark.Prove`.
#[derive(Debug, Clone, Serialize)]
pub struct ProofResult {
    /// "done" with a proof, or "pending" when the wait timed out.
    pub state: &'static str,
    pub job: JobInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<Base64Bytes>,
}

impl ProofResult {
    pub fn done(job: JobInfo, proof: Vec<u8>) -> Self {
        ProofResult { state: "done", job, proof: Some(Base64Bytes(proof)) }
    }
    pub fn pending(job: JobInfo) -> Self {
        ProofResult { state: "pending", job, proof: None }
    }
}

/// `Snark.Version`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VersionInfo {
    pub version: String,
    pub api: String,
    pub cuda: String,
}

/// `Snark.Reload`: which changed keys took effect and which wait for a restart.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct ReloadReport {
    pub applied: Vec<String>,
    pub restart_required: Vec<String>,
}
