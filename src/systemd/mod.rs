//! Integration with the service manager: readiness and reload notifications, the memory the
//! service may use, and native journal logging. Kept apart so the daemon reads as a sequence of
//! lifecycle steps rather than protocol details.

pub mod cgroup;
pub mod journal;
pub mod notify;
