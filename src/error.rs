//! The failure kinds a caller can see, each with a stable numeric JSON-RPC error code.
//!
//! Go clients (go-jsonrpc) map these codes to typed errors, so a code, once shipped, never changes
//! meaning. The table here is the single source for the README, `man snarkd` and the tests.

use std::fmt;

/// One stable JSON-RPC error code per failure kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadInput,
    Unsupported,
    ParamsMissing,
    QueueFull,
    Draining,
    NotFound,
    Cancelled,
    VerificationFailed,
    PermissionDenied,
    Internal,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 10] = [
        ErrorCode::BadInput,
        ErrorCode::Unsupported,
        ErrorCode::ParamsMissing,
        ErrorCode::QueueFull,
        ErrorCode::Draining,
        ErrorCode::NotFound,
        ErrorCode::Cancelled,
        ErrorCode::VerificationFailed,
        ErrorCode::PermissionDenied,
        ErrorCode::Internal,
    ];

    /// The number on the wire. Application codes live above the JSON-RPC reserved range.
    pub const fn code(self) -> i32 {
        match self {
            ErrorCode::BadInput => 1001,
            ErrorCode::Unsupported => 1002,
            ErrorCode::ParamsMissing => 1003,
            ErrorCode::QueueFull => 1004,
            ErrorCode::Draining => 1005,
            ErrorCode::NotFound => 1006,
            ErrorCode::Cancelled => 1007,
            ErrorCode::VerificationFailed => 1008,
            ErrorCode::PermissionDenied => 1009,
            ErrorCode::Internal => 1010,
        }
    }

    pub fn from_code(code: i32) -> Option<ErrorCode> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }

    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::BadInput => "bad_input",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::ParamsMissing => "params_missing",
            ErrorCode::QueueFull => "queue_full",
            ErrorCode::Draining => "draining",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::VerificationFailed => "verification_failed",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::Internal => "internal",
        }
    }

    pub const fn meaning(self) -> &'static str {
        match self {
            ErrorCode::BadInput => "the request is malformed or a field is invalid; the message names the field",
            ErrorCode::Unsupported => "the proof kind, sector size or feature is not supported by this build",
            ErrorCode::ParamsMissing => "a parameter file is missing or unreadable; the message names the path",
            ErrorCode::QueueFull => "the queue for this proof kind is at its limit; retry later",
            ErrorCode::Draining => "the daemon is shutting down and accepts no new jobs",
            ErrorCode::NotFound => "no job with this id (or its result has expired)",
            ErrorCode::Cancelled => "the job was cancelled, or failed by the drain at shutdown",
            ErrorCode::VerificationFailed => "the computed proof did not verify; no proof is returned",
            ErrorCode::PermissionDenied => "the peer's uid/gid is not on the allow-list",
            ErrorCode::Internal => "an internal failure (backend panic, device error); the job failed alone",
        }
    }
}

/// A failure with its kind and a human message (lowercase, says what failed and what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnarkError {
    pub code: ErrorCode,
    pub message: String,
}

impl SnarkError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SnarkError { code, message: message.into() }
    }
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadInput, message)
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unsupported, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
}

impl fmt::Display for SnarkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.code.name(), self.code.code(), self.message)
    }
}

impl std::error::Error for SnarkError {}

pub type Result<T, E = SnarkError> = std::result::Result<T, E>;
