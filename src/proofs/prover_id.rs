//! The prover id of a miner: what filecoin-ffi derives from the miner's ID address.
//!
//! Lotus and Curio pass `miner_id` (the actor id); filecoin-ffi turns it into the 32-byte prover id
//! as the payload of the ID address, the unsigned LEB128 (uvarint) of the id, zero-padded.

use crate::proofs::request::Bytes32;

pub fn from_miner_id(miner_id: u64) -> Bytes32 {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            return Bytes32(out);
        }
        out[i] = byte | 0x80;
        i += 1;
    }
}
