//! The last stage before a reply: every proof is verified against the resident verifying key, so a
//! wrong proof (bad parameters, a device fault) becomes an error instead of a rejected sector. Also
//! the wire form of proofs: 192-byte compressed A‖B‖C, multi-partition proofs concatenated.

use blstrs::{Bls12, Scalar as Fr};

use super::{PreparedVerifyingKey, Proof};
use crate::error::{ErrorCode, SnarkError};

/// Bytes of one compressed proof: A (48) ‖ B (96) ‖ C (48).
pub const PROOF_BYTES: usize = 192;

/// Checks `proof` against `pvk` for `public_inputs` (without the leading ONE).
///
/// Ok(false) means the proof is wrong; an error means the inputs do not fit the key.
pub fn verify(
    pvk: &PreparedVerifyingKey<Bls12>,
    proof: &Proof<Bls12>,
    public_inputs: &[Fr],
) -> Result<bool, SnarkError> {
    bellperson::groth16::verify_proof(pvk, proof, public_inputs).map_err(|e| {
        SnarkError::new(
            ErrorCode::VerificationFailed,
            format!(
                "cannot verify against this key with {} public inputs: {e}",
                public_inputs.len()
            ),
        )
    })
}

/// The compressed wire form of one proof, as bellperson's `Proof::write`.
pub fn proof_to_bytes(proof: &Proof<Bls12>) -> [u8; PROOF_BYTES] {
    let mut out = [0u8; PROOF_BYTES];
    out[..48].copy_from_slice(&proof.a.to_compressed());
    out[48..144].copy_from_slice(&proof.b.to_compressed());
    out[144..].copy_from_slice(&proof.c.to_compressed());
    out
}

/// Concatenates proofs (one per partition) in their wire form.
pub fn proofs_to_bytes(proofs: &[Proof<Bls12>]) -> Vec<u8> {
    proofs.iter().flat_map(proof_to_bytes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use group::{Curve, Group};

    #[test]
    fn wire_form_matches_bellperson_write() {
        let mut rng = rand::thread_rng();
        let proof = Proof::<Bls12> {
            a: G1Projective::random(&mut rng).to_affine(),
            b: G2Projective::random(&mut rng).to_affine(),
            c: G1Projective::random(&mut rng).to_affine(),
        };
        let mut theirs = Vec::new();
        proof.write(&mut theirs).unwrap();
        assert_eq!(proof_to_bytes(&proof).as_slice(), theirs.as_slice());

        let two = proofs_to_bytes(&[proof.clone(), proof.clone()]);
        let back: Vec<_> = two.chunks(PROOF_BYTES).map(|c| Proof::<Bls12>::read(c).unwrap()).collect();
        assert_eq!(back, vec![proof.clone(), proof]);
    }
}
