//! `snarkctl`: the client and tools for snarkd.
fn main() {}
