//! The bounded fuzz run of every test run: each target of `snarkd::tools::fuzz` gets its seeds from a
//! freshly sealed 2 KiB sector, then mutations of them (bit flips, truncations, hostile length
//! fields, splices) for a fixed budget. A panic that escapes a target fails the test and leaves
//! the input under `target/fuzz-crashes/` for `cargo fuzz run <target> <file>`.
//!
//! Coverage-guided runs under libFuzzer and AddressSanitizer live in `fuzz/` (scripts/fuzz).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Mutated inputs per target, and the time any one target may take.
const EXECUTIONS: usize = 50_000;
const BUDGET: Duration = Duration::from_secs(20);

/// Values that break decoders: zero and maximal lengths, bincode's u64 length prefixes, JSON
/// structure characters.
const INTERESTING: &[&[u8]] = &[
    &[0],
    &[0xff],
    &[0xff; 8],
    &(1u64 << 60).to_le_bytes(),
    &(u32::MAX as u64).to_le_bytes(),
    &[0x7f, 0xff, 0xff, 0xff],
    b"{",
    b"}",
    b"[",
    b"\"",
    b"null",
    b"-1",
    b"1e999",
    b"18446744073709551616",
];

fn mutate(rng: &mut StdRng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let at = if v.is_empty() { 0 } else { rng.gen_range(0..v.len()) };
        match rng.gen_range(0..6) {
            0 if !v.is_empty() => v[at] ^= 1 << rng.gen_range(0..8),
            1 if !v.is_empty() => v[at] = rng.gen(),
            2 => v.truncate(at),
            3 => {
                let value = INTERESTING[rng.gen_range(0..INTERESTING.len())];
                let end = (at + value.len()).min(v.len());
                v.splice(at..end, value.iter().copied());
            }
            4 if !other.is_empty() => {
                let from = rng.gen_range(0..other.len());
                let len = rng.gen_range(0..=(other.len() - from).min(64));
                v.splice(at..at, other[from..from + len].iter().copied());
            }
            _ => {
                let len = rng.gen_range(1..16);
                v.splice(at..at, (0..len).map(|_| rng.gen::<u8>()));
            }
        }
    }
    v
}

#[test]
fn every_decoder_survives_seeds_and_mutations() {
    let out = tempfile::tempdir().unwrap();
    let manifest = snarkd::tools::testdata::generate(2048, out.path(), &snarkd::tools::test_params_dir()).expect("seal a 2 KiB sector");
    let seeds = snarkd::tools::fuzz::seeds(&manifest).unwrap();
    let seed: u64 = rand::random();
    eprintln!("mutation seed {seed} (set SNARKD_FUZZ_SEED to replay)");
    let seed = std::env::var("SNARKD_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(seed);
    let mut rng = StdRng::seed_from_u64(seed);
    snarkd::tools::fuzz::catch_only_escaping_panics();
    let crashes = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../fuzz-crashes");
    let mut failures = vec![];
    for target in &snarkd::tools::fuzz::TARGETS {
        let mine: Vec<&[u8]> = seeds.iter().filter(|s| s.0 == target.name).map(|s| s.2.as_slice()).collect();
        assert!(!mine.is_empty(), "no seeds for {}", target.name);
        let started = Instant::now();
        let mut runs = 0;
        while runs < EXECUTIONS + mine.len() && started.elapsed() < BUDGET {
            let input = if runs < mine.len() {
                mine[runs].to_vec()
            } else {
                let s = mine[rng.gen_range(0..mine.len())];
                let o = mine[rng.gen_range(0..mine.len())];
                mutate(&mut rng, s, o)
            };
            if catch_unwind(AssertUnwindSafe(|| (target.run)(&input))).is_err() {
                std::fs::create_dir_all(&crashes).unwrap();
                let path = crashes.join(format!("{}-{runs}", target.name));
                std::fs::write(&path, &input).unwrap();
                failures.push(format!("{} panicked on {}", target.name, path.display()));
            }
            runs += 1;
        }
        eprintln!("{:<13} {runs:>5} inputs in {:.1?}", target.name, started.elapsed());
        if runs < mine.len() + 100 {
            failures.push(format!("{} ran only {runs} inputs within {BUDGET:?}", target.name));
        }
    }
    // The default hook again, so the verdict below is printed.
    let _ = std::panic::take_hook();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
