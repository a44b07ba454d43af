//! cargo fuzz entry point for `snarkd::tools::fuzz::post_vanilla` (see src/tools/fuzz.rs for what it feeds).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    snarkd::tools::fuzz::catch_only_escaping_panics();
    snarkd::tools::fuzz::post_vanilla(data);
});
