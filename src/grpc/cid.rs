//! Filecoin commitment CIDs as Curio sends them for SnapDeals (`cid.Bytes()` of the sector key,
//! the new sealed and the new unsealed CID), next to the raw 32-byte commitments cuzk's own
//! clients send. A CIDv1 is four unsigned varints (version 1, codec, multihash code, digest
//! length 32) followed by the 32-byte digest; codec and hash say which commitment it is.

use crate::error::SnarkError;
use crate::proofs::Bytes32;

/// Which commitment a field holds, and so which codec and hash its CID must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commitment {
    /// CommR: `fil-commitment-sealed`, `poseidon-bls12_381-a2-fc1`.
    Sealed,
    /// CommD: `fil-commitment-unsealed`, `sha2-256-trunc254-padded`.
    Unsealed,
}

// The multicodec table's numbers; commitment CIDs read "bagboea4b5abc…" (sealed) and
// "baga6ea4seaq…" (unsealed) in base32.
const CODEC_UNSEALED: u64 = 0xf101;
const CODEC_SEALED: u64 = 0xf102;
const HASH_POSEIDON: u64 = 0xb401;
const HASH_SHA256_TRUNC254: u64 = 0x1012;
const DIGEST_BYTES: u64 = 32;

impl Commitment {
    fn codec(self) -> u64 {
        match self {
            Commitment::Sealed => CODEC_SEALED,
            Commitment::Unsealed => CODEC_UNSEALED,
        }
    }

    fn hash(self) -> u64 {
        match self {
            Commitment::Sealed => HASH_POSEIDON,
            Commitment::Unsealed => HASH_SHA256_TRUNC254,
        }
    }

    fn codec_name(self) -> &'static str {
        match self {
            Commitment::Sealed => "fil-commitment-sealed",
            Commitment::Unsealed => "fil-commitment-unsealed",
        }
    }
}

/// The commitment in `bytes`, given either raw (32 bytes) or as CID bytes; `field` names the
/// request field in errors.
pub fn commitment(field: &str, bytes: &[u8], want: Commitment) -> Result<Bytes32, SnarkError> {
    if let Ok(raw) = <[u8; 32]>::try_from(bytes) {
        return Ok(Bytes32(raw));
    }
    if bytes.is_empty() {
        return Err(SnarkError::bad_input(format!("{field}: missing (32 raw bytes or a commitment CID)")));
    }
    let bad = |why: String| SnarkError::bad_input(format!("{field}: not 32 raw bytes nor a commitment CID ({why})"));
    let mut rest = bytes;
    let version = varint(&mut rest).ok_or_else(|| bad("truncated CID version".into()))?;
    if version != 1 {
        return Err(bad(format!("CID version {version}, expected 1")));
    }
    let codec = varint(&mut rest).ok_or_else(|| bad("truncated CID codec".into()))?;
    let hash = varint(&mut rest).ok_or_else(|| bad("truncated multihash code".into()))?;
    let len = varint(&mut rest).ok_or_else(|| bad("truncated digest length".into()))?;
    if codec != want.codec() {
        return Err(SnarkError::bad_input(format!(
            "{field}: CID codec {codec:#x}, but this field takes a {} CID (codec {:#x})",
            want.codec_name(),
            want.codec()
        )));
    }
    if hash != want.hash() {
        return Err(SnarkError::bad_input(format!(
            "{field}: multihash {hash:#x}, but a {} CID uses {:#x}",
            want.codec_name(),
            want.hash()
        )));
    }
    if len != DIGEST_BYTES || rest.len() as u64 != DIGEST_BYTES {
        return Err(bad(format!("digest length {len} with {} bytes left, expected 32", rest.len())));
    }
    Ok(Bytes32(rest.try_into().expect("length checked")))
}

/// The CID bytes of a commitment, as go-cid's `Bytes()` writes them.
pub fn encode(commitment: Commitment, digest: &Bytes32) -> Vec<u8> {
    let mut out = Vec::with_capacity(40);
    for n in [1, commitment.codec(), commitment.hash(), DIGEST_BYTES] {
        put_varint(&mut out, n);
    }
    out.extend_from_slice(&digest.0);
    out
}

/// Reads one unsigned LEB128 varint (at most 9 bytes, as multiformats allows) off the front.
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(9) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_cid_matches_go_cid_bytes() {
        // go-fil-commcid: ReplicaCommitmentV1ToCID(d).Bytes() = 01 82e203 81e802 20 <d>, and
        // DataCommitmentV1ToCID(d).Bytes() = 01 81e203 9220 20 <d>.
        let d = Bytes32([7; 32]);
        let bytes = encode(Commitment::Sealed, &d);
        assert_eq!(hex::encode(&bytes[..8]), "0182e20381e80220");
        assert_eq!(commitment("comm_r_new", &bytes, Commitment::Sealed).unwrap(), d);
        let unsealed = encode(Commitment::Unsealed, &d);
        assert_eq!(hex::encode(&unsealed[..7]), "0181e203922020");
        assert_eq!(commitment("comm_d_new", &unsealed, Commitment::Unsealed).unwrap(), d);
    }

    #[test]
    fn raw_commitments_pass_through() {
        assert_eq!(commitment("comm_r_old", &[9; 32], Commitment::Sealed).unwrap(), Bytes32([9; 32]));
    }

    #[test]
    fn a_cid_of_the_wrong_commitment_names_the_field() {
        let unsealed = encode(Commitment::Unsealed, &Bytes32([1; 32]));
        let e = commitment("comm_r_new", &unsealed, Commitment::Sealed).unwrap_err();
        assert!(e.message.starts_with("comm_r_new: CID codec 0xf101"), "{}", e.message);
        let mut truncated = encode(Commitment::Sealed, &Bytes32([1; 32]));
        truncated.pop();
        let e = commitment("comm_r_old", &truncated, Commitment::Sealed).unwrap_err();
        assert!(e.message.contains("comm_r_old") && e.message.contains("digest length"), "{}", e.message);
        let e = commitment("comm_d_new", &[], Commitment::Unsealed).unwrap_err();
        assert!(e.message.starts_with("comm_d_new: missing"), "{}", e.message);
        let e = commitment("comm_d_new", &[0xff; 12], Commitment::Unsealed).unwrap_err();
        assert!(e.message.contains("truncated"), "{}", e.message);
    }
}
