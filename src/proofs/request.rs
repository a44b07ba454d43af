//! The wire form of a proof request: one JSON object, internally tagged by `"kind"`, whose fields
//! are the bytes and numbers Lotus and Curio already hold when they call filecoin-ffi.
//!
//! Parsing is by hand, field by field, so that every error names the field it is about
//! (`randomness: …`); serde's derived errors say only what was expected. Byte fields accept the
//! forms Go clients produce: base64 for `[]byte` (go-jsonrpc), an array of numbers for `[32]byte`,
//! and hex for people typing requests.

use base64::Engine as _;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::SnarkError;
use crate::proofs::ProofKind;

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// One proof to compute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProofRequest {
    /// filecoin-ffi `SealCommitPhase2(phase1Output, sectorNum, minerID)`.
    PorepC2 {
        /// `serde_json` of filecoin-proofs-api's `SealCommitPhase1Output`.
        c1_output: Base64Bytes,
        sector_number: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        miner_id: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        prover_id: Option<Bytes32>,
    },
    /// filecoin-ffi `GenerateSinglePartitionWindowPoStWithVanilla`: the vanilla proofs of the
    /// sectors in partition `partition_index` of a deadline.
    WindowPost {
        registered_post_proof: PoStProofType,
        randomness: Bytes32,
        #[serde(skip_serializing_if = "Option::is_none")]
        miner_id: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        prover_id: Option<Bytes32>,
        partition_index: usize,
        /// bincode of `FallbackPoStSectorProof`, one per sector.
        vanilla_proofs: Vec<Base64Bytes>,
    },
    /// filecoin-ffi `GenerateWinningPoStWithVanilla`.
    WinningPost {
        registered_post_proof: PoStProofType,
        randomness: Bytes32,
        #[serde(skip_serializing_if = "Option::is_none")]
        miner_id: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        prover_id: Option<Bytes32>,
        vanilla_proofs: Vec<Base64Bytes>,
    },
    /// filecoin-ffi `GenerateUpdateProofWithVanilla`.
    SnapDeals {
        registered_update_proof: UpdateProofType,
        /// bincode of `PartitionProof`, one per partition.
        vanilla_proofs: Vec<Base64Bytes>,
        comm_r_old: Bytes32,
        comm_r_new: Bytes32,
        comm_d_new: Bytes32,
    },
}

impl ProofRequest {
    pub fn kind(&self) -> ProofKind {
        match self {
            ProofRequest::PorepC2 { .. } => ProofKind::PorepC2,
            ProofRequest::WindowPost { .. } => ProofKind::WindowPost,
            ProofRequest::WinningPost { .. } => ProofKind::WinningPost,
            ProofRequest::SnapDeals { .. } => ProofKind::SnapDeals,
        }
    }

    /// Parses a request from JSON text.
    pub fn from_json(text: &[u8]) -> Result<ProofRequest, SnarkError> {
        let value: Value = serde_json::from_slice(text).map_err(|e| SnarkError::bad_input(format!("request: {e}")))?;
        Self::from_value(&value)
    }

    /// Parses a request from a JSON value, naming the field of the first problem found.
    pub fn from_value(value: &Value) -> Result<ProofRequest, SnarkError> {
        let obj = value.as_object().ok_or_else(|| SnarkError::bad_input("request: expected a JSON object"))?;
        let kind: String = field(obj, "kind")?;
        let kind = ProofKind::parse(&kind).filter(|k| k.name() == kind).ok_or_else(|| {
            SnarkError::bad_input(format!(
                "kind: unknown value {kind:?} (expected porep_c2, window_post, winning_post or snap_deals)"
            ))
        })?;
        let allowed: &[&str] = match kind {
            ProofKind::PorepC2 => &["c1_output", "sector_number", "miner_id", "prover_id"],
            ProofKind::WindowPost => {
                &["registered_post_proof", "randomness", "miner_id", "prover_id", "partition_index", "vanilla_proofs"]
            }
            ProofKind::WinningPost => {
                &["registered_post_proof", "randomness", "miner_id", "prover_id", "vanilla_proofs"]
            }
            ProofKind::SnapDeals => {
                &["registered_update_proof", "vanilla_proofs", "comm_r_old", "comm_r_new", "comm_d_new"]
            }
        };
        if let Some(unknown) = obj.keys().find(|k| *k != "kind" && !allowed.contains(&k.as_str())) {
            return Err(SnarkError::bad_input(format!("{unknown}: unknown field for kind {kind}")));
        }
        Ok(match kind {
            ProofKind::PorepC2 => ProofRequest::PorepC2 {
                c1_output: field(obj, "c1_output")?,
                sector_number: field(obj, "sector_number")?,
                miner_id: optional(obj, "miner_id")?,
                prover_id: optional(obj, "prover_id")?,
            },
            ProofKind::WindowPost => ProofRequest::WindowPost {
                registered_post_proof: field(obj, "registered_post_proof")?,
                randomness: field(obj, "randomness")?,
                miner_id: optional(obj, "miner_id")?,
                prover_id: optional(obj, "prover_id")?,
                partition_index: field(obj, "partition_index")?,
                vanilla_proofs: list(obj, "vanilla_proofs")?,
            },
            ProofKind::WinningPost => ProofRequest::WinningPost {
                registered_post_proof: field(obj, "registered_post_proof")?,
                randomness: field(obj, "randomness")?,
                miner_id: optional(obj, "miner_id")?,
                prover_id: optional(obj, "prover_id")?,
                vanilla_proofs: list(obj, "vanilla_proofs")?,
            },
            ProofKind::SnapDeals => ProofRequest::SnapDeals {
                registered_update_proof: field(obj, "registered_update_proof")?,
                vanilla_proofs: list(obj, "vanilla_proofs")?,
                comm_r_old: field(obj, "comm_r_old")?,
                comm_r_new: field(obj, "comm_r_new")?,
                comm_d_new: field(obj, "comm_d_new")?,
            },
        })
    }

    /// Builds a PoRep request from Curio's C1 file, `{"SectorNum", "Phase1Out" (base64), "SectorSize"}`.
    /// The file does not name the miner, so the caller supplies it.
    pub fn from_curio_c1(file: &[u8], miner_id: u64) -> Result<ProofRequest, SnarkError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct CurioC1 {
            sector_num: u64,
            phase1_out: Base64Bytes,
        }
        let c1: CurioC1 =
            serde_json::from_slice(file).map_err(|e| SnarkError::bad_input(format!("curio c1 file: {e}")))?;
        Ok(ProofRequest::PorepC2 {
            c1_output: c1.phase1_out,
            sector_number: c1.sector_num,
            miner_id: Some(miner_id),
            prover_id: None,
        })
    }
}

impl<'de> Deserialize<'de> for ProofRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        ProofRequest::from_value(&value).map_err(|e| serde::de::Error::custom(e.message))
    }
}

fn field<T: DeserializeOwned>(obj: &Map<String, Value>, name: &str) -> Result<T, SnarkError> {
    let value = obj.get(name).ok_or_else(|| SnarkError::bad_input(format!("{name}: missing")))?;
    T::deserialize(value).map_err(|e| SnarkError::bad_input(format!("{name}: {e}")))
}

/// An absent field and `null` both mean "not given", as Go's `omitempty` and nil pointers send them.
fn optional<T: DeserializeOwned>(obj: &Map<String, Value>, name: &str) -> Result<Option<T>, SnarkError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => field(obj, name).map(Some),
    }
}

/// A list whose element errors carry their index, e.g. `vanilla_proofs[2]: …`.
fn list<T: DeserializeOwned>(obj: &Map<String, Value>, name: &str) -> Result<Vec<T>, SnarkError> {
    let items: Vec<Value> = field(obj, name)?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| T::deserialize(v).map_err(|e| SnarkError::bad_input(format!("{name}[{i}]: {e}"))))
        .collect()
}

/// Opaque bytes, base64 (standard alphabet, padded) on the wire as Go's `encoding/json` writes `[]byte`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Base64Bytes(pub Vec<u8>);

impl std::fmt::Debug for Base64Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Base64Bytes({} bytes)", self.0.len())
    }
}

impl Serialize for Base64Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&BASE64.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Base64Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        BASE64
            .decode(text.as_bytes())
            .map(Base64Bytes)
            .map_err(|e| serde::de::Error::custom(format!("not valid base64 ({e})")))
    }
}

/// 32 bytes: a commitment, randomness or a prover id. Serialized as base64.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Bytes32(pub [u8; 32]);

impl std::fmt::Debug for Bytes32 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes32({})", hex::encode(self.0))
    }
}

impl Serialize for Bytes32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&BASE64.encode(self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Numbers(Vec<u8>),
        }
        let bytes = match Form::deserialize(d)
            .map_err(|_| serde::de::Error::custom("expected 32 bytes as base64, hex or an array of numbers"))?
        {
            Form::Numbers(bytes) => bytes,
            // 32 bytes are 44 characters of padded base64 or 64 of hex: the length tells them apart.
            Form::Text(text) if text.len() == 64 => {
                hex::decode(&text).map_err(|e| serde::de::Error::custom(format!("not valid hex ({e})")))?
            }
            Form::Text(text) if text.len() == 66 && text.starts_with("0x") => {
                hex::decode(&text[2..]).map_err(|e| serde::de::Error::custom(format!("not valid hex ({e})")))?
            }
            Form::Text(text) => BASE64
                .decode(text.as_bytes())
                .map_err(|e| serde::de::Error::custom(format!("not valid base64 or hex ({e})")))?,
        };
        let len = bytes.len();
        bytes.try_into().map(Bytes32).map_err(|_| serde::de::Error::custom(format!("expected 32 bytes, got {len}")))
    }
}

/// A WindowPoSt or WinningPoSt proof type: its name (`StackedDrgWindow2KiBV1_2`) or the number
/// filecoin-ffi and go-state-types use for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoStProofType(pub RegisteredPoStProof);

/// A SnapDeals update proof type, by name (`StackedDrg2KiBV1`) or number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateProofType(pub RegisteredUpdateProof);

impl PoStProofType {
    /// The proof type filecoin-ffi and go-state-types number `n` (WindowPoSt `V1_1`, 10–14, is `V1_2` here).
    pub fn from_number(n: u64) -> Option<PoStProofType> {
        usize::try_from(n).ok().and_then(|i| POST_PROOFS.get(i)).copied().map(PoStProofType)
    }
}

impl UpdateProofType {
    /// The update proof type filecoin-ffi and go-state-types number `n`.
    pub fn from_number(n: u64) -> Option<UpdateProofType> {
        usize::try_from(n).ok().and_then(|i| UPDATE_PROOFS.get(i)).copied().map(UpdateProofType)
    }
}

/// Every PoSt proof type, at the index of its ffi number (the enums are append-only, so the
/// declaration order is the numbering).
const POST_PROOFS: [RegisteredPoStProof; 15] = {
    use RegisteredPoStProof::*;
    [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ]
};

const UPDATE_PROOFS: [RegisteredUpdateProof; 5] = {
    use RegisteredUpdateProof::*;
    [StackedDrg2KiBV1, StackedDrg8MiBV1, StackedDrg512MiBV1, StackedDrg32GiBV1, StackedDrg64GiBV1]
};

/// The name serde gives a fieldless enum variant.
fn variant_name<T: Serialize>(v: T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => unreachable!("registered proofs serialize as strings"),
    }
}

fn parse_registered<T: Copy + Serialize, E: serde::de::Error>(
    value: Value,
    all: &[T],
    // go-state-types names the WindowPoSt types that fixed grinding `…V1_1`; Rust names them `…V1_2`.
    go_alias: impl Fn(&str) -> Option<String>,
) -> Result<T, E> {
    match &value {
        Value::Number(n) => n.as_u64().and_then(|i| all.get(i as usize).copied()),
        Value::String(s) => {
            let canonical = go_alias(s).unwrap_or_else(|| s.clone());
            all.iter().copied().find(|p| variant_name(*p) == canonical)
        }
        _ => None,
    }
    .ok_or_else(|| E::custom(format!("unknown value {value}")))
}

impl<'de> Deserialize<'de> for PoStProofType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let alias =
            |s: &str| s.strip_suffix("V1_1").filter(|p| p.starts_with("StackedDrgWindow")).map(|p| format!("{p}V1_2"));
        parse_registered(Value::deserialize(d)?, &POST_PROOFS, alias).map(PoStProofType)
    }
}

impl Serialize for PoStProofType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&variant_name(self.0))
    }
}

impl<'de> Deserialize<'de> for UpdateProofType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse_registered(Value::deserialize(d)?, &UPDATE_PROOFS, |_| None).map(UpdateProofType)
    }
}

impl Serialize for UpdateProofType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&variant_name(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_is_declaration_order() {
        for (i, p) in POST_PROOFS.iter().enumerate() {
            assert_eq!(*p as usize, i);
        }
        for (i, p) in UPDATE_PROOFS.iter().enumerate() {
            assert_eq!(*p as usize, i);
        }
    }
}
