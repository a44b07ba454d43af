//! Conversion of [`SnarkError`] into JSON-RPC error objects. The message starts with the stable
//! error name (`bad_input: randomness: …`), because go-jsonrpc shows only the message of an error
//! whose code it does not know; the `data` member repeats the name for clients that read it there.

use jsonrpsee::types::ErrorObjectOwned;

use crate::error::{ErrorCode, SnarkError};

pub fn to_rpc(e: SnarkError) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(e.code.code(), named(e.code, &e.message), Some(serde_json::json!({ "error": e.code.name() })))
}

pub fn error_body(code: ErrorCode, message: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code.code(), "message": named(code, message), "data": { "error": code.name() } }
    })
    .to_string()
}

/// `message` led by the error's name, as every transport shows it (`bad_input: randomness: …`).
pub fn named(code: ErrorCode, message: &str) -> String {
    format!("{}: {message}", code.name())
}
