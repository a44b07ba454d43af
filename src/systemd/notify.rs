//! sd_notify messages, sent through the sd-notify crate to `$NOTIFY_SOCKET` (a no-op without it).
//!
//! Every message here is one datagram. `RELOADING=1` must travel with `MONOTONIC_USEC` in the same
//! datagram for `Type=notify-reload`, which is why reloading is its own function.

use std::time::Duration;

use sd_notify::NotifyState;

fn send(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!("sd_notify failed: {e}");
    }
}

/// Startup (or a reload) is complete and the socket accepts connections.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// A reload starts now.
pub fn reloading() {
    match NotifyState::monotonic_usec_now() {
        Ok(now) => send(&[NotifyState::Reloading, now, NotifyState::Status("reloading configuration")]),
        Err(e) => {
            tracing::warn!("cannot read CLOCK_MONOTONIC for RELOADING=1: {e}");
            send(&[NotifyState::Reloading]);
        }
    }
}

pub fn stopping(status: &str) {
    send(&[NotifyState::Stopping, NotifyState::Status(status)]);
}

pub fn status(line: &str) {
    send(&[NotifyState::Status(line)]);
}

pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

/// Asks for `extra` more time before systemd's stop timeout fires.
pub fn extend_timeout(extra: Duration, status: &str) {
    let usec = extra.as_micros().min(u32::MAX as u128) as u32;
    send(&[NotifyState::ExtendTimeoutUsec(usec), NotifyState::Status(status)]);
}

/// The watchdog interval systemd asked for, if any; pings go out at half of it.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled()
}
