//! Logging: native journal entries when stderr is the journal (`JOURNAL_STREAM`) or when the
//! config says so, otherwise text on stderr.
//!
//! Job events carry `job_id`, `kind`, `stage` and `device` as event fields; with the field prefix
//! turned off they become the journal fields `JOB_ID`, `KIND`, `STAGE`, `DEVICE`, so that
//! `journalctl -u snarkd JOB_ID=…` works. Priorities are shifted so that `journalctl -p info`
//! shows info and above but not debug.

use tracing_journald::{Priority, PriorityMappings};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

use crate::config::LogTarget;

/// Lets a reload change the log filter without restarting.
pub struct LogHandle {
    filter: reload::Handle<EnvFilter, Registry>,
    pub target: &'static str,
}

impl LogHandle {
    pub fn set_level(&self, level: &str) -> Result<(), String> {
        let filter = EnvFilter::try_new(level).map_err(|e| e.to_string())?;
        self.filter.reload(filter).map_err(|e| e.to_string())
    }
}

/// Whether stderr is connected to the journal, per `JOURNAL_STREAM` (device:inode of stderr).
pub fn stderr_is_journal() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(stream) = std::env::var_os("JOURNAL_STREAM") else { return false };
    let Some((dev, ino)) = stream.to_str().and_then(|s| s.split_once(':')) else { return false };
    let Ok(meta) = std::fs::metadata("/proc/self/fd/2") else { return false };
    dev.parse() == Ok(meta.dev()) && ino.parse() == Ok(meta.ino())
}

/// The journald priority for each tracing level: INFO is journald's "info", not "notice".
pub fn priority_mappings() -> PriorityMappings {
    PriorityMappings {
        error: Priority::Error,
        warn: Priority::Warning,
        info: Priority::Informational,
        debug: Priority::Debug,
        trace: Priority::Debug,
    }
}

/// Installs the global subscriber. Falls back to text on stderr, saying so, when the journal is
/// asked for but cannot be reached.
pub fn init(target: LogTarget, level: &str) -> LogHandle {
    let filter = EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("info"));
    let (filter, handle) = reload::Layer::new(filter);
    let want_journal = match target {
        LogTarget::Journal => true,
        LogTarget::Text => false,
        LogTarget::Auto => stderr_is_journal(),
    };
    let journal = want_journal.then(|| {
        tracing_journald::layer().map(|l| {
            l.with_field_prefix(None)
                .with_priority_mappings(priority_mappings())
                .with_syslog_identifier("snarkd".into())
        })
    });
    match journal {
        Some(Ok(layer)) => {
            tracing_subscriber::registry().with(filter).with(layer).init();
            LogHandle { filter: handle, target: "journal" }
        }
        other => {
            let text = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_target(false);
            tracing_subscriber::registry().with(filter).with(text).init();
            if let Some(Err(e)) = other {
                tracing::warn!("journal requested but unreachable ({e}); logging text to stderr");
            }
            LogHandle { filter: handle, target: "stderr" }
        }
    }
}
