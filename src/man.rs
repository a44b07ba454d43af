//! The man pages snarkd(8), snarkctl(1) and snarkd.toml(5), generated from the clap definitions
//! (through clap_mangen), the config schema (`config_doc`), the error codes and the method table,
//! so that no page can drift from the code. `snarkctl man --out DIR` writes them; the committed
//! copies in `man/` are checked against a fresh rendering by the test suite.

use std::path::{Path, PathBuf};

use clap::{Arg, Command, CommandFactory};
use clap_mangen::roff::{bold, italic, roman, Inline, Roff};
use clap_mangen::Man;

use crate::cli::{exit, SnarkctlCli, SnarkdCli};
use crate::config::{DEFAULT_CONFIG_PATH, DEFAULT_SOCKET_PATH};
use crate::config_doc::{self, SECTIONS, SIZING};
use crate::engine::Stage;
use crate::error::ErrorCode;
use crate::proofs::ProofKind;
use crate::rpc::methods::METHODS;

/// Writes every man page into `dir` and returns their paths.
pub fn write_all(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    render_all()
        .into_iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            Ok(path)
        })
        .collect()
}

/// Every page as (file name, roff source).
pub fn render_all() -> Vec<(&'static str, String)> {
    vec![("snarkd.8", snarkd_page()), ("snarkctl.1", snarkctl_page()), ("snarkd.toml.5", config_page())]
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn title(name: &str, section: &str, manual: &str) -> String {
    format!(".TH {} {section} \"\" \"snarkd {VERSION}\" \"{manual}\"\n", name.to_ascii_uppercase())
}

/// SYNOPSIS and OPTIONS from clap_mangen, without the preamble it repeats per call.
fn clap_sections(cmd: Command) -> (String, String) {
    let man = Man::new(cmd);
    let preamble = Roff::new().render();
    let render = |f: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| {
        let mut buf = Vec::new();
        f(&mut buf).expect("rendering into memory");
        let text = String::from_utf8(buf).expect("roff is utf-8");
        text.strip_prefix(&preamble).unwrap_or(&text).to_string()
    };
    (render(&|b| man.render_synopsis_section(b)), render(&|b| man.render_options_section(b)))
}

/// A page under construction: roff text lines, escaped by the roff crate.
struct Page(Roff);

impl Page {
    fn new() -> Page {
        Page(Roff::new())
    }
    fn section(&mut self, name: &str) -> &mut Self {
        self.0.control("SH", [name]);
        self
    }
    fn subsection(&mut self, name: &str) -> &mut Self {
        self.0.control("SS", [name]);
        self
    }
    fn para(&mut self, text: &str) -> &mut Self {
        self.0.control("PP", []).text([roman(text)]);
        self
    }
    /// A tagged paragraph: `term` on its own line, `text` indented below.
    fn item(&mut self, term: Vec<Inline>, text: &str) -> &mut Self {
        self.0.control("TP", []).text(term).text([roman(text)]);
        self
    }
    /// A literal example block.
    fn example(&mut self, lines: &[&str]) -> &mut Self {
        self.0.control("PP", []).control("RS", ["4"]).control("nf", []);
        for line in lines {
            self.0.text([roman(*line)]);
        }
        self.0.control("fi", []).control("RE", []);
        self
    }
    fn indent(&mut self) -> &mut Self {
        self.0.control("RS", []);
        self
    }
    fn outdent(&mut self) -> &mut Self {
        self.0.control("RE", []);
        self
    }
    fn finish(&self) -> String {
        self.0.to_roff()
    }
}

fn name_section(name: &str, what: &str) -> String {
    let mut p = Page::new();
    p.section("NAME").0.text([roman(format!("{name} - {what}"))]);
    p.finish()
}

/// Header text of an argument: `--long <VALUE>`, `-s, --long`, or `<NAME>` for positionals.
fn arg_term(arg: &Arg) -> Vec<Inline> {
    let value = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_ascii_uppercase());
    let takes_value = arg.get_num_args().map(|n| n.takes_values()).unwrap_or(false);
    if arg.is_positional() {
        return vec![italic(format!("<{value}>"))];
    }
    let mut term = Vec::new();
    if let Some(s) = arg.get_short() {
        term.push(bold(format!("-{s}")));
        term.push(roman(", "));
    }
    if let Some(l) = arg.get_long() {
        term.push(bold(format!("--{l}")));
    }
    if takes_value {
        term.push(roman(" "));
        term.push(italic(format!("<{value}>")));
    }
    term
}

/// COMMANDS: each subcommand with its usage, its description and its own arguments.
fn commands_section(cmd: &Command) -> String {
    let mut cmd = cmd.clone();
    cmd.build();
    let mut p = Page::new();
    p.section("COMMANDS");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let own: Vec<&Arg> = sub
            .get_arguments()
            .filter(|a| !a.is_global_set() && !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
            .collect();
        let mut term = vec![bold(format!("{} {}", cmd.get_name(), sub.get_name()))];
        for arg in own.iter().filter(|a| a.is_positional()) {
            term.push(roman(" "));
            term.extend(arg_term(arg));
        }
        if own.iter().any(|a| !a.is_positional()) {
            term.push(roman(" [options]"));
        }
        let about = sub.get_about().map(|s| s.to_string()).unwrap_or_default();
        p.item(term, &about);
        if own.iter().any(|a| !a.is_positional() || a.get_help().is_some()) {
            p.indent();
            // A positional without help is already named in the usage line.
            for arg in own.into_iter().filter(|a| !a.is_positional() || a.get_help().is_some()) {
                let help = arg.get_help().map(|s| s.to_string()).unwrap_or_default();
                let default = arg
                    .get_default_values()
                    .first()
                    .map(|d| format!(" [default: {}]", d.to_string_lossy()))
                    .unwrap_or_default();
                p.item(arg_term(arg), &format!("{help}{default}"));
            }
            p.outdent();
        }
    }
    p.finish()
}

fn exit_status_section(p: &mut Page, config_code: bool) {
    p.section("EXIT STATUS");
    p.item(vec![bold(exit::OK.to_string())], "Success; for the daemon, a clean stop after draining.");
    p.item(
        vec![bold(exit::FAILURE.to_string())],
        "Any failure that is not a configuration error: the daemon could not bind its socket or failed while running, a second signal cut a drain short, or (snarkctl) the daemon answered with an error or could not be reached.",
    );
    if config_code {
        p.item(
            vec![bold(exit::CONFIG.to_string())],
            "EX_CONFIG: the configuration was rejected (unknown key, bad value, missing --config file). The packaged unit has RestartPreventExitStatus=78, so systemd does not restart into the same error.",
        );
    }
}

fn snarkd_page() -> String {
    let mut out = title("snarkd", "8", "System Administration");
    out.push_str(&name_section("snarkd", "Filecoin Groth16 proving daemon for Lotus and Curio"));
    let (synopsis, options) = clap_sections(SnarkdCli::command());
    out.push_str(&synopsis);
    let mut p = Page::new();
    p.section("DESCRIPTION")
        .para("snarkd is a node sidecar that proves Filecoin Groth16 SNARKs: PoRep C2, WindowPoSt, WinningPoSt and SnapDeals. It keeps the proving parameters resident, synthesizes circuits on the CPU, runs the NTT and MSM work on every GPU it is given, verifies each proof and replies. Clients (Curio, Lotus, snarkctl) speak JSON-RPC 2.0 over HTTP or WebSocket on a local Unix socket.")
        .para(&format!("The configuration is read from {DEFAULT_CONFIG_PATH} (see snarkd.toml(5)), overridden by SNARKD_<SECTION>__<KEY> environment variables and then by the flags below. A missing default file means built-in defaults; a file named with --config must exist. Unknown keys are errors."))
        .para("snarkd runs one instance per GPU host. Work is spread across hosts by Curio's task scheduler, not by snarkd.");
    out.push_str(&p.finish());
    out.push_str(&options);
    out.push_str(&commands_section(&SnarkdCli::command()));

    let mut p = Page::new();
    p.section("SIGNALS")
        .item(vec![bold("SIGHUP")], "Re-read the configuration, as Snark.Reload does. A rejected config is logged and the running config stays. Keys that need a restart are reported and left alone.")
        .item(vec![bold("SIGTERM"), roman(", "), bold("SIGINT")], "Drain: stop accepting jobs (new submissions get draining), wait up to daemon.drain_timeout for in-flight jobs, fail the rest as cancelled, release every device, remove the socket and exit 0.")
        .item(vec![roman("A second "), bold("SIGTERM"), roman(" or "), bold("SIGINT")], "During a drain: exit 1 at once; unfinished jobs are lost.");

    p.section("SYSTEMD INTEGRATION")
        .para("snarkd follows the sd_notify(3) protocol when NOTIFY_SOCKET is set (Type=notify):")
        .item(vec![bold("READY=1")], "once the socket is bound, the backends are up and the preloaded parameters are resident; again after each reload. STATUS= carries a one-line summary for systemctl status.")
        .item(vec![bold("RELOADING=1"), roman(" with "), bold("MONOTONIC_USEC=")], "in one datagram when a reload starts, then READY=1 when it ends, as Type=notify-reload (systemd 253 and later) requires.")
        .item(vec![bold("STOPPING=1")], "when a drain starts.")
        .item(vec![bold("EXTEND_TIMEOUT_USEC=")], "repeated while draining, so that TimeoutStopSec= does not cut a drain short; the drain itself ends at daemon.drain_timeout.")
        .item(vec![bold("WATCHDOG=1")], "every WatchdogSec/2 while running, when WatchdogSec= is set.")
        .para("With socket activation (snarkd.socket, LISTEN_FDS) the daemon serves the passed socket instead of binding its own.")
        .para("The packaged snarkd.service uses Type=notify with ExecReload=snarkctl reload, which makes systemctl reload fail, with the reason, when the new config is rejected. systemd 252 (Debian 12) has no Type=notify-reload; /usr/share/doc/snarkd/examples/notify-reload.conf is an opt-in drop-in for systemd 253 and later, at the cost that a rejected reload is only logged.");

    p.section("SOCKET AND ACCESS CONTROL")
        .para(&format!("The socket is {DEFAULT_SOCKET_PATH} unless socket.path says otherwise. A stale socket file is removed before binding; a live daemon on the path is an error. The socket gets socket.mode (default 0660) and socket.group right after binding."))
        .para("Every request is checked against the caller's credentials (SO_PEERCRED): root, the daemon's own uid, the uids in access.allow_uids, and callers whose primary or supplementary group is the socket's group or in access.allow_gids may call. Everyone else gets permission_denied, and the refusal is logged with the uid and pid. To let Curio in, add its user to the snarkd group (usermod -a -G snarkd curio) or its uid to access.allow_uids.");

    p.section("JSON-RPC METHODS").para("Namespace Snark, positional parameters (always an array, as go-jsonrpc sends them), integer ids. Byte strings are base64. Over the Unix socket, HTTP clients POST each call to http://snarkd/rpc/v0 (or /; the host name is ignored); WebSocket clients connect to the same socket.");
    for (name, what) in METHODS {
        p.item(vec![bold(name)], what);
    }

    p.section("ERRORS").para("Each failure kind has a stable JSON-RPC error code; a code never changes meaning once shipped. snarkctl prints errors as name (code): message.");
    for code in ErrorCode::ALL {
        p.item(vec![bold(code.code().to_string()), roman(" "), bold(code.name())], code.meaning());
    }

    let kinds = ProofKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
    let stages = Stage::ALL.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ");
    p.section("LOGGING")
        .para("Under systemd, with log.target = auto, snarkd writes native journal entries (SYSLOG_IDENTIFIER=snarkd); otherwise text on stderr. Job events carry these journal fields:")
        .item(vec![bold("JOB_ID")], "the job id returned by Snark.Submit.")
        .item(vec![bold("KIND")], &format!("the proof kind: {kinds}."))
        .item(vec![bold("STAGE")], &format!("the pipeline stage: {stages}."))
        .item(vec![bold("DEVICE")], "the proving device, named as snarkctl status names it.")
        .para("Priorities: error 3, warning 4, info 6, debug 7, so journalctl -p info shows info and above without debug. log.level (a tracing filter) chooses what is logged at all and can be changed by a reload.")
        .example(&[
            "journalctl -u snarkd -p info",
            "journalctl -u snarkd JOB_ID=<job id>",
            "journalctl -u snarkd KIND=porep_c2",
            "journalctl -u snarkd STAGE=prove",
            "journalctl -u snarkd -p warning --since today",
            "journalctl -u snarkd -o verbose JOB_ID=<job id>",
        ]);
    exit_status_section(&mut p, true);

    p.section("ENVIRONMENT")
        .item(vec![bold("SNARKD_CONFIG")], "config file, as --config.")
        .item(vec![bold("SNARKD_"), italic("SECTION"), bold("__"), italic("KEY")], "overrides one config key, e.g. SNARKD_QUEUE__POREP_C2=8 or SNARKD_PARAMS__DIR=/data/params; see snarkd.toml(5).")
        .item(vec![bold("FIL_PROOFS_PARAMETER_CACHE")], "default of params.dir, as in filecoin-proofs.")
        .item(vec![bold("NOTIFY_SOCKET"), roman(", "), bold("WATCHDOG_USEC"), roman(", "), bold("LISTEN_FDS"), roman(", "), bold("JOURNAL_STREAM")], "set by systemd; see SYSTEMD INTEGRATION and LOGGING.");
    p.section("FILES")
        .item(vec![bold(DEFAULT_CONFIG_PATH)], "the configuration, snarkd.toml(5).")
        .item(vec![bold(DEFAULT_SOCKET_PATH)], "the JSON-RPC socket.")
        .item(vec![bold(crate::config::DEFAULT_PARAMS_DIR)], "the default parameter directory.")
        .item(vec![bold("/usr/lib/systemd/system/snarkd.service"), roman(", "), bold("snarkd.socket")], "the packaged units.");
    p.section("SEE ALSO").0.text([roman("snarkctl(1), snarkd.toml(5), systemd.service(5), sd_notify(3), journalctl(1)")]);
    out.push_str(&p.finish());
    out
}

fn snarkctl_page() -> String {
    let mut out = title("snarkctl", "1", "User Commands");
    out.push_str(&name_section("snarkctl", "client and tools for the snarkd proving daemon"));
    let (synopsis, options) = clap_sections(SnarkctlCli::command());
    out.push_str(&synopsis);
    let mut p = Page::new();
    p.section("DESCRIPTION")
        .para("snarkctl talks JSON-RPC to snarkd over its Unix socket: it submits and awaits proofs, shows status and metrics, reloads the configuration, and loads or drops parameters. Every command prints a human summary, or the raw JSON result with --json, and exits non-zero on any error. The caller needs access to the socket: root, the snarkd group, or access.allow_uids (see snarkd(8)).")
        .para("The packaged snarkd.service runs snarkctl reload as its ExecReload=, so systemctl reload snarkd fails with the reason when the new configuration is rejected.");
    out.push_str(&p.finish());
    out.push_str(&options);
    out.push_str(&commands_section(&SnarkctlCli::command()));
    let mut p = Page::new();
    exit_status_section(&mut p, false);
    p.para("Errors from the daemon are printed as name (code): message; the codes are listed in snarkd(8).");
    p.section("ENVIRONMENT").item(vec![bold("SNARKD_SOCKET")], "the daemon socket, as --socket.");
    p.section("EXAMPLES").example(&[
        "snarkctl status",
        "snarkctl reload",
        "snarkctl prove --miner-id 1000 --sector-number 7 c1.json -o proof.bin",
        "snarkctl submit --request-id sector-7 request.json",
        "snarkctl await <job id> --timeout-ms 600000 -o proof.bin",
        "snarkctl preload porep_c2:32GiB",
    ]);
    p.section("SEE ALSO").0.text([roman("snarkd(8), snarkd.toml(5)")]);
    out.push_str(&p.finish());
    out
}

fn config_page() -> String {
    let values = config_doc::default_values();
    let mut out = title("snarkd.toml", "5", "File Formats");
    out.push_str(&name_section("snarkd.toml", "configuration of the snarkd proving daemon"));
    let mut p = Page::new();
    p.section("SYNOPSIS").0.text([bold(DEFAULT_CONFIG_PATH)]);
    p.section("DESCRIPTION")
        .para("A TOML file of the sections below. Every key is optional; a missing key has its built-in default, shown after each key. Unknown sections and keys are errors, so a typo never goes unnoticed.")
        .para("Layers, later wins: built-in defaults, this file, SNARKD_<SECTION>__<KEY> environment variables (e.g. SNARKD_SOCKET__MODE=0600), then the command-line flags of snarkd(8).")
        .para("Sizes are a number of bytes or text such as \"4GiB\", \"512MiB\" or \"1.5GiB\". Durations are a number of seconds or text such as \"250ms\", \"30s\", \"10m\" or \"1h\".")
        .para("snarkd check-config prints the effective configuration and exits 78 when it is rejected. systemctl reload snarkd applies a changed file to the running daemon; keys marked as needing a restart are reported and keep their running value until systemctl restart snarkd.");
    for section in SECTIONS {
        p.section(&format!("[{}]", section.name)).para(section.doc);
        for key in config_doc::keys_of(section.name) {
            let mut text = key.doc.to_string();
            if key.default_text(&values).is_none() {
                text.push_str(" Unset by default; example shown.");
            }
            if key.needs_restart() {
                text.push_str(" Needs a restart.");
            }
            text.push_str(&format!(" Environment: {}.", key.env()));
            p.item(vec![bold(key.assignment(&values))], &text);
        }
    }
    p.section("SIZING");
    for (class, advice) in SIZING {
        p.subsection(class).para(advice);
    }
    p.section("EXAMPLE").example(&[
        "[access]",
        "allow_uids = [0, 1001]",
        "",
        "[params]",
        "preload = [\"porep_c2:32GiB\"]",
        "",
        "[queue]",
        "porep_c2 = 16",
        "",
        "[log]",
        "level = \"info\"",
    ]);
    p.section("FILES").item(vec![bold(DEFAULT_CONFIG_PATH)], "the file; the package installs it with every key commented out at its default.");
    p.section("SEE ALSO").0.text([roman("snarkd(8), snarkctl(1)")]);
    out.push_str(&p.finish());
    out
}
