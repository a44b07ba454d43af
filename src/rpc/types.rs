//! Wire types of the `Snark` namespace that are not engine snapshots: results of Await/Prove,
//! Version and Reload, and the base64 `[]byte` encoding go-jsonrpc uses.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::engine::JobInfo;

/// Bytes as go-jsonrpc sends `[]byte`: standard base64 with padding.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Base64(pub Vec<u8>);

impl Serialize for Base64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use base64::Engine;
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map(Base64)
            .map_err(|e| serde::de::Error::custom(format!("not standard base64: {e}")))
    }
}

/// The result of `Snark.Await` and `Snark.Prove`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProofResult {
    /// "done" with a proof, or "pending" when the wait timed out.
    pub state: String,
    pub job: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<Base64>,
}

impl ProofResult {
    pub fn done(info: &JobInfo, proof: Vec<u8>) -> Self {
        ProofResult { state: "done".into(), job: serde_json::to_value(info).unwrap_or_default(), proof: Some(Base64(proof)) }
    }
    pub fn pending(info: &JobInfo) -> Self {
        ProofResult { state: "pending".into(), job: serde_json::to_value(info).unwrap_or_default(), proof: None }
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
