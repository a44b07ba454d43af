//! cargo fuzz entry point for `snarkd::fuzz::snap_vanilla` (see src/fuzz.rs for what it feeds).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    snarkd::fuzz::catch_only_escaping_panics();
    snarkd::fuzz::snap_vanilla(data);
});
