//! `snarkctl`: the client and tools for snarkd. Every subcommand prints a human summary, or the
//! raw JSON with `--json`, and exits non-zero on any error.

use std::io::Read;
use std::path::Path;

use base64::Engine as _;
use clap::Parser;
use serde_json::{json, Value};

use snarkd::cli::{exit, CtlCommand, RequestArgs, SnarkctlCli};
use snarkd::client::{Client, ClientError};
use snarkd::proofs::ProofKind;

fn main() {
    let cli = SnarkctlCli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let code = match runtime.block_on(run(cli)) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("snarkctl: {e}");
            exit::FAILURE
        }
    };
    std::process::exit(code);
}

async fn run(cli: SnarkctlCli) -> anyhow::Result<()> {
    let client = Client::new(&cli.socket);
    let json_out = cli.json;
    let show = |v: &Value, human: &dyn Fn(&Value) -> String| {
        if json_out {
            println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
        } else {
            println!("{}", human(v));
        }
    };
    match cli.command {
        CtlCommand::Version => {
            let v = call(&client, "Version", vec![]).await?;
            show(&v, &|v| format!("snarkd {} (api {}, {})", s(v, "version"), s(v, "api"), s(v, "cuda")));
        }
        CtlCommand::Status => {
            let v = call(&client, "Status", vec![]).await?;
            show(&v, &human_status);
        }
        CtlCommand::Metrics => {
            let v = call(&client, "Metrics", vec![]).await?;
            print!("{}", v.as_str().unwrap_or_default());
        }
        CtlCommand::Reload => {
            let v = call(&client, "Reload", vec![]).await?;
            show(&v, &|v| {
                format!(
                    "reloaded; applied: [{}]; needs restart: [{}]",
                    list(&v["applied"]),
                    list(&v["restart_required"])
                )
            });
        }
        CtlCommand::Submit(args) => {
            let v = call(&client, "Submit", vec![request_from(&args)?]).await?;
            show(&v, &human_job);
        }
        CtlCommand::Await { job_id, timeout_ms, out } => {
            let v = call(&client, "Await", vec![json!(job_id), json!(timeout_ms)]).await?;
            finish_proof(&v, out.as_deref(), json_out)?;
        }
        CtlCommand::Prove { request, timeout_ms, out } => {
            let v = call(&client, "Prove", vec![request_from(&request)?, json!(timeout_ms)]).await?;
            finish_proof(&v, out.as_deref(), json_out)?;
        }
        CtlCommand::Cancel { job_id } => {
            let v = call(&client, "Cancel", vec![json!(job_id)]).await?;
            show(&v, &human_job);
        }
        CtlCommand::Job { job_id } => {
            let v = call(&client, "Job", vec![json!(job_id)]).await?;
            show(&v, &human_job);
        }
        CtlCommand::Preload { circuit } => {
            let v = call(&client, "Preload", vec![json!(circuit)]).await?;
            show(&v, &|v| format!("resident: {v}"));
        }
        CtlCommand::Params(snarkd::cli::ParamsCommand::Generate { sector_size, kinds, dir }) => {
            let size = sector_size_arg(&sector_size)?;
            let kinds = kinds
                .iter()
                .map(|k| ProofKind::parse(k).ok_or_else(|| anyhow::anyhow!("--kinds: unknown kind {k:?}")))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let started = std::time::Instant::now();
            let written = tokio::task::spawn_blocking(move || {
                snarkd::proofs::paramgen::generate(size, &kinds, &dir, &|line| {
                    eprintln!("[{:>6.1}s] {line}", started.elapsed().as_secs_f64())
                })
            })
            .await??;
            for p in &written {
                println!("wrote {}", p.display());
            }
            if written.is_empty() {
                println!("all requested parameters already exist");
            }
        }
        CtlCommand::Testdata { sector_size, out, params_dir } => {
            let size = sector_size_arg(&sector_size)?;
            let m = tokio::task::spawn_blocking(move || snarkd::proofs::testdata::generate(size, &out, &params_dir)).await??;
            println!("sealed sector {} of miner {} ({} bytes); manifest in {}", m.sector_number, m.miner_id, m.sector_size, m.dir.display());
        }
        CtlCommand::Verify { testdata, kind, proof, params_dir } => {
            let kind = ProofKind::parse(&kind).ok_or_else(|| anyhow::anyhow!("--kind: unknown kind {kind:?}"))?;
            snarkd::proofs::verify::use_parameter_dir(&params_dir)?;
            let m = snarkd::proofs::testdata::Manifest::load(&testdata)?;
            let bytes = std::fs::read(&proof).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", proof.display()))?;
            if !snarkd::proofs::verify::verify_with_api(&m, kind, &bytes)? {
                anyhow::bail!("{kind} proof {} does NOT verify", proof.display());
            }
            println!("{kind} proof {} verifies with filecoin-proofs-api", proof.display());
        }
        CtlCommand::Demo { sector_size, params_dir } => demo(&sector_size, &params_dir).await?,
        CtlCommand::Bench { kind, sector_size, runs, params_dir } => {
            let kind = ProofKind::parse(&kind).ok_or_else(|| anyhow::anyhow!("unknown kind {kind:?}"))?;
            let size = sector_size_arg(&sector_size)?;
            ensure_params(size, &params_dir).await?;
            let (ours, theirs) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let m = snarkd::tools::ensure_testdata(&params_dir, size)?;
                snarkd::tools::bench_against_api(&m, kind, runs)
            })
            .await??;
            let (o, t) = (ours.median(), theirs.median());
            let v = json!({
                "kind": kind, "sector_size": size, "runs": runs,
                "snarkd_cpu_ms": ours.0.iter().map(|d| d.as_secs_f64() * 1e3).collect::<Vec<_>>(),
                "filecoin_proofs_api_ms": theirs.0.iter().map(|d| d.as_secs_f64() * 1e3).collect::<Vec<_>>(),
                "speedup": t.as_secs_f64() / o.as_secs_f64(),
            });
            show(&v, &|_| {
                format!(
                    "{kind} {sector_size}, {runs} runs each: snarkd cpu median {:.2} s, filecoin-proofs-api median {:.2} s, speedup {:.2}x",
                    o.as_secs_f64(),
                    t.as_secs_f64(),
                    t.as_secs_f64() / o.as_secs_f64()
                )
            });
        }
        CtlCommand::Man { out } => {
            for path in snarkd::man::write_all(&out)? {
                println!("wrote {}", path.display());
            }
        }
        CtlCommand::Evict { circuit } => {
            let v = call(&client, "Evict", vec![json!(circuit)]).await?;
            show(&v, &|v| format!("evicted: {v}"));
        }
    }
    Ok(())
}

fn sector_size_arg(text: &str) -> anyhow::Result<u64> {
    snarkd::units::Bytes::parse(text).map(|b| b.get()).ok_or_else(|| anyhow::anyhow!("--sector-size: {text:?} is not a size such as 2KiB"))
}

async fn ensure_params(size: u64, dir: &std::path::Path) -> anyhow::Result<()> {
    let dir = dir.to_path_buf();
    let started = std::time::Instant::now();
    tokio::task::spawn_blocking(move || {
        snarkd::proofs::paramgen::generate(size, &ProofKind::ALL, &dir, &|line| {
            eprintln!("[{:>6.1}s] {line}", started.elapsed().as_secs_f64())
        })
    })
    .await??;
    Ok(())
}

/// The README's main job: parameters, a sealed sector, a daemon, four verified proofs, a table.
async fn demo(sector_size: &str, params_dir: &std::path::Path) -> anyhow::Result<()> {
    let size = sector_size_arg(sector_size)?;
    eprintln!("demo: parameters in {} (generated once if missing)", params_dir.display());
    ensure_params(size, params_dir).await?;
    let pd = params_dir.to_path_buf();
    let manifest = tokio::task::spawn_blocking(move || snarkd::tools::ensure_testdata(&pd, size)).await??;
    eprintln!("demo: sealed sector {} in {}", manifest.sector_number, manifest.dir.display());
    let daemon = snarkd::tools::TempDaemon::start(params_dir, "")?;
    eprintln!("demo: snarkd ready on {}", daemon.socket.display());
    let rows = snarkd::tools::prove_all(&daemon.client(), &manifest).await;
    daemon.stop()?;
    let rows = rows?;
    snarkd::tools::print_table(&rows);
    if rows.iter().any(|r| !r.verified) {
        anyhow::bail!("a proof did not verify with filecoin-proofs-api");
    }
    println!("all {} proofs verified with filecoin-proofs-api", rows.len());
    Ok(())
}

async fn call(client: &Client, method: &str, params: Vec<Value>) -> anyhow::Result<Value> {
    client.call(method, params).await.map_err(|e| match e {
        ClientError::Rpc { code, message, .. } => {
            let name = snarkd::error::ErrorCode::from_code(code).map(|c| c.name()).unwrap_or("error");
            anyhow::anyhow!("{name} ({code}): {message}")
        }
        other => anyhow::anyhow!("{other}"),
    })
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

fn list(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

fn human_job(v: &Value) -> String {
    let t = &v["timings"];
    let mut out = format!(
        "job {} {} {} (stage {}, {}/{} partitions, priority {})",
        s(v, "job_id"),
        s(v, "kind"),
        s(v, "state"),
        s(v, "stage"),
        v["partitions_done"],
        v["partitions"],
        s(v, "priority"),
    );
    if t.is_object() {
        out.push_str(&format!(
            "\n  timings ms: queue {} params {} synthesis {} prove {} (ntt {} msm {}) verify {} total {}",
            ms(&t["queue"]),
            ms(&t["params_load"]),
            ms(&t["synthesis"]),
            ms(&t["prove"]),
            ms(&t["prove_ntt"]),
            ms(&t["prove_msm"]),
            ms(&t["verify"]),
            ms(&t["total"])
        ));
    }
    if let Some(e) = v.get("error").filter(|e| e.is_object()) {
        out.push_str(&format!("\n  error {} ({}): {}", s(e, "name"), e["code"], s(e, "message")));
    }
    out
}

fn ms(v: &Value) -> String {
    v.as_f64().map(|x| format!("{x:.0}")).unwrap_or_else(|| "-".into())
}

fn human_status(v: &Value) -> String {
    let e = &v["engine"];
    let mut out = format!(
        "snarkd {} up {} s, {}\nmemory limit {} B ({})\nbudget: limit {} reserved {} in use {}; synthesis parallelism {}{}",
        s(v, "version"),
        v["uptime_seconds"],
        s(v, "cuda"),
        v["memory"]["limit"],
        s(&v["memory"], "source"),
        e["budget"]["limit"],
        e["budget"]["reserved"],
        e["budget"]["in_use"],
        e["synthesis_parallelism"],
        if e["draining"].as_bool() == Some(true) { "\nDRAINING" } else { "" }
    );
    for d in e["devices"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "\ndevice {} {}: queued {}, current job {}, proofs {}{}",
            d["index"],
            s(d, "name"),
            d["queued"],
            d["current_job"].as_str().unwrap_or("-"),
            d["proofs"],
            d["degraded"].as_str().map(|r| format!(", DEGRADED: {r}")).unwrap_or_default()
        ));
    }
    for q in e["queues"].as_array().into_iter().flatten() {
        out.push_str(&format!("\nqueue {}: queued {} running {} limit {}", s(q, "kind"), q["queued"], q["running"], q["limit"]));
    }
    out
}

fn finish_proof(v: &Value, out: Option<&Path>, json_out: bool) -> anyhow::Result<()> {
    if v["state"] == "pending" {
        if json_out {
            println!("{}", serde_json::to_string_pretty(v)?);
        } else {
            println!("pending: {}", human_job(&v["job"]));
        }
        anyhow::bail!("job {} is still running; fetch it later with `snarkctl await`", s(&v["job"], "job_id"));
    }
    let proof = base64::engine::general_purpose::STANDARD.decode(s(v, "proof"))?;
    if let Some(path) = out {
        std::fs::write(path, &proof).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if json_out {
        println!("{}", serde_json::to_string_pretty(v)?);
    } else {
        println!("{}\nproof: {} bytes{}", human_job(&v["job"]), proof.len(), out.map(|p| format!(" written to {}", p.display())).unwrap_or_default());
    }
    Ok(())
}

/// Builds the request object from a file: a request with "kind", Curio's C1 wrapper, or raw C1.
fn request_from(args: &RequestArgs) -> anyhow::Result<Value> {
    let mut text = Vec::new();
    if args.file.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut text)?;
    } else {
        text = std::fs::read(&args.file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", args.file.display()))?;
    }
    let parsed: Value = serde_json::from_slice(&text)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", args.file.display()))?;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let mut req = if parsed.get("kind").is_some() {
        parsed
    } else if let Some(p1) = parsed.get("Phase1Out").and_then(Value::as_str) {
        let sector = parsed.get("SectorNum").and_then(Value::as_u64).or(args.sector_number);
        json!({
            "kind": "porep_c2",
            "c1_output": p1,
            "sector_number": sector.ok_or_else(|| anyhow::anyhow!("the wrapper has no SectorNum; pass --sector-number"))?,
            "miner_id": args.miner_id.ok_or_else(|| anyhow::anyhow!("a C1 file needs --miner-id"))?,
        })
    } else if parsed.get("vanilla_proofs").is_some() && parsed.get("registered_proof").is_some() {
        json!({
            "kind": "porep_c2",
            "c1_output": b64(&text),
            "sector_number": args.sector_number.ok_or_else(|| anyhow::anyhow!("a raw C1 file needs --sector-number"))?,
            "miner_id": args.miner_id.ok_or_else(|| anyhow::anyhow!("a raw C1 file needs --miner-id"))?,
        })
    } else {
        anyhow::bail!("{}: not a request (no \"kind\"), not a Curio C1 wrapper, not C1 output", args.file.display());
    };
    if let Some(rid) = &args.request_id {
        req["request_id"] = json!(rid);
    }
    if let Some(p) = &args.priority {
        req["priority"] = json!(p);
    }
    Ok(req)
}
