//! The kernels' field arithmetic (cuda/ff), built for the host with its PTX carry steps emulated
//! (cuda/ff/carry.cuh), against blstrs on random values and edge cases. This runs everywhere CI
//! does, so a wrong Montgomery multiplication is caught before any GPU sees it; the GPU
//! self-test then checks the same code compiled for the device.

use blstrs::{Fp, Scalar as Fr};
use ff::Field;
use super::host_cpp::{self, words};
use rand::rngs::StdRng;
use rand::SeedableRng;

fn line<const N: usize>(field: &str, a: [u32; N], b: [u32; N]) -> String {
    host_cpp::line(field, &[a.as_slice(), b.as_slice()].concat())
}

#[test]
fn montgomery_multiply_square_add_and_subtract_match_blstrs() {
    let mut rng = StdRng::seed_from_u64(381);
    let mut fp: Vec<Fp> = vec![Fp::ZERO, Fp::ONE, -Fp::ONE, -Fp::ONE - Fp::ONE, Fp::ONE.double()];
    fp.extend((0..400).map(|_| Fp::random(&mut rng)));
    let mut fr: Vec<Fr> = vec![Fr::ZERO, Fr::ONE, -Fr::ONE, -Fr::ONE - Fr::ONE, Fr::ONE.double()];
    fr.extend((0..400).map(|_| Fr::random(&mut rng)));
    let mut input = String::new();
    let mut want: Vec<Vec<u32>> = Vec::new();
    for (i, a) in fp.iter().enumerate() {
        for b in [fp[(i * 7 + 3) % fp.len()], *a, fp[i % 5]] {
            input.push_str(&line::<12>("fp", words(a), words(&b)));
            input.push('\n');
            want.push([words::<Fp, 12>(&(*a * b)), words(&(*a + b)), words(&(*a - b)), words(&a.square())].concat());
        }
    }
    for (i, a) in fr.iter().enumerate() {
        for b in [fr[(i * 7 + 3) % fr.len()], *a, fr[i % 5]] {
            input.push_str(&line::<8>("fr", words(a), words(&b)));
            input.push('\n');
            want.push([words::<Fr, 8>(&(*a * b)), words(&(*a + b)), words(&(*a - b)), words(&a.square())].concat());
        }
    }
    // Fp2 (u² = −1, the lazy-reduction Karatsuba): every pair of edge values, then random pairs
    let fp2: Vec<(Fp, Fp)> =
        fp[..5].iter().flat_map(|&c0| fp[..5].iter().map(move |&c1| (c0, c1))).chain(fp[5..].chunks(2).map(|c| (c[0], c[1]))).collect();
    let w = |x: Fp| words::<Fp, 12>(&x);
    for (i, &(a0, a1)) in fp2.iter().enumerate() {
        for (b0, b1) in [fp2[(i * 7 + 3) % fp2.len()], (a0, a1), fp2[i % 25]] {
            let (a, b) = ([w(a0), w(a1)].concat(), [w(b0), w(b1)].concat());
            input.push_str(&line::<24>("fp2", a.try_into().expect("24 words"), b.try_into().expect("24 words")));
            input.push('\n');
            let sq = [w(a0.square() - a1.square()), w((a0 * a1).double())];
            want.push([w(a0 * b0 - a1 * b1), w(a0 * b1 + a1 * b0), w(a0 + b0), w(a1 + b1), w(a0 - b0), w(a1 - b1)].concat());
            want.last_mut().expect("just pushed").extend(sq.concat());
        }
    }
    let exe = host_cpp::compile("host_field.cpp");
    let got = host_cpp::run(&exe, input);
    let _ = std::fs::remove_file(&exe);
    assert_eq!(got.len(), want.len(), "one output line per input line");
    let bad: Vec<usize> = (0..want.len()).filter(|&i| got[i] != want[i]).collect();
    assert!(bad.is_empty(), "{} of {} differ; first at line {}", bad.len(), want.len(), bad[0]);
}
