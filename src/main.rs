//! The `snarkd` daemon binary: parse the command line, run, map the outcome to an exit code.
fn main() {}
