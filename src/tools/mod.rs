//! The developer tools behind `snarkctl demo` and `snarkctl bench`: they seal a real 2 KiB sector,
//! run a real daemon on a temporary socket (`TempDaemon`, which the integration tests start too),
//! prove every kind through it, check each proof with filecoin-proofs-api's verifiers, and compare
//! snarkd's prover with filecoin-proofs-api's own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use base64::Engine as _;
use serde_json::Value;

use crate::client::Client;
use crate::groth16::ProvingBackend;
use crate::tools::testdata::Manifest;
use crate::proofs::{ProofKind, ProofRequest};

pub mod fuzz;
pub mod paramgen;
pub mod pipeline;
pub mod reference;
pub mod soak;
pub mod synthetic;
mod temp_daemon;
pub mod testdata;
pub mod transport;

pub use temp_daemon::{Notifier, TempDaemon, TempDaemonBuilder};

/// Where the 2 KiB test parameters and test data are cached between runs, outside any checkout:
/// `$SNARKD_TEST_PARAMS`, else `/var/tmp/snarkd-test-params`.
pub fn test_params_dir() -> PathBuf {
    std::env::var_os("SNARKD_TEST_PARAMS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/var/tmp/snarkd-test-params"))
}

/// One row of the demo table.
pub struct DemoRow {
    pub kind: ProofKind,
    pub proof_bytes: usize,
    pub verified: bool,
    pub timings: Value,
}

/// Proves every kind of `manifest` through the daemon and checks each proof with the official
/// verifier.
pub async fn prove_all(client: &Client, manifest: &Manifest) -> anyhow::Result<Vec<DemoRow>> {
    let mut rows = vec![];
    for kind in [ProofKind::WinningPost, ProofKind::WindowPost, ProofKind::PorepC2, ProofKind::SnapDeals] {
        let file = manifest.requests.get(&kind).with_context(|| format!("manifest has no {kind} request"))?;
        let request: Value = serde_json::from_slice(&manifest.read(file)?)?;
        let result = client.call("Prove", vec![request]).await.with_context(|| format!("{kind} through the daemon"))?;
        let proof = base64::engine::general_purpose::STANDARD
            .decode(result["proof"].as_str().context("result has no proof")?)?;
        let verified = crate::tools::reference::verify_with_api(manifest, kind, &proof)?;
        rows.push(DemoRow { kind, proof_bytes: proof.len(), verified, timings: result["job"]["timings"].clone() });
    }
    Ok(rows)
}

pub fn print_table(rows: &[DemoRow]) {
    let cols = ["queue", "params_load", "synthesis", "prove_ntt", "prove_msm", "prove", "verify", "total"];
    print!("{:<13} {:>6} {:>9}", "kind", "bytes", "verified");
    for c in cols {
        print!(" {c:>11}");
    }
    println!("   (milliseconds)");
    for r in rows {
        print!("{:<13} {:>6} {:>9}", r.kind.name(), r.proof_bytes, if r.verified { "yes" } else { "NO" });
        for c in cols {
            print!(" {:>11.1}", r.timings[c].as_f64().unwrap_or(f64::NAN));
        }
        println!();
    }
}

/// Where the demo keeps its sealed sector and inputs.
pub fn testdata_dir(params_dir: &Path, sector_size: u64) -> PathBuf {
    params_dir.join(format!("testdata-{sector_size}"))
}

/// Makes (or reuses) test data for `sector_size`.
pub fn ensure_testdata(params_dir: &Path, sector_size: u64) -> anyhow::Result<Manifest> {
    let dir = testdata_dir(params_dir, sector_size);
    if let Ok(m) = Manifest::load(&dir) {
        crate::tools::reference::use_parameter_dir(params_dir)?;
        return Ok(m);
    }
    let tmp = dir.with_extension("partial");
    let _ = std::fs::remove_dir_all(&tmp);
    crate::tools::testdata::generate(sector_size, &tmp, params_dir)?;
    std::fs::rename(&tmp, &dir)?;
    Manifest::load(&dir)
}

/// Timings of one prover over repeated runs.
pub struct Samples(pub Vec<Duration>);

impl Samples {
    pub fn median(&self) -> Duration {
        let mut v = self.0.clone();
        v.sort();
        v[v.len() / 2]
    }
}

/// The name of filecoin-proofs-api's prover in benchmark rows.
pub const API_PROVER: &str = "filecoin-proofs-api";

/// One prover's timings in a benchmark.
pub struct BenchRow {
    pub name: String,
    pub samples: Samples,
}

/// One partition's synthesis three ways, alternating runs: sequential (the library's circuit),
/// parallel (forks), and parallel with the circuit's precompiled record (recorded once first, the
/// time of which is the fourth row, and once more from the library's circuit on one thread, the
/// fifth); each parallel witness must equal the sequential one, and the records each other.
pub fn bench_synthesis(request: &ProofRequest, partition: usize, runs: usize) -> anyhow::Result<[BenchRow; 5]> {
    let statement = crate::proofs::prepare(request)?;
    let t = Instant::now();
    let record = std::sync::Arc::new(statement.record()?);
    let record_time = Samples(vec![t.elapsed()]);
    let t = Instant::now();
    let sequential_record = statement.record_sequential()?;
    let sequential_record_time = Samples(vec![t.elapsed()]);
    if let Some(what) = record.first_difference(&sequential_record) {
        bail!("the record differs from the one made on one thread: {what}");
    }
    drop(sequential_record);
    let [mut sequential, mut parallel, mut precompiled] = [(); 3].map(|_| Samples(vec![]));
    for run in 0..runs.max(1) {
        let t = Instant::now();
        let s = statement.synthesize_sequential(partition)?;
        sequential.0.push(t.elapsed());
        // kept only to compare, so that later runs do not synthesize beside a whole witness
        let kept = (run == 0).then_some(s);
        let t = Instant::now();
        let p = statement.synthesize(partition)?;
        parallel.0.push(t.elapsed());
        if let Some(what) = kept.as_ref().and_then(|s| p.first_difference(s)) {
            bail!("the parallel witness differs from the sequential one: {what}");
        }
        drop(p);
        let t = Instant::now();
        let p = crate::groth16::precompiled(record.clone(), || statement.synthesize(partition))?;
        precompiled.0.push(t.elapsed());
        if let Some(what) = kept.as_ref().and_then(|s| p.first_difference(s)) {
            bail!("the precompiled witness differs from the sequential one: {what}");
        }
    }
    Ok([
        BenchRow { name: "sequential".into(), samples: sequential },
        BenchRow { name: "parallel".into(), samples: parallel },
        BenchRow { name: "precompiled".into(), samples: precompiled },
        BenchRow { name: format!("record ({})", crate::units::Bytes(record.bytes())), samples: record_time },
        BenchRow { name: "record on one thread".into(), samples: sequential_record_time },
    ])
}

/// Measures snarkd's pipeline (synthesis + prove + verify, parameters resident) on the CPU backend
/// and on every GPU against filecoin-proofs-api's own prover on the same input, alternating runs
/// so all see the same load.
pub fn bench_against_api(manifest: &Manifest, kind: ProofKind, runs: usize) -> anyhow::Result<Vec<BenchRow>> {
    let request = manifest.request(kind)?;
    let statement = crate::proofs::prepare(&request)?;
    let resident = crate::srs::ResidentSrs::new(
        PathBuf::from(&storage_proofs_core::settings::SETTINGS.parameter_cache),
        crate::srs::PointCheck::None,
    );
    let (srs, _) = resident.get_or_load(&statement.circuit())?;
    let mut backends: Vec<(String, Box<dyn ProvingBackend>)> =
        vec![("snarkd cpu".into(), Box::new(crate::groth16::CpuBackend::new()))];
    if crate::gpu::BUILT_IN {
        for dev in crate::gpu::Gpu::enumerate(None, None).unwrap_or_default() {
            backends.push((format!("snarkd {}", dev.label()), Box::new(crate::gpu::GpuBackend::new(dev))));
        }
    }
    let verifier = crate::engine::assembly::groth16_verifier();
    let prove = |backend: &dyn ProvingBackend| -> anyhow::Result<Duration> {
        let t = Instant::now();
        let mut proofs = vec![];
        for partition in 0..statement.partitions() {
            let w = statement.synthesize(partition)?;
            proofs.push(backend.prove(w, &srs, &|_| {})?.0);
        }
        if !verifier(statement.as_ref(), &srs, &proofs)? {
            bail!("snarkd's proof did not verify during the benchmark");
        }
        Ok(t.elapsed())
    };
    // Warm-up: the api caches its parameters in memory on first use; GPUs upload their bases.
    crate::tools::reference::prove_with_api(manifest, kind)?;
    for (_, b) in &backends {
        prove(b.as_ref())?;
    }
    let mut rows: Vec<BenchRow> = backends.iter().map(|(n, _)| BenchRow { name: n.clone(), samples: Samples(vec![]) }).collect();
    rows.push(BenchRow { name: API_PROVER.into(), samples: Samples(vec![]) });
    for _ in 0..runs {
        for (i, (_, b)) in backends.iter().enumerate() {
            rows[i].samples.0.push(prove(b.as_ref())?);
        }
        let t = Instant::now();
        crate::tools::reference::prove_with_api(manifest, kind)?;
        rows.last_mut().expect("api row").samples.0.push(t.elapsed());
    }
    Ok(rows)
}
