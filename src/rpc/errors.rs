//! Conversion of [`SnarkError`] into JSON-RPC error objects. The `data` member repeats the stable
//! error name so that clients that log only `data` still see the kind.

use jsonrpsee::types::ErrorObjectOwned;

use crate::error::{ErrorCode, SnarkError};

pub fn to_rpc(e: SnarkError) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(e.code.code(), e.message, Some(serde_json::json!({ "error": e.code.name() })))
}

pub fn error_body(code: ErrorCode, message: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code.code(), "message": message, "data": { "error": code.name() } }
    })
    .to_string()
}
