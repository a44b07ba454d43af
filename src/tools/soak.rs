//! `snarkctl bench soak`: a bounded load test of a real daemon on a temporary Unix socket.
//!
//! Concurrent clients send a mix of all four proof kinds for a fixed time, with malformed requests
//! mixed in, the way a busy Curio node and a buggy one would. The report answers the questions an
//! operator asks of a long-running prover: was any request lost, did every bad request get its
//! documented code, did every proof verify with filecoin-proofs-api, and do memory, file
//! descriptors, threads and the witness budget come back to where they were.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use base64::Engine as _;
use serde::Serialize;
use serde_json::{json, Value};

use super::TempDaemon;
use crate::client::{Client, ClientError};
use crate::error::ErrorCode;
use crate::tools::testdata::Manifest;
use crate::proofs::ProofKind;

/// How hard and how long to push.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    pub clients: usize,
    pub duration: Duration,
    /// Every n-th request of a client is malformed (0: none).
    pub malformed_every: usize,
}

/// RSS growth allowed after warm-up.
pub const MAX_RSS_DRIFT: f64 = 0.10;

/// A process as /proc shows it.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ProcSample {
    pub rss_bytes: u64,
    pub threads: u64,
    pub fds: u64,
}

impl ProcSample {
    pub fn read(pid: u32) -> anyhow::Result<ProcSample> {
        let path = format!("/proc/{pid}/status");
        let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        let field = |name: &str| -> anyhow::Result<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("no {name} in {path}"))
        };
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count() as u64;
        Ok(ProcSample { rss_bytes: field("VmRSS:")? * 1024, threads: field("Threads:")?, fds })
    }
}

/// What the run saw; [`SoakReport::problems`] turns it into a verdict.
#[derive(Debug, Default, Serialize)]
pub struct SoakReport {
    pub clients: usize,
    pub duration_s: f64,
    /// Valid requests sent, per kind.
    pub sent: BTreeMap<ProofKind, u64>,
    /// Proofs filecoin-proofs-api's verifier accepted, per kind.
    pub verified: BTreeMap<ProofKind, u64>,
    /// Valid requests that did not end in a verified proof, with what happened instead.
    pub lost: Vec<String>,
    pub malformed_sent: u64,
    /// Malformed requests answered with anything but their documented code.
    pub wrong_codes: Vec<String>,
    /// The idle daemon after one proof of each kind, before the load.
    pub baseline: ProcSample,
    /// The largest RSS while the load warmed up (until every client finished a request, and at
    /// least a quarter of the run).
    pub warm_rss_bytes: u64,
    pub peak_rss_after_warmup: u64,
    /// `peak_rss_after_warmup / warm_rss_bytes - 1`.
    pub rss_drift: f64,
    pub rss_samples: usize,
    /// The idle daemon after the load.
    pub end: ProcSample,
    /// Witness bytes still reserved once the load is over.
    pub reserved_end: u64,
}

impl SoakReport {
    /// Every acceptance point the run missed; empty when it passed.
    pub fn problems(&self) -> Vec<String> {
        let mut p = vec![];
        if !self.lost.is_empty() {
            p.push(format!("{} valid requests lost: {}", self.lost.len(), self.lost.join("; ")));
        }
        if !self.wrong_codes.is_empty() {
            p.push(format!("{} malformed requests got the wrong answer: {}", self.wrong_codes.len(), self.wrong_codes.join("; ")));
        }
        for kind in ProofKind::ALL {
            if self.verified.get(&kind).copied().unwrap_or(0) == 0 {
                p.push(format!("no {kind} proof was verified under load; run longer or with more clients"));
            }
        }
        if self.rss_drift > MAX_RSS_DRIFT {
            p.push(format!(
                "RSS grew {:.1}% after warm-up ({} -> {} bytes), more than {:.0}%",
                self.rss_drift * 100.0,
                self.warm_rss_bytes,
                self.peak_rss_after_warmup,
                MAX_RSS_DRIFT * 100.0
            ));
        }
        if self.end.fds > self.baseline.fds {
            p.push(format!("open file descriptors {} after the load, {} before", self.end.fds, self.baseline.fds));
        }
        if self.end.threads > self.baseline.threads {
            p.push(format!("threads {} after the load, {} before", self.end.threads, self.baseline.threads));
        }
        if self.reserved_end != 0 {
            p.push(format!("{} witness bytes still reserved after the load", self.reserved_end));
        }
        p
    }

    pub fn summary(&self) -> String {
        let per_kind = |m: &BTreeMap<ProofKind, u64>| {
            ProofKind::ALL.iter().map(|k| format!("{k} {}", m.get(k).copied().unwrap_or(0))).collect::<Vec<_>>().join(", ")
        };
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        format!(
            "soak: {} clients for {:.0} s\n  valid requests  {}\n  verified proofs {}\n  lost            {}\n  malformed       {} sent, {} with the wrong answer\n  RSS             {:.0} MiB warm, {:.0} MiB peak after warm-up ({:+.1}%, {} samples)\n  threads         {} before, {} after\n  fds             {} before, {} after\n  reserved        {} bytes at the end",
            self.clients,
            self.duration_s,
            per_kind(&self.sent),
            per_kind(&self.verified),
            self.lost.len(),
            self.malformed_sent,
            self.wrong_codes.len(),
            mib(self.warm_rss_bytes),
            mib(self.peak_rss_after_warmup),
            self.rss_drift * 100.0,
            self.rss_samples,
            self.baseline.threads,
            self.end.threads,
            self.baseline.fds,
            self.end.fds,
            self.reserved_end,
        )
    }
}

/// A request that must be refused, and the code it must be refused with.
struct Malformed {
    what: &'static str,
    send: Payload,
    code: i32,
}

enum Payload {
    Prove(Value),
    Call(&'static str, Vec<Value>),
    Raw(Vec<u8>),
}

/// One of each kind of bad input the README promises a code for, built from the valid requests.
fn malformed_cases(valid: &BTreeMap<ProofKind, Value>) -> Vec<Malformed> {
    let bad = ErrorCode::BadInput.code();
    let with = |kind: ProofKind, key: &str, value: Value| {
        let mut v = valid[&kind].clone();
        v[key] = value;
        Payload::Prove(v)
    };
    let c1 = valid[&ProofKind::PorepC2]["c1_output"].as_str().unwrap_or_default();
    let truncated = c1[..c1.len() / 2 / 4 * 4].to_string();
    let vanilla = valid[&ProofKind::WinningPost]["vanilla_proofs"][0].clone();
    vec![
        Malformed { what: "truncated C1 JSON", send: with(ProofKind::PorepC2, "c1_output", json!(truncated)), code: bad },
        Malformed {
            what: "winning proof type in a window request",
            send: with(ProofKind::WindowPost, "registered_post_proof", valid[&ProofKind::WinningPost]["registered_post_proof"].clone()),
            code: bad,
        },
        Malformed {
            what: "two vanilla proofs for WinningPoSt",
            send: with(ProofKind::WinningPost, "vanilla_proofs", json!([vanilla.clone(), vanilla])),
            code: bad,
        },
        Malformed { what: "partition index out of range", send: with(ProofKind::WindowPost, "partition_index", json!(1_000_000)), code: bad },
        Malformed {
            what: "randomness that is not an Fr",
            send: with(ProofKind::WindowPost, "randomness", json!(hex::encode([0xffu8; 32]))),
            code: bad,
        },
        Malformed { what: "unknown proof kind", send: with(ProofKind::SnapDeals, "kind", json!("teleport")), code: bad },
        Malformed { what: "vanilla proof that is not bincode", send: with(ProofKind::SnapDeals, "vanilla_proofs", json!(["AAEC"])), code: bad },
        Malformed { what: "body that is not JSON", send: Payload::Raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":".to_vec()), code: -32700 },
        Malformed { what: "unknown method", send: Payload::Call("Teleport", vec![]), code: -32601 },
        Malformed { what: "unknown job id", send: Payload::Call("Job", vec![json!("00000000")]), code: ErrorCode::NotFound.code() },
    ]
}

/// The code a malformed request was answered with, or what went wrong instead.
async fn refusal_code(client: &Client, send: &Payload) -> Result<i32, String> {
    let outcome = match send {
        Payload::Prove(req) => client.call("Prove", vec![req.clone()]).await,
        Payload::Call(method, params) => client.call(method, params.clone()).await,
        Payload::Raw(body) => {
            let (status, bytes) = client.post_raw("/rpc/v0", body.clone()).await.map_err(|e| e.to_string())?;
            let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("HTTP {status}, not JSON-RPC: {e}"))?;
            return v["error"]["code"].as_i64().map(|c| c as i32).ok_or_else(|| format!("no error in {v}"));
        }
    };
    match outcome {
        Ok(v) => Err(format!("accepted: {v:.120}")),
        Err(ClientError::Rpc { code, .. }) => Ok(code),
        Err(e) => Err(e.to_string()),
    }
}

/// A valid request's proof: by Prove, or by Submit and then Await until done, as a client that
/// reattaches would.
async fn prove(client: &Client, req: &Value, by_submit: bool) -> Result<Vec<u8>, ClientError> {
    let result = if by_submit {
        let job = client.call("Submit", vec![req.clone()]).await?;
        let id = job["job_id"].clone();
        loop {
            let r = client.call("Await", vec![id.clone(), json!(5_000)]).await?;
            if r["state"] == "done" {
                break r;
            }
        }
    } else {
        client.call("Prove", vec![req.clone()]).await?
    };
    base64::engine::general_purpose::STANDARD.decode(result["proof"].as_str().unwrap_or_default()).map_err(|e| {
        ClientError::Transport { path: client.socket().to_path_buf(), reason: format!("proof is not base64: {e}") }
    })
}

/// Checks one proof with filecoin-proofs-api's verifier, off the async thread.
async fn verified(manifest: &Arc<Manifest>, kind: ProofKind, proof: Vec<u8>) -> Result<(), String> {
    let m = manifest.clone();
    match tokio::task::spawn_blocking(move || crate::tools::reference::verify_with_api(&m, kind, &proof)).await {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => Err(format!("{kind}: the proof was rejected by filecoin-proofs-api")),
        Ok(Err(e)) => Err(format!("{kind}: cannot verify: {e:#}")),
        Err(e) => Err(format!("{kind}: verifier panicked: {e}")),
    }
}

/// Waits until the daemon's threads and descriptors stop changing (or `limit` passes), so a
/// sample is not taken while a pool is still winding down; returns the last sample.
async fn settled(pid: u32, limit: Duration, at_most: Option<ProcSample>) -> anyhow::Result<ProcSample> {
    let deadline = Instant::now() + limit;
    let mut last = ProcSample::read(pid)?;
    let mut steady = 0;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = ProcSample::read(pid)?;
        let back = at_most.is_none_or(|b| now.fds <= b.fds && now.threads <= b.threads);
        steady = if now.fds == last.fds && now.threads == last.threads { steady + 1 } else { 0 };
        last = now;
        if back && steady >= 4 {
            break;
        }
    }
    Ok(last)
}

#[derive(Default)]
struct Tally {
    sent: BTreeMap<ProofKind, u64>,
    verified: BTreeMap<ProofKind, u64>,
    lost: Vec<String>,
    malformed_sent: u64,
    wrong_codes: Vec<String>,
}

/// Runs the soak against `daemon`, which must be idle and serve `manifest`'s sector.
pub async fn run(daemon: &TempDaemon, manifest: Manifest, opts: &SoakOptions) -> anyhow::Result<SoakReport> {
    let manifest = Arc::new(manifest);
    let mut valid = BTreeMap::new();
    for kind in ProofKind::ALL {
        let file = manifest.requests.get(&kind).with_context(|| format!("manifest has no {kind} request"))?;
        valid.insert(kind, serde_json::from_slice::<Value>(&manifest.read(file)?)?);
    }
    let pid = daemon.pid();

    // Warm-up: one proof of each kind loads its parameters and starts every pool.
    let client = daemon.client();
    for kind in ProofKind::ALL {
        let proof = prove(&client, &valid[&kind], false).await.with_context(|| format!("warm-up {kind}"))?;
        verified(&manifest, kind, proof).await.map_err(anyhow::Error::msg)?;
    }
    let baseline = settled(pid, Duration::from_secs(15), None).await?;

    let valid = Arc::new(valid);
    let malformed = Arc::new(malformed_cases(&valid));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let first_round = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + opts.duration;
    let mut clients = vec![];
    for idx in 0..opts.clients {
        let (client, valid, malformed, tally, first_round, manifest) =
            (daemon.client(), valid.clone(), malformed.clone(), tally.clone(), first_round.clone(), manifest.clone());
        let every = opts.malformed_every;
        clients.push(tokio::spawn(async move {
            // Client k starts with kind k, so a round of as many clients as kinds covers all.
            let (mut i, mut valid_sent) = (0usize, 0usize);
            while Instant::now() < deadline {
                if every > 0 && (i + idx) % every == every - 1 {
                    let case = &malformed[(i / every + idx) % malformed.len()];
                    let got = refusal_code(&client, &case.send).await;
                    let mut t = tally.lock().unwrap();
                    t.malformed_sent += 1;
                    match got {
                        Ok(code) if code == case.code => {}
                        Ok(code) => t.wrong_codes.push(format!("{}: code {code}, expected {}", case.what, case.code)),
                        Err(e) => t.wrong_codes.push(format!("{}: {e}", case.what)),
                    }
                } else {
                    let kind = ProofKind::ALL[(valid_sent + idx) % ProofKind::ALL.len()];
                    valid_sent += 1;
                    *tally.lock().unwrap().sent.entry(kind).or_default() += 1;
                    let outcome = match prove(&client, &valid[&kind], i % 2 == 1).await {
                        Ok(proof) => verified(&manifest, kind, proof).await,
                        Err(e) => Err(format!("{kind}: {e}")),
                    };
                    let mut t = tally.lock().unwrap();
                    match outcome {
                        Ok(()) => *t.verified.entry(kind).or_default() += 1,
                        Err(e) => t.lost.push(e),
                    }
                }
                if i == 0 {
                    first_round.fetch_add(1, Ordering::SeqCst);
                }
                i += 1;
            }
        }));
    }

    // Sample RSS until every client has returned.
    let warm_until = opts.duration / 4;
    let (mut warm_rss, mut peak_after, mut samples) = (0u64, 0u64, 0usize);
    let mut warm = true;
    while !clients.iter().all(|c| c.is_finished()) {
        let rss = ProcSample::read(pid)?.rss_bytes;
        samples += 1;
        if warm && started.elapsed() >= warm_until && first_round.load(Ordering::SeqCst) == opts.clients {
            warm = false;
        }
        if warm {
            warm_rss = warm_rss.max(rss);
        } else {
            peak_after = peak_after.max(rss);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for c in clients {
        c.await.context("a soak client panicked")?;
    }
    let duration_s = started.elapsed().as_secs_f64();
    let end = settled(pid, Duration::from_secs(30), Some(baseline)).await?;
    let status = client.call("Status", vec![]).await?;
    let reserved_end = status["engine"]["budget"]["reserved"].as_u64().context("Status has no engine.budget.reserved")?;

    let t = std::mem::take(&mut *tally.lock().unwrap());
    let peak_after = peak_after.max(end.rss_bytes);
    Ok(SoakReport {
        clients: opts.clients,
        duration_s,
        sent: t.sent,
        verified: t.verified,
        lost: t.lost,
        malformed_sent: t.malformed_sent,
        wrong_codes: t.wrong_codes,
        baseline,
        warm_rss_bytes: warm_rss,
        peak_rss_after_warmup: peak_after,
        rss_drift: if warm_rss > 0 { peak_after as f64 / warm_rss as f64 - 1.0 } else { 0.0 },
        rss_samples: samples,
        end,
        reserved_end,
    })
}
