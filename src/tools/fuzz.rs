//! Every decoder of outside input as a fuzz target: arbitrary bytes in, an error or a value out,
//! never a panic that escapes and never an unbounded allocation.
//!
//! One definition serves two drivers: `fuzz/` runs them coverage-guided under libFuzzer and
//! AddressSanitizer (`cargo fuzz`), and `tests/library/fuzz.rs` replays the seed corpus and a
//! bounded mutation run of each in every test run. The targets go through the same functions the
//! daemon calls for `Snark.Submit`, so what is fuzzed is what is served.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::proofs::{prepare, ProofRequest};

/// A target: its name (the `fuzz/fuzz_targets/<name>.rs` and corpus directory) and its body.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

pub const TARGETS: [Target; 5] = [
    Target { name: "request", run: request },
    Target { name: "c1_output", run: c1_output },
    Target { name: "post_vanilla", run: post_vanilla },
    Target { name: "snap_vanilla", run: snap_vanilla },
    Target { name: "config", run: config },
];

/// Silences the panic hook for the rest of the process. libFuzzer's harness aborts on every
/// panic, even one a decoder catches and turns into a typed error (storage-proofs panics on some
/// malformed proofs, and `proofs::guarded` catches those, as the daemon relies on). A panic that
/// escapes a target is still a crash: both drivers check for it after the target returns.
pub fn catch_only_escaping_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::panic::set_hook(Box::new(|_| {})));
}

/// Sector sizes a selector byte picks from: the test size and the production sizes, so the
/// decoders of every tree shape are reached.
const SIZES: [&str; 5] = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"];

/// The miner id and sector number the seeds were made with (`tools::testdata`).
const MINER_ID: u64 = 1000;
const SECTOR_NUMBER: u64 = 7;

fn b64(bytes: &[u8]) -> Value {
    json!(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Decodes and prepares a request given as JSON, as `Snark.Submit` does.
fn submit(value: &Value) {
    if let Ok(req) = ProofRequest::from_value(value) {
        let _ = prepare(&req);
    }
}

/// A whole request as JSON text, and the same bytes as Curio's C1 wrapper file.
pub fn request(data: &[u8]) {
    if let Ok(req) = ProofRequest::from_json(data) {
        let _ = prepare(&req);
    }
    if let Ok(req) = ProofRequest::from_curio_c1(data, MINER_ID) {
        let _ = prepare(&req);
    }
}

/// The bytes of a `SealCommitPhase1Output` JSON in a PoRep C2 request.
pub fn c1_output(data: &[u8]) {
    submit(&json!({"kind": "porep_c2", "c1_output": b64(data), "sector_number": SECTOR_NUMBER, "miner_id": MINER_ID}));
}

/// One sector's bincode `FallbackPoStSectorProof`. The first byte selects WindowPoSt (high bit)
/// or WinningPoSt and the sector size (low bits).
pub fn post_vanilla(data: &[u8]) {
    let Some((&select, proof)) = data.split_first() else { return };
    let size = SIZES[usize::from(select & 0x7f) % SIZES.len()];
    let mut req = json!({
        "randomness": b64(&[1u8; 32]),
        "miner_id": MINER_ID,
        "vanilla_proofs": [b64(proof)],
    });
    if select & 0x80 != 0 {
        req["kind"] = json!("window_post");
        req["registered_post_proof"] = json!(format!("StackedDrgWindow{size}V1_2"));
        req["partition_index"] = json!(0);
    } else {
        req["kind"] = json!("winning_post");
        req["registered_post_proof"] = json!(format!("StackedDrgWinning{size}V1"));
    }
    submit(&req);
}

/// One bincode SnapDeals `PartitionProof`, given for every partition of the sector size the
/// first byte selects.
pub fn snap_vanilla(data: &[u8]) {
    let Some((&select, proof)) = data.split_first() else { return };
    let size = SIZES[usize::from(select) % SIZES.len()];
    let bytes = crate::units::Bytes::parse(size).map_or(2048, |b| b.get());
    let partitions = storage_proofs_update::constants::partition_count(bytes as usize / 32);
    submit(&json!({
        "kind": "snap_deals",
        "registered_update_proof": format!("StackedDrg{size}V1"),
        "vanilla_proofs": vec![b64(proof); partitions],
        "comm_r_old": b64(&[1u8; 32]),
        "comm_r_new": b64(&[2u8; 32]),
        "comm_d_new": b64(&[3u8; 32]),
    }));
}

/// A config file's text.
pub fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::config::from_toml(text);
    }
}

/// Seed inputs for every target from a real sealed sector: the requests, the C1 output, the
/// vanilla proofs (behind the selector byte that picks their proof type and 2 KiB), and the
/// example config. Returns (target, file name, bytes).
pub fn seeds(m: &crate::tools::testdata::Manifest) -> anyhow::Result<Vec<(&'static str, String, Vec<u8>)>> {
    let mut out = vec![];
    for file in m.requests.values() {
        out.push(("request", file.clone(), m.read(file)?));
    }
    out.push(("c1_output", m.porep.c1_output.clone(), m.read(&m.porep.c1_output)?));
    for (select, files) in [(0x80u8, &m.window_post.vanilla_proofs), (0, &m.winning_post.vanilla_proofs)] {
        for file in files {
            out.push(("post_vanilla", file.clone(), [&[select][..], &m.read(file)?].concat()));
        }
    }
    for file in &m.snap_deals.vanilla_proofs {
        out.push(("snap_vanilla", file.clone(), [&[0u8][..], &m.read(file)?].concat()));
    }
    out.push(("config", "snarkd.toml".into(), crate::config_doc::example_toml().into_bytes()));
    Ok(out)
}

/// Writes [`seeds`] as `dir/<target>/<file>`, the corpus layout `cargo fuzz` reads.
pub fn write_seeds(m: &crate::tools::testdata::Manifest, dir: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    for (target, name, bytes) in seeds(m)? {
        let path = dir.join(target).join(name);
        std::fs::create_dir_all(dir.join(target))?;
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
