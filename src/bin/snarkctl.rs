//! `snarkctl`: the client and tools for snarkd. Every subcommand prints a human summary, or the
//! raw JSON with `--json`, and exits non-zero on any error.

use std::io::Read;
use std::path::Path;

use base64::Engine as _;
use clap::Parser;
use serde_json::{json, Value};

use snarkd::cli::{exit, BenchCommand, CtlCommand, ParamsCommand, RequestArgs, SnarkctlCli};
use snarkd::gpu::Distribution;
use snarkd::client::{Client, ClientError};
use snarkd::proofs::ProofKind;

fn main() {
    let cli = SnarkctlCli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let code = match runtime.block_on(run(cli)) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("snarkctl: {e:#}");
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
        CtlCommand::Params(ParamsCommand::Generate { sector_size: size, kinds, params }) => {
            let kinds: Vec<ProofKind> = kinds.into_iter().map(ProofKind::from).collect();
            let dir = params.path;
            let started = std::time::Instant::now();
            let written = tokio::task::spawn_blocking(move || {
                snarkd::tools::paramgen::generate(size, &kinds, &dir, &|line| {
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
        CtlCommand::Testdata { sector_size: size, synthetic: true, kinds, seed, out, params } => {
            let out = out.unwrap_or_else(|| snarkd::tools::synthetic::default_dir(&params.path, size));
            let kinds: Vec<ProofKind> = kinds.into_iter().map(ProofKind::from).collect();
            let m = tokio::task::spawn_blocking(move || {
                snarkd::tools::synthetic::generate(size, &kinds, seed, &out, &|line| eprintln!("{line}"))
            })
            .await??;
            println!("{}", snarkd::tools::synthetic::WARNING);
            println!("synthetic {} requests for {:?} (seed {}); manifest in {}", snarkd::units::Bytes(size), m.kinds.keys().collect::<Vec<_>>(), m.seed, m.dir.display());
        }
        CtlCommand::Testdata { sector_size: size, synthetic: false, out, params, .. } => {
            let out = out.unwrap_or_else(|| snarkd::tools::testdata_dir(&params.path, size));
            let m = tokio::task::spawn_blocking(move || snarkd::tools::testdata::generate(size, &out, &params.path)).await??;
            println!("sealed sector {} of miner {} ({} bytes); manifest in {}", m.sector_number, m.miner_id, m.sector_size, m.dir.display());
        }
        CtlCommand::Verify { testdata, kind, proof, params } => {
            let kind = ProofKind::from(kind);
            snarkd::tools::reference::use_parameter_dir(&params.path)?;
            let m = snarkd::tools::testdata::Manifest::load(&testdata)?;
            let bytes = std::fs::read(&proof).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", proof.display()))?;
            if !snarkd::tools::reference::verify_with_api(&m, kind, &bytes)? {
                anyhow::bail!("{kind} proof {} does NOT verify", proof.display());
            }
            println!("{kind} proof {} verifies with filecoin-proofs-api", proof.display());
        }
        CtlCommand::Demo { sector_size, params } => demo(sector_size, &params.path).await?,
        CtlCommand::Selftest { gpu, devices } => {
            if !gpu {
                anyhow::bail!("say --gpu: the GPU kernel self-test is the only self-test");
            }
            let reports = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let mut out = vec![];
                for dev in snarkd::gpu::Gpu::enumerate(devices.ordinals(), None)? {
                    out.push(snarkd::gpu::selftest(&dev, None)?);
                }
                Ok(out)
            })
            .await??;
            if reports.is_empty() {
                anyhow::bail!("no GPU found");
            }
            let mut failed = 0;
            for r in &reports {
                for c in &r.checks {
                    if !c.passed || !json_out {
                        println!("{} {} {}: {}", r.device, if c.passed { "ok  " } else { "FAIL" }, c.name, c.detail);
                    }
                    failed += usize::from(!c.passed);
                }
                println!("{}: {} checks, seed {}", r.device, r.checks.len(), r.seed);
            }
            if failed > 0 {
                anyhow::bail!("{failed} GPU checks failed");
            }
        }
        CtlCommand::Bench(what) => bench(what, &show).await?,
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

/// `snarkctl bench …`: each benchmark prints its rows, or JSON with `--json`.
/// Prints a result: its JSON with `--json`, else the human text the second closure makes of it.
type Show<'a> = &'a dyn Fn(&Value, &dyn Fn(&Value) -> String);

async fn bench(what: BenchCommand, show: Show<'_>) -> anyhow::Result<()> {
    match what {
        BenchCommand::Msm { log_size } => {
            gpu_bench(move |dev| {
                let n = 1usize << log_size;
                let mut v = snarkd::gpu::bench_msm(dev, n, Distribution::Random, false)?;
                v.extend(snarkd::gpu::bench_msm(dev, n, Distribution::Filecoin, false)?);
                v.extend(snarkd::gpu::bench_msm(dev, n, Distribution::Witness, false)?);
                v.extend(snarkd::gpu::bench_msm(dev, n, Distribution::Random, true)?);
                Ok(v)
            })
            .await
        }
        BenchCommand::Ntt { log_size } => gpu_bench(move |dev| Ok(snarkd::gpu::bench_ntt(dev, log_size)?)).await,
        BenchCommand::Partition { shape, mix } => {
            gpu_bench(move |dev| Ok(snarkd::gpu::bench_prove_shape(dev, shape.into(), mix.into())?)).await
        }
        BenchCommand::Soak { clients, duration, malformed_every, sector_size: size, params } => {
            let params_dir = params.path;
            ensure_params(size, &params_dir).await?;
            let pd = params_dir.clone();
            let manifest = tokio::task::spawn_blocking(move || snarkd::tools::ensure_testdata(&pd, size)).await??;
            let daemon = snarkd::tools::TempDaemon::builder(&params_dir).start()?;
            eprintln!("soak: snarkd ready on {}; {clients} clients for {duration:?}", daemon.socket.display());
            let opts = snarkd::tools::soak::SoakOptions { clients, duration, malformed_every };
            let report = snarkd::tools::soak::run(&daemon, manifest, &opts).await;
            daemon.stop()?;
            let report = report?;
            let problems = report.problems();
            let mut v = serde_json::to_value(&report)?;
            v["problems"] = json!(problems);
            show(&v, &|_| report.summary());
            if !problems.is_empty() {
                anyhow::bail!("soak failed:\n  {}", problems.join("\n  "));
            }
            Ok(())
        }
        BenchCommand::Transport { kind, rounds, sector_size: size, params } => {
            let kind = ProofKind::from(kind);
            let params_dir = params.path;
            ensure_params(size, &params_dir).await?;
            let pd = params_dir.clone();
            let manifest = tokio::task::spawn_blocking(move || snarkd::tools::ensure_testdata(&pd, size)).await??;
            let daemon = snarkd::tools::TempDaemon::builder(&params_dir).start()?;
            let grpc_socket = daemon.grpc_socket();
            eprintln!("transport: snarkd ready on {} and {}; {rounds} {kind} proofs each", daemon.socket.display(), grpc_socket.display());
            let report = snarkd::tools::transport::compare_prove(&daemon.socket, &grpc_socket, &manifest, kind, rounds).await;
            daemon.stop()?;
            let report = report?;
            show(&serde_json::to_value(&report)?, &|_| {
                format!(
                    "{kind} {}, {rounds} proofs through each, alternating: JSON-RPC median {:.1} ms, gRPC median {:.1} ms, gRPC/JSON-RPC {:.3}",
                    snarkd::units::Bytes(size),
                    report.json_rpc_median.as_secs_f64() * 1e3,
                    report.grpc_median.as_secs_f64() * 1e3,
                    report.ratio
                )
            });
            Ok(())
        }
        BenchCommand::Pipeline { shape, proofs, memory_limit, cpu, gpu_memory_limit, no_winning, no_precompile, inputs, params } => {
            // the engine's warnings (retries, out-of-memory) and the GPU's placement notes on stderr
            let filter = tracing_subscriber::EnvFilter::try_from_env("SNARKD_LOG").unwrap_or_else(|_| "warn,snarkd::gpu=info".into());
            let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).try_init();
            let started = std::time::Instant::now();
            let progress = move |line: &str| eprintln!("[{:>7.1}s] {line}", started.elapsed().as_secs_f64());
            let report = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let kind = ProofKind::from(shape.kind);
                let mut kinds = vec![kind];
                if !no_winning && kind != ProofKind::WinningPost {
                    kinds.push(ProofKind::WinningPost);
                }
                let m = synthetic_inputs(shape.sector_size, &kinds, inputs, &params, &progress)?;
                let main = m.request(kind)?;
                let winning = kinds.get(1).map(|&k| m.request(k)).transpose()?;
                let opts = snarkd::tools::pipeline::PipelineOptions {
                    proofs,
                    memory_limit: snarkd::units::Bytes(memory_limit),
                    gpu: !cpu,
                    precompile: !no_precompile,
                    gpu_memory_limit: gpu_memory_limit.map(snarkd::units::Bytes),
                };
                snarkd::tools::pipeline::run(&main, winning.as_ref(), &opts, &progress)
            })
            .await??;
            let mut v = serde_json::to_value(&report)?;
            v["shape"] = json!(shape.to_string());
            v["inputs"] = json!("synthetic");
            show(&v, &|_| format!("{shape} on synthetic inputs and bench-only parameters\n{}", report.summary()));
            Ok(())
        }
        BenchCommand::Synthesis { shape, partition, runs, inputs, params } => {
            let rows = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let kind = ProofKind::from(shape.kind);
                let m = synthetic_inputs(shape.sector_size, &[kind], inputs, &params, &|line| eprintln!("{line}"))?;
                snarkd::tools::bench_synthesis(&m.request(kind)?, partition, runs)
            })
            .await??;
            let [seq, par, pre, record, record_seq] = &rows;
            let secs = |r: &snarkd::tools::BenchRow| r.samples.0.iter().map(|d| d.as_secs_f64()).collect::<Vec<_>>();
            let median = |r: &snarkd::tools::BenchRow| r.samples.median().as_secs_f64();
            let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            let v = json!({
                "shape": shape.to_string(), "partition": partition, "runs": runs, "cpus": cpus,
                "sequential_s": secs(seq), "parallel_s": secs(par), "precompiled_s": secs(pre),
                "record_s": median(record), "record": record.name, "record_one_thread_s": median(record_seq),
                "speedup_parallel": median(seq) / median(par), "speedup_precompiled": median(seq) / median(pre),
                "identical": true,
            });
            show(&v, &|_| {
                format!(
                    "{shape} partition {partition}, {runs} runs each on {cpus} cpus: sequential median {:.2} s, parallel {:.2} s ({:.2}x), parallel precompiled {:.2} s ({:.2}x; {} in {:.2} s, {:.2} s on one thread); witnesses and records identical",
                    median(seq),
                    median(par),
                    median(seq) / median(par),
                    median(pre),
                    median(seq) / median(pre),
                    record.name,
                    median(record),
                    median(record_seq),
                )
            });
            Ok(())
        }
        BenchCommand::Proof { kind, sector_size: size, runs, params } => {
            let kind = ProofKind::from(kind);
            let params_dir = params.path;
            ensure_params(size, &params_dir).await?;
            let rows = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let m = snarkd::tools::ensure_testdata(&params_dir, size)?;
                snarkd::tools::bench_against_api(&m, kind, runs)
            })
            .await??;
            let api = rows.iter().find(|r| r.name == snarkd::tools::API_PROVER).map(|r| r.samples.median()).expect("api row");
            let cpu = rows.iter().find(|r| r.name == "snarkd cpu").map(|r| r.samples.median()).expect("cpu row");
            let v = json!({
                "kind": kind, "sector_size": size, "runs": runs,
                "provers": rows.iter().map(|r| json!({
                    "name": r.name,
                    "ms": r.samples.0.iter().map(|d| d.as_secs_f64() * 1e3).collect::<Vec<_>>(),
                    "median_ms": r.samples.median().as_secs_f64() * 1e3,
                    "speedup_vs_api": api.as_secs_f64() / r.samples.median().as_secs_f64(),
                    "speedup_vs_snarkd_cpu": cpu.as_secs_f64() / r.samples.median().as_secs_f64(),
                })).collect::<Vec<_>>(),
            });
            show(&v, &|_| {
                let mut out = format!(
                    "{kind} {}, {runs} timed runs each (synthesis + prove + verify, parameters resident):",
                    snarkd::units::Bytes(size)
                );
                for r in &rows {
                    let m = r.samples.median();
                    out.push_str(&format!(
                        "\n  {:<24} median {:>8.2} s   {:>5.2}x vs filecoin-proofs-api   {:>5.2}x vs snarkd cpu",
                        r.name,
                        m.as_secs_f64(),
                        api.as_secs_f64() / m.as_secs_f64(),
                        cpu.as_secs_f64() / m.as_secs_f64()
                    ));
                }
                out
            });
            Ok(())
        }
    }
}

/// The benchmarks' synthetic inputs (seed 1): in `inputs`, else beside the parameters; made if missing.
fn synthetic_inputs(
    sector_size: u64,
    kinds: &[ProofKind],
    inputs: Option<std::path::PathBuf>,
    params: &snarkd::cli::ParamsDir,
    progress: &dyn Fn(&str),
) -> anyhow::Result<snarkd::tools::synthetic::SyntheticManifest> {
    let dir = inputs.unwrap_or_else(|| snarkd::tools::synthetic::default_dir(&params.path, sector_size));
    snarkd::tools::synthetic::ensure(sector_size, kinds, 1, &dir, progress)
}

/// Runs a GPU benchmark on device 0 and prints its rows.
async fn gpu_bench(
    f: impl FnOnce(&snarkd::gpu::GpuDevice) -> anyhow::Result<Vec<snarkd::gpu::BenchReport>> + Send + 'static,
) -> anyhow::Result<()> {
    let reports = tokio::task::spawn_blocking(move || {
        let dev = snarkd::gpu::Gpu::enumerate(Some(&[0]), None)?.into_iter().next().ok_or_else(|| anyhow::anyhow!("no GPU found"))?;
        f(&dev)
    })
    .await??;
    for r in &reports {
        println!("{:<48} median {:>9.2} ms  (min {:.2}, max {:.2})", r.what, r.median_ms, r.min_ms, r.max_ms);
    }
    Ok(())
}

async fn ensure_params(size: u64, dir: &std::path::Path) -> anyhow::Result<()> {
    let dir = dir.to_path_buf();
    let started = std::time::Instant::now();
    tokio::task::spawn_blocking(move || {
        snarkd::tools::paramgen::generate(size, &ProofKind::ALL, &dir, &|line| {
            eprintln!("[{:>6.1}s] {line}", started.elapsed().as_secs_f64())
        })
    })
    .await??;
    Ok(())
}

/// The README's main job: parameters, a sealed sector, a daemon, four verified proofs, a table.
async fn demo(size: u64, params_dir: &std::path::Path) -> anyhow::Result<()> {
    eprintln!("demo: parameters in {} (generated once if missing)", params_dir.display());
    ensure_params(size, params_dir).await?;
    let pd = params_dir.to_path_buf();
    let manifest = tokio::task::spawn_blocking(move || snarkd::tools::ensure_testdata(&pd, size)).await??;
    eprintln!("demo: sealed sector {} in {}", manifest.sector_number, manifest.dir.display());
    let daemon = snarkd::tools::TempDaemon::builder(params_dir).start()?;
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
            // The daemon's message already starts with the name.
            let message = message.strip_prefix(&format!("{name}: ")).unwrap_or(&message);
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
            "\ndevice {} {}: queued {}, current job {}, proofs {}{}{}",
            d["index"],
            s(d, "name"),
            d["queued"],
            d["current_job"].as_str().unwrap_or("-"),
            d["proofs"],
            d["memory"]["total"]
                .as_u64()
                .map(|total| format!(
                    ", memory {} free of {}",
                    snarkd::units::Bytes(d["memory"]["free"].as_u64().unwrap_or(0)),
                    snarkd::units::Bytes(total)
                ))
                .unwrap_or_default(),
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
