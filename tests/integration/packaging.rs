//! Acceptance tests of what an operator installs: the systemd units, the man pages, the example
//! config and the Debian package, each checked with the real tool (systemd-analyze, man, cargo
//! deb, dpkg-deb) and the real binaries. A missing tool fails the test with what to install.
//!
//! Generated files (man/*, etc/snarkd.toml) are committed; when the code changes them, rerun
//! with SNARKD_BLESS=1 to rewrite them, and commit the result.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use snarkd::tools::Notifier;

use super::harness::{SNARKCTL, SNARKD};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Fails (never skips) when `tool` is missing, saying what to install.
fn require_tool(tool: &str, install: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false);
    assert!(found, "{tool} is not installed; install it with: {install}");
}

/// Compares a committed generated file with a fresh rendering; SNARKD_BLESS=1 rewrites it.
fn check_generated(committed: &Path, fresh: &str) {
    let current = std::fs::read_to_string(committed).unwrap_or_default();
    if current == fresh {
        return;
    }
    if std::env::var_os("SNARKD_BLESS").is_some() {
        std::fs::write(committed, fresh).unwrap();
        return;
    }
    let first = current.lines().zip(fresh.lines()).position(|(a, b)| a != b).unwrap_or(0);
    panic!(
        "{} is out of date (first difference at line {}:\n  committed: {:?}\n  generated: {:?})\n\
         regenerate it with: SNARKD_BLESS=1 cargo test --release --test integration packaging::",
        committed.display(),
        first + 1,
        current.lines().nth(first).unwrap_or(""),
        fresh.lines().nth(first).unwrap_or(""),
    );
}

// ---- man pages and the example config -------------------------------------------------------

#[test]
fn committed_man_pages_match_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(Command::new(SNARKCTL).args(["man", "--out"]).arg(dir.path()));
    assert!(out.status.success(), "snarkctl man failed: {}", String::from_utf8_lossy(&out.stderr));
    for (name, _) in snarkd::man::render_all() {
        check_generated(&repo("man").join(name), &read(&dir.path().join(name)));
    }
}

#[test]
fn committed_example_config_matches_the_schema() {
    check_generated(&repo("etc/snarkd.toml"), &snarkd::config_doc::example_toml());
}

#[test]
fn man_pages_render_without_warnings() {
    require_tool("man", "apt-get install -y man-db groff");
    require_tool("groff", "apt-get install -y groff");
    for (name, text) in snarkd::man::render_all() {
        assert!(text.is_ascii(), "{name} has non-ASCII text");
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join(name);
        std::fs::write(&page, &text).unwrap();
        let out = run(Command::new("man")
            .args(["--warnings", "-E", "UTF-8", "-l"])
            .arg(&page)
            .env("MANROFFSEQ", "")
            .env("MANWIDTH", "80")
            .env_remove("MANPAGER")
            .env("PAGER", "cat"));
        let warnings = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && warnings.is_empty(), "man -l {name}:\n{warnings}");
        assert!(out.stdout.len() > 1000, "{name} rendered to almost nothing");
    }
}

fn long_flags(cmd: &clap::Command, out: &mut BTreeSet<String>) {
    for arg in cmd.get_arguments() {
        if let Some(long) = arg.get_long() {
            out.insert(long.to_string());
        }
    }
    for sub in cmd.get_subcommands() {
        long_flags(sub, out);
    }
}

#[test]
fn every_long_flag_is_in_its_page() {
    let pages: BTreeMap<_, _> = snarkd::man::render_all().into_iter().collect();
    for (page, cmd) in [("snarkd.8", snarkd::cli::SnarkdCli::command()), ("snarkctl.1", snarkd::cli::SnarkctlCli::command())] {
        let mut flags = BTreeSet::new();
        long_flags(&cmd, &mut flags);
        assert!(flags.len() > 2, "{page}: found no flags");
        for flag in flags {
            let roff = format!("\\-\\-{}", flag.replace('-', "\\-"));
            assert!(pages[page].contains(&roff), "{page} does not document --{flag}");
        }
    }
}

#[test]
fn every_config_key_is_documented_and_every_documented_key_exists() {
    use snarkd::config_doc::{default_values, Format, KEYS, SECTIONS};
    let values = default_values();
    let page = &snarkd::man::render_all().into_iter().find(|(n, _)| *n == "snarkd.toml.5").unwrap().1;
    let example = snarkd::config_doc::example_toml();
    for key in values.keys() {
        assert!(KEYS.iter().any(|k| k.key == key), "config key {key} is not documented in config_doc::KEYS");
    }
    for key in KEYS {
        assert!(SECTIONS.iter().any(|s| s.name == key.section()), "{} is in no documented section", key.key);
        let unset = matches!(key.format, Format::Unset { .. });
        assert_eq!(values.contains_key(key.key), !unset, "{}: in Config::default() but marked unset, or the reverse", key.key);
        let line = key.assignment(&values);
        assert!(page.contains(&line.replace('-', "\\-")), "snarkd.toml(5) lacks {line:?}");
        assert!(example.contains(&format!("#{line}\n")), "etc/snarkd.toml lacks {line:?}");
    }
    // A key the schema does not know is rejected: documenting one would be caught above too.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snarkd.toml");
    std::fs::write(&path, example.replace("#mode = ", "mode = ")).unwrap();
    let out = run(Command::new(SNARKD).arg("--config").arg(&path).arg("check-config"));
    assert!(out.status.success(), "uncommented example rejected: {}", String::from_utf8_lossy(&out.stderr));
}

// ---- systemd units ---------------------------------------------------------------------------

/// The shipped units with their binaries pointed at the ones just built.
fn rewritten_units(dir: &Path) -> Vec<PathBuf> {
    ["snarkd.service", "snarkd.socket"]
        .iter()
        .map(|name| {
            let text = read(&repo("systemd").join(name))
                .replace("/usr/bin/snarkd ", &format!("{SNARKD} "))
                .replace("/usr/bin/snarkctl ", &format!("{SNARKCTL} "));
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect()
}

#[test]
fn units_pass_systemd_analyze_verify() {
    require_tool("systemd-analyze", "apt-get install -y systemd");
    let dir = tempfile::tempdir().unwrap();
    let units = rewritten_units(dir.path());
    // Documentation= is checked too: point man at the freshly rendered pages.
    let manpath = dir.path().join("man");
    for (name, text) in snarkd::man::render_all() {
        let section = name.rsplit('.').next().unwrap();
        std::fs::create_dir_all(manpath.join(format!("man{section}"))).unwrap();
        std::fs::write(manpath.join(format!("man{section}")).join(name), text).unwrap();
    }
    // User=snarkd stays: systemd-analyze verify does not resolve users, so the test machine
    // needs no snarkd user.
    let out = run(Command::new("systemd-analyze").arg("verify").args(&units).env("MANPATH", &manpath).current_dir(dir.path()));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.trim().is_empty(), "systemd-analyze verify:\n{text}");
}

#[test]
fn units_have_no_trailing_comments_and_the_required_settings() {
    for name in ["snarkd.service", "snarkd.socket", "snarkd.service.d/notify-reload.conf"] {
        let text = read(&repo("systemd").join(name));
        assert!(text.starts_with('#'), "{name} must start with a comment saying why it exists");
        for line in text.lines().filter(|l| !l.starts_with('#') && l.contains('=')) {
            assert!(!line.contains(" #") && !line.contains(" ;"), "{name}: trailing comment in {line:?}");
        }
    }
    let service = unit_settings(&read(&repo("systemd/snarkd.service")));
    for (key, value) in [
        ("Type", "notify"),
        ("KillMode", "mixed"),
        ("Restart", "on-failure"),
        ("RestartPreventExitStatus", "78"),
        ("RuntimeDirectory", "snarkd"),
        ("User", "snarkd"),
        ("Group", "snarkd"),
        ("LimitMEMLOCK", "infinity"),
        ("DevicePolicy", "closed"),
        ("UMask", "0007"),
        ("PrivateTmp", "yes"),
        ("ExecStartPre", "+-/usr/bin/nvidia-modprobe -u -c=0"),
    ] {
        assert_eq!(service.get(key).map(|v| v[0].as_str()), Some(value), "snarkd.service {key}=");
    }
    assert!(service.contains_key("WatchdogSec") && service.contains_key("TimeoutStopSec"));
    assert!(service["DeviceAllow"].iter().any(|v| v.starts_with("char-nvidia*")));
    assert!(service["BindReadOnlyPaths"].iter().any(|v| v.ends_with("/var/tmp/filecoin-proof-parameters")));
    assert!(!service.contains_key("PrivateDevices"), "PrivateDevices hides /dev/nvidia*");
    let socket = unit_settings(&read(&repo("systemd/snarkd.socket")));
    assert_eq!(socket["ListenStream"], ["/run/snarkd/snarkd.sock"]);
    assert_eq!(socket["SocketMode"], ["0660"]);
    assert_eq!(socket["SocketGroup"], ["snarkd"]);
    let dropin = unit_settings(&read(&repo("systemd/snarkd.service.d/notify-reload.conf")));
    assert_eq!(dropin["Type"], ["notify-reload"]);
    assert_eq!(dropin["ExecReload"], [""], "the drop-in must clear ExecReload, or a reload runs twice");
}

/// `Key=value` settings of a unit file, in order, ignoring sections.
fn unit_settings(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with(['#', ';', '['])) {
        if let Some((k, v)) = line.split_once('=') {
            out.entry(k.trim().to_string()).or_default().push(v.trim().to_string());
        }
    }
    out
}

/// A unit's command line as argv, with systemd's prefixes dropped and the packaged paths
/// replaced by the built binaries and the test's config file.
fn command_line(unit: &BTreeMap<String, Vec<String>>, key: &str, config: &Path) -> Vec<String> {
    let line = &unit[key][0];
    line.trim_start_matches(['+', '-', '@', '!', ':'])
        .split_whitespace()
        .map(|word| match word {
            "/usr/bin/snarkd" => SNARKD.to_string(),
            "/usr/bin/snarkctl" => SNARKCTL.to_string(),
            "/etc/snarkd/snarkd.toml" => config.display().to_string(),
            other => other.to_string(),
        })
        .collect()
}

/// Plays systemd's part for one service: the unit's Environment=, a notify socket, the command.
struct Service {
    unit: BTreeMap<String, Vec<String>>,
    env: Vec<(String, String)>,
    config: PathBuf,
}

impl Service {
    fn command(&self, key: &str) -> Command {
        let argv = command_line(&self.unit, key, &self.config);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).envs(self.env.iter().cloned()).env_remove("NOTIFY_SOCKET");
        cmd
    }
}

fn wait_for(notify: &mut Notifier, what: &str, child: &mut Child) {
    if let Err(e) = notify.wait_for(what, Duration::from_secs(30), child) {
        let mut err = String::new();
        if child.try_wait().ok().flatten().is_some() {
            child.stderr.take().map(|mut e| e.read_to_string(&mut err));
        }
        panic!("{e:#}\n{err}");
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn packaged_exec_start_and_exec_reload_drive_a_real_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("snarkd.sock");
    let config = dir.path().join("snarkd.toml");
    let good = format!("[socket]\npath = \"{}\"\n[log]\ntarget = \"text\"\n", socket.display());
    std::fs::write(&config, &good).unwrap();

    let unit = unit_settings(&read(&repo("systemd/snarkd.service")));
    let mut env: Vec<(String, String)> = unit["Environment"]
        .iter()
        .flat_map(|v| v.split_whitespace())
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    assert!(env.iter().any(|(k, _)| k == "SNARKD_SOCKET"), "the unit must tell ExecReload where the socket is");
    env.retain(|(k, _)| k != "SNARKD_SOCKET");
    env.push(("SNARKD_SOCKET".into(), socket.display().to_string()));
    let service = Service { unit, env, config: config.clone() };

    let mut notify = Notifier::bind(&dir.path().join("notify")).unwrap();
    let mut daemon = service
        .command("ExecStart")
        .env("NOTIFY_SOCKET", notify.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&mut notify, "READY=1", &mut daemon);

    // A good config (a live key changed) reloads, synchronously.
    std::fs::write(&config, format!("{good}level = \"debug\"\n")).unwrap();
    let out = run(&mut service.command("ExecReload"));
    assert!(out.status.success(), "reload of a good config failed:\n{}", text(&out));
    assert!(text(&out).contains("log.level"), "reload did not report the applied key:\n{}", text(&out));

    // A bad config fails the reload with the reason, and the daemon keeps serving.
    std::fs::write(&config, format!("{good}[queue]\nporep_c3 = 1\n")).unwrap();
    let out = run(&mut service.command("ExecReload"));
    assert!(!out.status.success(), "reload of a bad config succeeded:\n{}", text(&out));
    assert!(text(&out).contains("porep_c3"), "the reason does not name the bad key:\n{}", text(&out));
    assert!(daemon.try_wait().unwrap().is_none(), "the daemon exited after a rejected reload");
    let out = run(Command::new(SNARKCTL).arg("--socket").arg(&socket).arg("status"));
    assert!(out.status.success(), "the daemon stopped serving after a rejected reload:\n{}", text(&out));

    // SIGTERM drains and exits 0, as KillMode=mixed expects of the main process.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    wait_for(&mut notify, "STOPPING=1", &mut daemon);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = daemon.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the daemon did not stop within 20 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    assert!(!socket.exists(), "the daemon left its socket behind");
}

#[test]
fn exec_start_with_a_rejected_config_exits_78() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("snarkd.toml");
    std::fs::write(&config, "[socket]\npaht = \"/x\"\n").unwrap();
    let unit = unit_settings(&read(&repo("systemd/snarkd.service")));
    let argv = command_line(&unit, "ExecStart", &config);
    let out = run(Command::new(&argv[0]).args(&argv[1..]));
    assert_eq!(out.status.code(), Some(78), "{}", text(&out));
    assert_eq!(unit["RestartPreventExitStatus"], ["78"]);
}

#[test]
fn socket_unit_activation_serves_and_keeps_the_socket_file() {
    require_tool("systemd-socket-activate", "apt-get install -y systemd");
    let socket_unit = unit_settings(&read(&repo("systemd/snarkd.socket")));
    assert_eq!(socket_unit["ListenStream"], [snarkd::config::DEFAULT_SOCKET_PATH], "snarkd.socket and the daemon's default differ");
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("snarkd.sock");
    let config = dir.path().join("snarkd.toml");
    std::fs::write(&config, format!("[socket]\npath = \"{}\"\n[log]\ntarget = \"text\"\n", socket.display())).unwrap();
    let unit = unit_settings(&read(&repo("systemd/snarkd.service")));
    let argv = command_line(&unit, "ExecStart", &config);
    // systemd-socket-activate listens like snarkd.socket, and on the first connection execs
    // the service's ExecStart with LISTEN_FDS, keeping its own pid.
    let mut activator = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&socket)
        .args(&argv)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "systemd-socket-activate did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = run(Command::new(SNARKCTL).arg("--socket").arg(&socket).arg("version"));
    assert!(out.status.success(), "first call through the activated socket failed:\n{}", text(&out));
    unsafe { libc::kill(activator.id() as i32, libc::SIGTERM) };
    let status = activator.wait().unwrap();
    let mut log = String::new();
    activator.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("LISTEN_FDS"), "the daemon bound its own socket instead of the passed one:\n{log}");
    assert!(socket.exists(), "the daemon removed the socket file that systemd owns");
}

// ---- the Debian package ----------------------------------------------------------------------

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

fn files_under(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(root, &path, out);
        } else {
            out.insert(path.strip_prefix(root).unwrap().display().to_string());
        }
    }
}

#[test]
fn deb_package_installs_every_path_with_its_mode() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let probe = Command::new(&cargo).args(["deb", "--version"]).output();
    assert!(
        probe.map(|o| o.status.success()).unwrap_or(false),
        "cargo-deb is not installed; install it with: cargo install cargo-deb --locked"
    );
    require_tool("dpkg-deb", "apt-get install -y dpkg");
    require_tool("gzip", "apt-get install -y gzip");
    let dir = tempfile::tempdir().unwrap();
    let deb = dir.path().join("snarkd.deb");
    // --no-build: cargo test has just built the release binaries, and a nested cargo build
    // would wait for the lock this test run holds.
    let out = run(Command::new(&cargo)
        .args(["deb", "--no-build", "--fast", "--output"])
        .arg(&deb)
        .current_dir(env!("CARGO_MANIFEST_DIR")));
    assert!(out.status.success(), "cargo deb failed:\n{}", text(&out));

    let root = dir.path().join("root");
    let out = run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root));
    assert!(out.status.success(), "dpkg-deb -x: {}", text(&out));
    let expected: BTreeMap<&str, u32> = [
        ("usr/bin/snarkd", 0o755),
        ("usr/bin/snarkctl", 0o755),
        ("etc/snarkd/snarkd.toml", 0o644),
        ("usr/lib/systemd/system/snarkd.service", 0o644),
        ("usr/lib/systemd/system/snarkd.socket", 0o644),
        ("usr/lib/sysusers.d/snarkd.conf", 0o644),
        ("usr/share/man/man8/snarkd.8.gz", 0o644),
        ("usr/share/man/man1/snarkctl.1.gz", 0o644),
        ("usr/share/man/man5/snarkd.toml.5.gz", 0o644),
        ("usr/share/doc/snarkd/examples/notify-reload.conf", 0o644),
        ("usr/share/doc/snarkd/operators.md", 0o644),
        ("usr/share/doc/snarkd/copyright", 0o644),
    ]
    .into_iter()
    .collect();
    let mut found = BTreeSet::new();
    files_under(&root, &root, &mut found);
    assert_eq!(found, expected.keys().map(|k| k.to_string()).collect::<BTreeSet<_>>(), "installed files");
    for (path, want) in &expected {
        assert_eq!(mode(&root.join(path)), *want, "mode of /{path}");
    }
    for (installed, source) in [
        ("usr/lib/systemd/system/snarkd.service", "systemd/snarkd.service"),
        ("usr/lib/systemd/system/snarkd.socket", "systemd/snarkd.socket"),
        ("etc/snarkd/snarkd.toml", "etc/snarkd.toml"),
    ] {
        assert_eq!(read(&root.join(installed)), read(&repo(source)), "/{installed} differs from {source}");
    }
    for (page, section) in [("snarkd.8", 8), ("snarkctl.1", 1), ("snarkd.toml.5", 5)] {
        let gz = root.join(format!("usr/share/man/man{section}/{page}.gz"));
        let out = run(Command::new("gzip").arg("-dc").arg(&gz));
        assert_eq!(String::from_utf8_lossy(&out.stdout), read(&repo("man").join(page)), "{page}.gz");
    }

    let control = dir.path().join("control");
    let out = run(Command::new("dpkg-deb").arg("-e").arg(&deb).arg(&control));
    assert!(out.status.success(), "dpkg-deb -e: {}", text(&out));
    assert_eq!(read(&control.join("conffiles")).trim(), "/etc/snarkd/snarkd.toml");
    let postinst = read(&control.join("postinst"));
    assert_eq!(postinst.matches("systemd-sysusers").count(), 1, "postinst must create the user once:\n{postinst}");
    assert!(postinst.contains("snarkd.conf"), "postinst does not apply snarkd.conf:\n{postinst}");
    assert!(postinst.contains("usermod -a -G"), "postinst does not add snarkd to the GPU groups:\n{postinst}");
    for forbidden in ["deb-systemd-invoke start", "deb-systemd-invoke restart", "deb-systemd-invoke try-restart"] {
        assert!(!postinst.contains(forbidden), "an install or upgrade must not (re)start the daemon:\n{postinst}");
    }
    let prerm = read(&control.join("prerm"));
    assert!(prerm.contains("\"$1\" = remove") && !prerm.contains("upgrade"), "prerm may stop the daemon only on remove:\n{prerm}");

    for script in ["postinst", "prerm", "postrm"] {
        let out = run(Command::new("sh").arg("-n").arg(control.join(script)));
        assert!(out.status.success(), "{script} is not valid sh: {}", text(&out));
    }
    let out = run(Command::new("systemd-sysusers").arg("--dry-run").arg(root.join("usr/lib/sysusers.d/snarkd.conf")));
    assert!(out.status.success(), "systemd-sysusers rejects snarkd.conf: {}", text(&out));
    let user_exists = run(Command::new("getent").args(["passwd", "snarkd"])).status.success();
    assert!(user_exists || text(&out).contains("Creating user 'snarkd'"), "snarkd.conf creates no user: {}", text(&out));

    let out = run(Command::new(root.join("usr/bin/snarkd"))
        .arg("--config")
        .arg(root.join("etc/snarkd/snarkd.toml"))
        .arg("check-config"));
    assert!(out.status.success(), "installed snarkd rejects the installed config:\n{}", text(&out));
}
