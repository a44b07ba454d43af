//! Filecoin proof requests: the four kinds Lotus and Curio hand over, decoded and validated into
//! a [`Statement`] the engine can synthesize partition by partition and verify.
//!
//! Inputs are exactly the bytes filecoin-ffi produces (C1 JSON, bincode vanilla proofs). Every
//! decoding failure is a typed [`SnarkError`] that names the bad field; nothing here panics on input.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bellperson::groth16::{self, Parameters, Proof};
use bellperson::Circuit;
use bincode::Options as _;
use blstrs::{Bls12, Scalar as Fr};
use serde::{Deserialize, Serialize};

use crate::error::SnarkError;
use crate::groth16::precompiled::PrecompileError;
use crate::groth16::{Precompiled, Witness};
use crate::srs::CircuitId;
use crate::units::Bytes;

pub mod blank;
mod check;
mod porep;
mod post;
pub mod prover_id;
pub mod request;
pub mod shape;
mod size;
mod snap;
mod split;

pub use size::circuit_size;
pub use request::{Base64Bytes, Bytes32, PoStProofType, ProofRequest, UpdateProofType};

/// The four proofs a storage provider needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProofKind {
    PorepC2,
    WindowPost,
    WinningPost,
    SnapDeals,
}

impl ProofKind {
    pub const ALL: [ProofKind; 4] =
        [ProofKind::PorepC2, ProofKind::WindowPost, ProofKind::WinningPost, ProofKind::SnapDeals];

    pub const fn name(self) -> &'static str {
        match self {
            ProofKind::PorepC2 => "porep_c2",
            ProofKind::WindowPost => "window_post",
            ProofKind::WinningPost => "winning_post",
            ProofKind::SnapDeals => "snap_deals",
        }
    }

    pub fn parse(s: &str) -> Option<ProofKind> {
        let s = s.to_ascii_lowercase().replace('-', "_");
        match s.as_str() {
            "porep" | "porep_c2" | "c2" => Some(ProofKind::PorepC2),
            "window" | "window_post" | "windowpost" => Some(ProofKind::WindowPost),
            "winning" | "winning_post" | "winningpost" => Some(ProofKind::WinningPost),
            "snap" | "snap_deals" | "snapdeals" | "update" => Some(ProofKind::SnapDeals),
            _ => None,
        }
    }
}

impl std::fmt::Display for ProofKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A decoded, validated request: everything needed to synthesize each partition's circuit and to
/// check the assembled proof. Implemented per proof kind; the engine sees only this trait.
pub trait Statement: Send + Sync {
    fn kind(&self) -> ProofKind;
    /// Which parameters prove this statement.
    fn circuit(&self) -> CircuitId;
    /// Number of Groth16 circuits (partitions) in the proof, each proved separately.
    fn partitions(&self) -> usize;
    /// Estimated peak bytes of one partition's witness, for the memory budget.
    fn witness_bytes(&self) -> Bytes;
    /// Runs the circuit of `partition` through snarkd's constraint system, its repeated parts in
    /// parallel on rayon's pool (proofs/split.rs); the witness equals the sequential one exactly.
    fn synthesize(&self, partition: usize) -> Result<Witness, SnarkError>;
    /// The same witness from the library's circuit as bellperson runs it (one thread, except that
    /// FallbackPoSt extends the system with sector chunks it synthesizes on rayon): the reference
    /// [`Statement::synthesize`] is tested and benchmarked against. The engine does not use it;
    /// a statement that does not fork has nothing else to offer.
    fn synthesize_sequential(&self, partition: usize) -> Result<Witness, SnarkError> {
        self.synthesize(partition)
    }
    /// The public inputs the verifier uses for `partition` (without the leading ONE).
    fn public_inputs(&self, partition: usize) -> Result<Vec<Fr>, SnarkError>;
    /// Records this statement's circuit (partition 0's: every partition and every statement of
    /// [`Statement::circuit`] has the same structure), so that its later syntheses inside
    /// [`crate::groth16::precompiled`] skip A and B. PoRep's and SnapDeals' challenges and
    /// FallbackPoSt's sectors are recorded in parallel (`split.rs`).
    fn record(&self) -> Result<Precompiled, SnarkError>;
    /// The same record from the library's circuit run in place on one thread: what
    /// [`Statement::record`] is tested against where it records in parallel.
    fn record_sequential(&self) -> Result<Precompiled, SnarkError> {
        self.record()
    }
}

/// Decodes and validates `req` into the statement the engine proves. This decodes and checks the
/// vanilla proofs, so it costs up to a few seconds for 32 GiB inputs: call it off the connection task.
pub fn prepare(req: &ProofRequest) -> Result<Box<dyn Statement>, SnarkError> {
    prepare_any(req).map(Prepared::into_statement)
}

/// Proves one partition of `req` with bellperson's own prover against `params`: the reference
/// that snarkd's pipeline must agree with (same circuit, same public inputs, same proof format).
pub fn reference_proof(
    req: &ProofRequest,
    partition: usize,
    params: &Parameters<Bls12>,
) -> Result<Proof<Bls12>, SnarkError> {
    prepare_any(req)?.reference_proof(partition, params)
}

/// Counts the variables and constraints of one partition's circuit for `req`.
pub fn measure(req: &ProofRequest, partition: usize) -> Result<CircuitSize, SnarkError> {
    prepare_any(req)?.measure(partition)
}

/// Evaluates one partition's circuit for `req` and checks that every constraint holds and that the
/// inputs it allocates are [`Statement::public_inputs`]: the circuit half of [`reference_proof`],
/// without parameters.
pub fn check_circuit(req: &ProofRequest, partition: usize) -> Result<(), SnarkError> {
    let prepared = prepare_any(req)?;
    let allocated = prepared.check(partition)?;
    let expected = prepared.public_inputs(partition)?;
    if allocated != expected {
        return Err(SnarkError::internal(format!(
            "partition {partition}: the circuit allocates {} inputs that differ from the {} public inputs",
            allocated.len(),
            expected.len()
        )));
    }
    Ok(())
}

/// A statement that can also hand its circuits to bellperson ([`reference_proof`]), to the
/// counter ([`measure`]) and to the checker ([`check_circuit`]).
trait Prepared: Statement {
    fn reference_proof(&self, partition: usize, params: &Parameters<Bls12>) -> Result<Proof<Bls12>, SnarkError>;
    fn measure(&self, partition: usize) -> Result<CircuitSize, SnarkError>;
    /// The circuit's allocated public inputs, once every constraint is known to hold.
    fn check(&self, partition: usize) -> Result<Vec<Fr>, SnarkError>;
    /// `Box<dyn Prepared>` as `Box<dyn Statement>`: trait upcasting is newer than our rust-version.
    fn into_statement(self: Box<Self>) -> Box<dyn Statement>;
}

fn prepare_any(req: &ProofRequest) -> Result<Box<dyn Prepared>, SnarkError> {
    match req {
        ProofRequest::PorepC2 { c1_output, sector_number, miner_id, prover_id } => {
            porep::prepare(&c1_output.0, *sector_number, resolve_prover_id(*miner_id, *prover_id)?)
        }
        ProofRequest::WindowPost {
            registered_post_proof,
            randomness,
            miner_id,
            prover_id,
            partition_index,
            vanilla_proofs,
        } => post::prepare(
            ProofKind::WindowPost,
            registered_post_proof.0,
            *randomness,
            resolve_prover_id(*miner_id, *prover_id)?,
            Some(*partition_index),
            vanilla_proofs,
        ),
        ProofRequest::WinningPost { registered_post_proof, randomness, miner_id, prover_id, vanilla_proofs } => {
            post::prepare(
                ProofKind::WinningPost,
                registered_post_proof.0,
                *randomness,
                resolve_prover_id(*miner_id, *prover_id)?,
                None,
                vanilla_proofs,
            )
        }
        ProofRequest::SnapDeals { registered_update_proof, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new } => {
            snap::prepare(registered_update_proof.0, vanilla_proofs, *comm_r_old, *comm_r_new, *comm_d_new)
        }
    }
}

/// The prover id from exactly one of `miner_id` (as filecoin-ffi derives it) and `prover_id`.
fn resolve_prover_id(miner_id: Option<u64>, prover_id: Option<Bytes32>) -> Result<Bytes32, SnarkError> {
    match (miner_id, prover_id) {
        (Some(id), None) => Ok(prover_id::from_miner_id(id)),
        (None, Some(p)) => field_element("prover_id", &p).map(|_| p),
        (Some(_), Some(_)) => Err(SnarkError::bad_input("miner_id: give either miner_id or prover_id, not both")),
        (None, None) => Err(SnarkError::bad_input("miner_id: missing (or give prover_id)")),
    }
}

/// `bytes` as a field element, the way filecoin-proofs' `as_safe_commitment` reads commitments,
/// randomness and prover ids (little-endian, canonical).
fn field_element(name: &str, bytes: &Bytes32) -> Result<Fr, SnarkError> {
    filecoin_proofs_api::fr32::bytes_into_fr(&bytes.0).map_err(|_| {
        let why = if bytes.0[31] & 0xc0 != 0 { "top bits set" } else { "not below the field modulus" };
        SnarkError::bad_input(format!("{name}: not a valid Fr ({why})"))
    })
}

/// Decodes one bincode value exactly as filecoin-proofs' `bincode::deserialize` does (fixed-width
/// integers, trailing bytes allowed), but limited to the input's length: bincode's limit counts
/// bytes read, and a byte string whose length prefix claims more than the input holds fails before
/// it is allocated (sequences only preallocate serde's cautious cap and grow as elements decode).
fn decode_bincode<T: serde::de::DeserializeOwned>(name: &str, bytes: &[u8]) -> Result<T, SnarkError> {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes()
        .with_limit(bytes.len() as u64)
        .deserialize(bytes)
        .map_err(|e| SnarkError::bad_input(format!("{name}: not a valid bincode proof ({e})")))
}

/// Runs upstream code on request data. storage-proofs asserts (panics) on some malformed inputs
/// where it would be right to return an error; here both become a bad-input error naming `name`.
fn guarded<T>(name: &str, f: impl FnOnce() -> anyhow::Result<T>) -> Result<T, SnarkError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(SnarkError::bad_input(format!("{name}: {e:#}"))),
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("malformed");
            Err(SnarkError::bad_input(format!("{name}: rejected by storage-proofs ({why})")))
        }
    }
}

/// Runs one partition's circuit through snarkd's constraint system.
fn synthesize_circuit<C: Circuit<Fr>>(partition: usize, circuit: anyhow::Result<C>) -> Result<Witness, SnarkError> {
    crate::groth16::synthesize(built(partition, circuit)?)
        .map_err(|e| SnarkError::internal(format!("partition {partition}: synthesis failed: {e}")))
}

/// Records one partition's circuit for precompiled synthesis.
fn record_circuit<C: Circuit<Fr>>(partition: usize, circuit: anyhow::Result<C>) -> Result<Precompiled, SnarkError> {
    recorded(partition, Precompiled::record(built(partition, circuit)?))
}

/// A record's failure as the engine reports it.
fn recorded(partition: usize, record: Result<Precompiled, PrecompileError>) -> Result<Precompiled, SnarkError> {
    record.map_err(|e| SnarkError::internal(format!("partition {partition}: recording the circuit failed: {e}")))
}

fn reference_prove<C: Circuit<Fr> + Send>(
    partition: usize,
    circuit: anyhow::Result<C>,
    params: &Parameters<Bls12>,
) -> Result<Proof<Bls12>, SnarkError> {
    groth16::create_random_proof(built(partition, circuit)?, params, &mut rand::rngs::OsRng)
        .map_err(|e| SnarkError::internal(format!("partition {partition}: bellperson prover failed: {e}")))
}

fn measure_circuit<C: Circuit<Fr>>(partition: usize, circuit: anyhow::Result<C>) -> Result<CircuitSize, SnarkError> {
    size::Counter::measure(built(partition, circuit)?)
        .map_err(|e| SnarkError::internal(format!("partition {partition}: counting failed: {e}")))
}

fn evaluate_circuit<C: Circuit<Fr>>(partition: usize, circuit: anyhow::Result<C>) -> Result<Vec<Fr>, SnarkError> {
    check::check(built(partition, circuit)?).map_err(|e| SnarkError::internal(format!("partition {partition}: {e}")))
}

/// The inputs were validated when the statement was prepared, so a circuit that cannot be built
/// is our failure, not the caller's.
fn built<C>(partition: usize, circuit: anyhow::Result<C>) -> Result<C, SnarkError> {
    circuit.map_err(|e| SnarkError::internal(format!("partition {partition}: cannot build circuit: {e:#}")))
}

fn check_partition(partition: usize, partitions: usize) -> Result<(), SnarkError> {
    if partition < partitions {
        Ok(())
    } else {
        Err(SnarkError::internal(format!("partition {partition} out of range for {partitions} partitions")))
    }
}

/// The size of one partition's circuit, which fixes its witness size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CircuitSize {
    /// Constraints, including the one bellperson adds per public input.
    pub constraints: u64,
    pub aux: u64,
    pub inputs: u64,
}

impl CircuitSize {
    /// The bytes a [`Witness`] of this circuit holds while it is proved: a, b and the c the CPU
    /// prover forms from them (one Fr each per constraint), the input and aux assignments (one Fr
    /// per variable), and three density bitmaps.
    pub fn witness_bytes(&self) -> Bytes {
        let fr = std::mem::size_of::<Fr>() as u64;
        let densities = (self.aux * 2 + self.inputs).div_ceil(8);
        Bytes((3 * self.constraints + self.inputs + self.aux) * fr + densities)
    }
}

/// Decodes a Submit/Prove request object (without `request_id`/`priority`) into a statement.
pub fn statement_from_json(value: serde_json::Value) -> Result<Box<dyn Statement>, SnarkError> {
    prepare(&ProofRequest::from_value(&value)?)
}

/// One proof kind and the sector sizes it is proved at, for `Snark.Kinds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindSupport {
    pub kind: ProofKind,
    pub sector_sizes: Vec<Bytes>,
}

/// What this build proves, for `Snark.Kinds`: every kind at every sector size with published
/// parameters (proving also needs that size's parameter files in `params.dir`).
pub fn supported() -> Vec<KindSupport> {
    ProofKind::ALL
        .into_iter()
        .map(|kind| KindSupport { kind, sector_sizes: shape::SECTOR_SIZES.iter().map(|&s| Bytes(s)).collect() })
        .collect()
}

/// Resolves a circuit name from config or `Snark.Preload`: `<kind>:<sector size>` (such as
/// `porep_c2:32GiB`), or a cache identifier with or without the `v28-` prefix and extension.
pub fn circuit_id_for(name: &str) -> Result<CircuitId, SnarkError> {
    if let Some((kind, size)) = name.split_once(':') {
        let k = ProofKind::parse(kind)
            .ok_or_else(|| SnarkError::bad_input(format!("circuit: {kind:?} in {name:?} is not a proof kind")))?;
        let s = Bytes::parse(size)
            .ok_or_else(|| SnarkError::bad_input(format!("circuit: {size:?} in {name:?} is not a sector size such as 32GiB")))?;
        return blank::circuit_id(k, s.get()).map_err(|e| SnarkError::bad_input(format!("circuit: {name}: {e:#}")));
    }
    let id = name.trim().trim_start_matches("v28-").trim_end_matches(".params").trim_end_matches(".vk");
    if id.is_empty() || id.contains('/') {
        return Err(SnarkError::bad_input(format!("circuit: {name:?} is not a parameter cache identifier")));
    }
    Ok(CircuitId(id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_name_every_sector_size() {
        let kinds = supported();
        assert_eq!(kinds.len(), ProofKind::ALL.len());
        for k in kinds {
            assert_eq!(k.sector_sizes.first(), Some(&Bytes(2 << 10)), "{:?}", k.kind);
            assert_eq!(k.sector_sizes.last(), Some(&Bytes(64 << 30)), "{:?}", k.kind);
        }
    }
}
