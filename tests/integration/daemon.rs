//! The daemon issue's acceptance: transport, go-jsonrpc dialect, notify lifecycle, reload,
//! config errors, access control, socket permissions.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::{json, Value};

use super::harness::{block_on, ctl, daemon, start, Daemon, SNARKCTL, SNARKD};
use snarkd::error::ErrorCode;
use snarkd::tools::Notifier;

#[test]
fn version_over_http_post_with_positional_params_and_meta() {
    let d = start("");
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "Snark.Version", "params": [], "meta": {"SpanContext": "AAAA"}});
    for path in ["/rpc/v0", "/"] {
        let (status, bytes) = block_on(d.client().post_raw(path, body.to_string().into_bytes())).unwrap();
        assert_eq!(status, 200, "{path}");
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(v["result"]["api"], "v0");
    }
    let (status, _) = block_on(d.client().post_raw("/other", body.to_string().into_bytes())).unwrap();
    assert_eq!(status, 404);
}

#[test]
fn version_over_websocket() {
    use futures_util::{SinkExt, StreamExt};
    let d = start("");
    block_on(async {
        let stream = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
        let (mut ws, _) = tokio_tungstenite::client_async("ws://snarkd/rpc/v0", stream).await.expect("websocket handshake");
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": "Snark.Version", "params": []});
        ws.send(tokio_tungstenite::tungstenite::Message::Text(req.to_string().into())).await.unwrap();
        let msg = ws.next().await.unwrap().unwrap();
        let v: Value = serde_json::from_str(msg.to_text().unwrap()).unwrap();
        assert_eq!(v["result"]["version"], env!("CARGO_PKG_VERSION"));
    });
}

#[test]
fn version_via_snarkctl_human_and_json() {
    let d = start("");
    let out = ctl(&d, &["version"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
    let out = ctl(&d, &["--json", "version"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["api"], "v0");
    // A dead socket makes snarkctl fail, not hang or succeed.
    let out = std::process::Command::new(SNARKCTL)
        .args(["--socket", "/nonexistent/snarkd.sock", "version"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/snarkd.sock"));
}

#[test]
fn notify_ready_reload_stopping_and_clean_exit() {
    let mut d = start("");
    // READY=1 only after the socket accepts connections.
    std::os::unix::net::UnixStream::connect(&d.socket).expect("socket accepts once READY=1 was sent");
    assert!(d.notify.seen.iter().all(|m| !m.contains("STOPPING")));

    d.signal(Signal::SIGHUP).unwrap();
    let reloading = d.wait_for("RELOADING=1", Duration::from_secs(30)).unwrap();
    assert!(
        reloading.lines().any(|l| l.starts_with("MONOTONIC_USEC=") && l[15..].parse::<u64>().is_ok()),
        "RELOADING=1 must travel with MONOTONIC_USEC in one datagram: {reloading:?}"
    );
    d.wait_for("READY=1", Duration::from_secs(30)).unwrap();

    d.signal(Signal::SIGTERM).unwrap();
    d.wait_for("STOPPING=1", Duration::from_secs(30)).unwrap();
    let status = d.wait_exit(Duration::from_secs(60)).unwrap();
    assert_eq!(status.code(), Some(0), "{}", d.log_text());
    assert!(!d.socket.exists(), "socket file must be removed on exit");
}

#[test]
fn status_lines_are_sent() {
    let mut d = start("");
    let ready = d.notify.seen.last().unwrap().clone();
    assert!(ready.lines().any(|l| l.starts_with("STATUS=") && l.contains("queued")), "{ready:?}");
    d.signal(Signal::SIGTERM).unwrap();
    d.wait_exit(Duration::from_secs(60)).unwrap();
}

#[test]
fn bad_config_exits_78_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "[socket]\npaht = \"/tmp/x.sock\"\n").unwrap();
    let out = std::process::Command::new(SNARKD).arg("--config").arg(&cfg).output().unwrap();
    assert_eq!(out.status.code(), Some(78));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("paht") && err.contains("bad.toml"), "{err}");

    std::fs::write(&cfg, "[queue]\njob_retention = \"forever\"\n").unwrap();
    let out = std::process::Command::new(SNARKD).arg("--config").arg(&cfg).arg("check-config").output().unwrap();
    assert_eq!(out.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&out.stderr).contains("queue.job_retention"));

    let out = std::process::Command::new(SNARKD).args(["--config", "/nonexistent/snarkd.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(78));

    // Environment overrides are validated too.
    std::fs::write(&cfg, "").unwrap();
    let out = std::process::Command::new(SNARKD)
        .arg("--config")
        .arg(&cfg)
        .arg("check-config")
        .env("SNARKD_SOCKET__MAX_CONNECTIONS", "lots")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&out.stderr).contains("socket.max_connections"));
}

#[test]
fn check_config_prints_effective_config_with_layers() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("snarkd.toml");
    std::fs::write(&cfg, "[queue]\nporep_c2 = 3\n[log]\nlevel = \"debug\"\n").unwrap();
    let out = std::process::Command::new(SNARKD)
        .arg("--config")
        .arg(&cfg)
        .args(["--log-level", "warn", "check-config"])
        .env("SNARKD_QUEUE__WINDOW_POST", "5")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let c: snarkd::config::Config = toml::from_str(
        &String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    assert_eq!(c.queue.porep_c2, 3, "file layer");
    assert_eq!(c.queue.window_post, 5, "env layer");
    assert_eq!(c.log.level, "warn", "flag beats file");
}

#[test]
fn bad_config_on_sighup_and_reload_rpc_keeps_the_old_one() {
    let mut d = start("[queue]\nporep_c2 = 7\n");
    let good = std::fs::read_to_string(&d.config).unwrap();
    std::fs::write(&d.config, format!("{good}\n[bogus]\nkey = 1\n")).unwrap();

    d.signal(Signal::SIGHUP).unwrap();
    d.wait_for("RELOADING=1", Duration::from_secs(30)).unwrap();
    d.wait_for("READY=1", Duration::from_secs(30)).unwrap();
    let status = block_on(d.client().call("Status", vec![])).expect("still serving after a bad reload");
    assert!(status["engine"]["queues"].as_array().unwrap().iter().any(|q| q["kind"] == "porep_c2" && q["limit"] == 7));

    let err = block_on(d.client().call("Reload", vec![])).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::BadInput.code()));
    assert!(err.to_string().contains("bogus"), "{err}");
    let out = ctl(&d, &["reload"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));

    // A good config applies live keys and reports restart-only ones.
    std::fs::write(&d.config, format!("{good}\n[proving]\nverify = false\n").replace("porep_c2 = 7", "porep_c2 = 9")).unwrap();
    let r = block_on(d.client().call("Reload", vec![])).unwrap();
    assert!(r["applied"].as_array().unwrap().contains(&json!("queue.porep_c2")), "{r}");
    let status = block_on(d.client().call("Status", vec![])).unwrap();
    assert!(status["engine"]["queues"].as_array().unwrap().iter().any(|q| q["kind"] == "porep_c2" && q["limit"] == 9));
    let moved = d.socket.with_file_name("other.sock");
    std::fs::write(&d.config, good.replace(&d.socket.display().to_string(), &moved.display().to_string())).unwrap();
    let r = block_on(d.client().call("Reload", vec![])).unwrap();
    assert!(r["restart_required"].as_array().unwrap().contains(&json!("socket.path")), "{r}");
    assert!(block_on(d.client().call("Version", vec![])).is_ok(), "socket stays where it was until restart");
    d.signal(Signal::SIGTERM).unwrap();
    assert_eq!(d.wait_exit(Duration::from_secs(60)).unwrap().code(), Some(0));
}

/// Starts snarkd with `socket_lines` in its config's [socket] section.
fn start_custom_socket(socket_lines: &str) -> Daemon {
    daemon().socket_config(socket_lines).start().unwrap()
}

#[test]
fn socket_mode_and_group_follow_config() {
    let d = start_custom_socket("mode = \"0640\"\ngroup = \"65534\"\n");
    let meta = std::fs::metadata(&d.socket).expect("socket created");
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    assert_eq!(meta.gid(), 65534);
}

#[test]
fn peer_not_on_allow_list_gets_permission_denied() {
    // A world-connectable socket, so the refusal comes from snarkd's SO_PEERCRED check.
    let mut d = start_custom_socket("mode = \"0666\"\n");
    for dir in [d.dir(), d.socket.parent().unwrap()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", SNARKCTL, "--socket"])
        .arg(&d.socket)
        .arg("version")
        .output()
        .expect("setpriv (util-linux) is installed");
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("permission_denied ({})", ErrorCode::PermissionDenied.code())), "{err}");
    assert!(block_on(d.client().call("Version", vec![])).is_ok(), "root stays allowed");
    d.signal(Signal::SIGKILL).unwrap();
    d.wait_exit(Duration::from_secs(10)).unwrap();
    let logged = d.log_text();
    assert!(logged.contains("uid 65534") && logged.contains("pid "), "{logged}");
}

#[test]
fn second_daemon_on_a_live_socket_refuses_and_stale_socket_is_replaced() {
    let mut d = start("");
    let out = std::process::Command::new(SNARKD).arg("--config").arg(&d.config).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already serving"), "{out:?}");
    assert!(block_on(d.client().call("Version", vec![])).is_ok(), "first daemon unharmed");
    // kill -9 leaves a stale socket behind; the next start on that config removes it and serves.
    d.signal(Signal::SIGKILL).unwrap();
    d.wait_exit(Duration::from_secs(10)).unwrap();
    assert!(d.socket.exists());
    let mut notify = Notifier::bind(&d.dir().join("notify2.sock")).unwrap();
    let mut child = std::process::Command::new(SNARKD)
        .arg("--config")
        .arg(&d.config)
        .env("NOTIFY_SOCKET", notify.path())
        .stderr(std::fs::File::create(d.dir().join("log2")).unwrap())
        .spawn()
        .unwrap();
    notify.wait_for("READY=1", Duration::from_secs(60), &mut child).unwrap();
    assert!(block_on(d.client().call("Version", vec![])).is_ok());
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn oversized_request_gets_a_json_rpc_error() {
    let d = start("");
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "Snark.Submit", "params": [{"kind": "porep_c2", "c1_output": "A".repeat(300 << 20)}]});
    let (status, bytes) = block_on(d.client().post_raw("/rpc/v0", big.to_string().into_bytes())).unwrap();
    assert_eq!(status, 200);
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["error"]["code"], ErrorCode::BadInput.code(), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("max_request_bytes"));
    assert!(block_on(d.client().call("Version", vec![])).is_ok(), "daemon keeps serving");
}

#[test]
fn malformed_and_unknown_requests_get_codes() {
    let d = start("");
    let c = d.client();
    let e = block_on(c.call("Submit", vec![json!({"kind": "teleport"})])).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::BadInput.code()));
    assert!(e.to_string().contains("kind"));
    let e = block_on(c.call("Submit", vec![json!("not an object")])).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::BadInput.code()));
    let e = block_on(c.call("Job", vec![json!("0123")])).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound.code()));
    let e = block_on(c.call("Await", vec![json!("0123"), json!(10)])).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound.code()));
    let (status, bytes) = block_on(c.post_raw("/rpc/v0", b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":".to_vec())).unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["error"]["code"], -32700, "truncated JSON is a parse error (HTTP {status})");
    assert!(block_on(c.call("Version", vec![])).is_ok());
}

#[test]
fn metrics_are_served_on_a_configured_loopback_port_only() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // A bare port binds loopback only.
    let d = start(&format!("[metrics]\nlisten = \"{port}\"\n"));
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let local = format!("0100007F:{port:04X}");
    assert!(tcp.lines().any(|l| l.split_whitespace().nth(1) == Some(local.as_str())), "not on 127.0.0.1:{port}:\n{tcp}");
    assert!(!std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default().contains(&format!(":{port:04X} ")));
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("metrics port open");
    s.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200") && text.contains("snarkd_budget_limit_bytes"), "{text}");
    drop(d);
    // Without the key there is no TCP listener at all.
    let d = start("");
    let pid = d.pid();
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| l.to_string_lossy().strip_prefix("socket:[").map(|s| s.trim_end_matches(']').to_string()))
        .collect();
    let listening = tcp.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(3) == Some(&"0A") && f.get(9).is_some_and(|i| inodes.iter().any(|x| x == i))
    });
    assert!(!listening, "snarkd opened a TCP listener without metrics.listen");
}

/// A raw connection that sent `bytes` of a request and then stalls.
fn stalled(socket: &std::path::Path, bytes: &[u8]) -> std::os::unix::net::UnixStream {
    use std::io::Write;
    let mut s = std::os::unix::net::UnixStream::connect(socket).expect("connect");
    s.write_all(bytes).unwrap();
    s
}

/// Reads until the daemon closes `s` or `limit` passes; returns what arrived and whether it closed.
fn read_until_closed(s: &mut std::os::unix::net::UnixStream, limit: Duration) -> (String, bool) {
    use std::io::Read;
    s.set_read_timeout(Some(limit)).unwrap();
    let mut got = vec![];
    let closed = s.read_to_end(&mut got).is_ok();
    (String::from_utf8_lossy(&got).into_owned(), closed)
}

/// Reads one HTTP response head (and its body, when it has a content-length) from `s`.
fn read_response(s: &mut std::os::unix::net::UnixStream) -> Option<String> {
    use std::io::Read;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = vec![];
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? != 1 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).ok()?;
    Some(head + &String::from_utf8_lossy(&body))
}

/// A kept-alive HTTP connection that has completed one call, and so holds a connection slot;
/// None when the daemon refused it.
fn kept_alive(socket: &std::path::Path) -> Option<std::os::unix::net::UnixStream> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"Snark.Version","params":[]}"#;
    let request = format!("POST /rpc/v0 HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    let mut s = stalled(socket, request.as_bytes());
    read_response(&mut s)?.contains("\"result\"").then_some(s)
}

/// An open WebSocket connection; None when the daemon answered the handshake with an error.
fn websocket(socket: &std::path::Path) -> Option<std::os::unix::net::UnixStream> {
    let mut s = stalled(
        socket,
        b"GET /rpc/v0 HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
          sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n",
    );
    read_response(&mut s)?.starts_with("HTTP/1.1 101").then_some(s)
}

/// Opens connections with `open` until two hold a slot (one may be refused while a connection
/// closed just before still holds its own), checks that the next call gets queue_full, closes
/// them and waits until calls go through again.
fn fill_both_slots(socket: &std::path::Path, open: fn(&std::path::Path) -> Option<std::os::unix::net::UnixStream>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut held = vec![];
    while held.len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no two connections were accepted");
        match open(socket) {
            Some(s) => held.push(s),
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let e = block_on(snarkd::client::Client::new(socket).call("Version", vec![])).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::QueueFull.code()), "{e}");
    assert!(e.to_string().contains("socket.max_connections = 2"), "{e}");
    drop(held);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while block_on(snarkd::client::Client::new(socket).call("Version", vec![])).is_err() {
        assert!(std::time::Instant::now() < deadline, "slots never came back");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn connections_past_the_limit_get_queue_full_and_slots_come_back() {
    let mut d = start_custom_socket("max_connections = 2\n");
    // Idle kept-alive HTTP connections, refused at accept, and open WebSockets, which count
    // against the same limit inside jsonrpsee: both answer with the JSON-RPC error.
    fill_both_slots(&d.socket, kept_alive);
    fill_both_slots(&d.socket, websocket);
    d.signal(Signal::SIGKILL).unwrap();
    d.wait_exit(Duration::from_secs(10)).unwrap();
    assert!(d.log_text().contains("connection limit 2 reached"));
}

#[test]
fn slow_loris_requests_time_out_without_reaching_the_engine() {
    let mut d = start_custom_socket("max_connections = 3\nrequest_timeout = \"1s\"\n");
    let started = std::time::Instant::now();
    // Headers that never finish, a body that never finishes, and a connection that never speaks.
    let mut headers = stalled(&d.socket, b"POST /rpc/v0 HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n");
    let mut body = stalled(
        &d.socket,
        b"POST /rpc/v0 HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n{\"jsonrpc\":\"2.0\",",
    );
    let mut idle = stalled(&d.socket, b"");
    let (_, closed) = read_until_closed(&mut headers, Duration::from_secs(10));
    assert!(closed, "a connection with unfinished headers stays open");
    let (answer, closed) = read_until_closed(&mut body, Duration::from_secs(10));
    assert!(closed, "a connection with an unfinished body stays open");
    assert!(answer.contains(&format!("\"code\":{}", ErrorCode::BadInput.code())) && answer.contains("socket.request_timeout"), "{answer}");
    let (_, closed) = read_until_closed(&mut idle, Duration::from_secs(10));
    assert!(closed, "an idle connection stays open");
    assert!(started.elapsed() < Duration::from_secs(8), "timed out after {:?}", started.elapsed());

    // Nothing reached the engine, and the slots are free again.
    let status = block_on(d.client().call("Status", vec![])).expect("serves after the stalls");
    let engine = &status["engine"];
    assert_eq!(engine["budget"]["reserved"], 0, "{engine}");
    assert!(engine["queues"].as_array().unwrap().iter().all(|q| q["running"] == 0), "{engine}");
    d.signal(Signal::SIGKILL).unwrap();
    d.wait_exit(Duration::from_secs(10)).unwrap();
    assert!(d.log_text().contains("not received within socket.request_timeout"));
}
