//! Radix-2 number-theoretic transforms over Fr, the polynomial arithmetic behind h.
//!
//! The kernels come in the two shapes a pipeline can chain without reordering: `dif` takes natural
//! order and leaves bit-reversed order, `dit` takes bit-reversed order and leaves natural order.
//! The prover alternates them so that a proof pays for one bit-reversal per input polynomial instead
//! of one per transform. The natural-order wrappers (`fft`, `ifft`, `coset_fft`, `icoset_fft`)
//! give the same field elements as bellperson's `EvaluationDomain`.

use ff::{Field, PrimeField};
use rayon::prelude::*;

use blstrs::Scalar as Fr;

use super::BackendError;

/// Stages whose butterflies span at most 2^CHUNK_LOG elements run chunk by chunk: 64 KiB of data
/// plus the twiddles it touches stay in L2 while all those stages pass over it.
const CHUNK_LOG: u32 = 11;
/// Work below this many elements is not split further across threads.
const PAR_MIN: usize = 1 << 10;

/// Which root of unity a transform uses: ω (forward) or ω⁻¹ (inverse, unscaled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Inverse,
}

/// A multiplicative subgroup of size 2^k with its twiddle table.
pub struct Domain {
    log_n: u32,
    /// ω^i for i < n/2. The inverse transform reads it as ω^-i = -ω^(n/2-i), so one table serves
    /// both directions (for 2^27 points a second table would cost another 2 GiB).
    twiddles: Vec<Fr>,
    n_inv: Fr,
}

impl Domain {
    /// The smallest domain holding `len` evaluations, as bellperson's `EvaluationDomain::from_coeffs`
    /// picks it.
    pub fn for_len(len: usize) -> Result<Domain, BackendError> {
        Ok(Domain::new(Self::log_size_for(len)?))
    }

    /// log2 of the size `for_len` would pick, without building the twiddle table.
    pub fn log_size_for(len: usize) -> Result<u32, BackendError> {
        let log_n = len.max(1).next_power_of_two().trailing_zeros();
        if log_n >= Fr::S {
            return Err(BackendError::Shape(format!(
                "{len} constraints exceed the largest radix-2 domain of Fr (2^{})",
                Fr::S - 1
            )));
        }
        Ok(log_n)
    }

    /// The domain of size 2^log_n; log_n must be below Fr::S.
    pub fn new(log_n: u32) -> Domain {
        assert!(log_n < Fr::S, "radix-2 domain 2^{log_n} does not exist in Fr");
        let half = (1usize << log_n) / 2;
        let mut twiddles = vec![Fr::ZERO; half];
        powers_into(&mut twiddles, omega(log_n), Fr::ONE);
        let n_inv = Fr::from(1u64 << log_n).invert().unwrap();
        Domain { log_n, twiddles, n_inv }
    }

    pub fn size(&self) -> usize {
        1 << self.log_n
    }

    pub fn log_size(&self) -> u32 {
        self.log_n
    }

    /// 1/n, the scale an inverse transform owes.
    pub fn size_inv(&self) -> Fr {
        self.n_inv
    }

    /// Evaluations at ω^i from coefficients, both in natural order.
    pub fn fft(&self, a: &mut [Fr]) {
        self.dif(a, Direction::Forward);
        bit_reverse(a);
    }

    /// Coefficients from evaluations at ω^i, both in natural order.
    pub fn ifft(&self, a: &mut [Fr]) {
        self.dif(a, Direction::Inverse);
        bit_reverse(a);
        scale(a, self.n_inv);
    }

    /// Evaluations at g·ω^i (g = 7, Fr's multiplicative generator) from coefficients.
    pub fn coset_fft(&self, a: &mut [Fr]) {
        distribute_powers(a, Fr::MULTIPLICATIVE_GENERATOR, Fr::ONE);
        self.fft(a);
    }

    /// Coefficients from evaluations at g·ω^i.
    pub fn icoset_fft(&self, a: &mut [Fr]) {
        self.dif(a, Direction::Inverse);
        bit_reverse(a);
        distribute_powers(a, Fr::MULTIPLICATIVE_GENERATOR.invert().unwrap(), self.n_inv);
    }

    /// Z(g) = g^n − 1, the vanishing polynomial at the coset shift.
    pub fn z_at_generator(&self) -> Fr {
        Fr::MULTIPLICATIVE_GENERATOR.pow_vartime([self.size() as u64]) - Fr::ONE
    }

    /// Gentleman–Sande transform: natural order in, bit-reversed order out, no 1/n scaling.
    pub fn dif(&self, a: &mut [Fr], dir: Direction) {
        assert_eq!(a.len(), self.size(), "transform length must equal the domain size");
        let tw = Twiddles {
            table: &self.twiddles,
            inverse: dir == Direction::Inverse,
        };
        let chunk_log = CHUNK_LOG.min(self.log_n);
        for log_len in (chunk_log + 1..=self.log_n).rev() {
            self.wide_stage(a, log_len, &tw, dif_butterflies);
        }
        a.par_chunks_mut(1 << chunk_log).for_each(|chunk| {
            for log_len in (1..=chunk_log).rev() {
                self.narrow_stage(chunk, log_len, &tw, dif_butterflies);
            }
        });
    }

    /// Cooley–Tukey transform: bit-reversed order in, natural order out, no 1/n scaling.
    pub fn dit(&self, a: &mut [Fr], dir: Direction) {
        assert_eq!(a.len(), self.size(), "transform length must equal the domain size");
        let tw = Twiddles {
            table: &self.twiddles,
            inverse: dir == Direction::Inverse,
        };
        let chunk_log = CHUNK_LOG.min(self.log_n);
        a.par_chunks_mut(1 << chunk_log).for_each(|chunk| {
            for log_len in 1..=chunk_log {
                self.narrow_stage(chunk, log_len, &tw, dit_butterflies);
            }
        });
        for log_len in chunk_log + 1..=self.log_n {
            self.wide_stage(a, log_len, &tw, dit_butterflies);
        }
    }

    /// One stage over blocks larger than a chunk: the butterflies inside each block are split
    /// across threads, since there are too few blocks to keep every thread busy.
    fn wide_stage(&self, a: &mut [Fr], log_len: u32, tw: &Twiddles, kernel: Kernel) {
        let half = 1usize << (log_len - 1);
        let shift = self.log_n - log_len;
        a.par_chunks_mut(2 * half).for_each(|block| {
            let (lo, hi) = block.split_at_mut(half);
            lo.par_chunks_mut(PAR_MIN)
                .zip(hi.par_chunks_mut(PAR_MIN))
                .enumerate()
                .for_each(|(i, (lo, hi))| kernel(lo, hi, i * PAR_MIN, shift, tw));
        });
    }

    /// One stage over blocks that fit in the chunk being processed by this thread.
    fn narrow_stage(&self, chunk: &mut [Fr], log_len: u32, tw: &Twiddles, kernel: Kernel) {
        let half = 1usize << (log_len - 1);
        let shift = self.log_n - log_len;
        for block in chunk.chunks_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            kernel(lo, hi, 0, shift, tw);
        }
    }
}

/// Butterflies of one stage over `lo`/`hi` halves; `j0` is the offset of `lo[0]` within its half
/// and the twiddle of butterfly j is ω^(j << shift).
type Kernel = fn(&mut [Fr], &mut [Fr], usize, u32, &Twiddles);

fn dif_butterflies(lo: &mut [Fr], hi: &mut [Fr], j0: usize, shift: u32, tw: &Twiddles) {
    for (j, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *u - *v;
        *u += *v;
        *v = t * tw.get((j0 + j) << shift);
    }
}

fn dit_butterflies(lo: &mut [Fr], hi: &mut [Fr], j0: usize, shift: u32, tw: &Twiddles) {
    for (j, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *v * tw.get((j0 + j) << shift);
        *v = *u - t;
        *u += t;
    }
}

struct Twiddles<'a> {
    table: &'a [Fr],
    inverse: bool,
}

impl Twiddles<'_> {
    #[inline(always)]
    fn get(&self, k: usize) -> Fr {
        if !self.inverse {
            self.table[k]
        } else if k == 0 {
            Fr::ONE
        } else {
            // ω^-k = ω^(n-k) = ω^(n/2) · ω^(n/2-k) = -ω^(n/2-k)
            -self.table[self.table.len() - k]
        }
    }
}

/// Writes `start · g^i` into `out[i]`, in parallel.
/// ω, the primitive 2^log_n-th root of unity every NTT here and on the device uses: Fr's 2^S-th
/// root squared down, as bellperson's `EvaluationDomain` derives it.
pub fn omega(log_n: u32) -> Fr {
    (log_n..Fr::S).fold(Fr::ROOT_OF_UNITY, |w, _| w.square())
}

fn powers_into(out: &mut [Fr], g: Fr, start: Fr) {
    out.par_chunks_mut(PAR_MIN).enumerate().for_each(|(c, chunk)| {
        let mut x = start * g.pow_vartime([(c * PAR_MIN) as u64]);
        for v in chunk {
            *v = x;
            x *= g;
        }
    });
}

/// `a[i] *= start · g^i`: the coset shift (with the 1/n of an inverse transform folded in).
pub fn distribute_powers(a: &mut [Fr], g: Fr, start: Fr) {
    a.par_chunks_mut(PAR_MIN).enumerate().for_each(|(c, chunk)| {
        let mut x = start * g.pow_vartime([(c * PAR_MIN) as u64]);
        for v in chunk {
            *v *= x;
            x *= g;
        }
    });
}

/// `a[i] *= k` for all i.
pub fn scale(a: &mut [Fr], k: Fr) {
    a.par_chunks_mut(PAR_MIN)
        .for_each(|chunk| chunk.iter_mut().for_each(|v| *v *= k));
}

/// Permutes `a` (length a power of two) into bit-reversed index order, in place and in parallel.
pub fn bit_reverse(a: &mut [Fr]) {
    let n = a.len();
    assert!(n.is_power_of_two(), "bit reversal needs a power-of-two length, got {n}");
    if n <= 2 {
        return;
    }
    let bits = n.trailing_zeros();
    let base = SharedSlice(a.as_mut_ptr());
    (0..n).into_par_iter().with_min_len(PAR_MIN).for_each(|i| {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if i < j {
            // SAFETY: i ↦ rev(i) is an involution, so every swapped pair {i, j} is visited by
            // exactly one index (the smaller), and distinct pairs are disjoint; both indices are < n.
            unsafe { std::ptr::swap(base.at(i), base.at(j)) };
        }
    });
}

/// A raw pointer that may cross threads, for the disjoint swaps of `bit_reverse`.
#[derive(Clone, Copy)]
struct SharedSlice(*mut Fr);
unsafe impl Send for SharedSlice {}
unsafe impl Sync for SharedSlice {}

impl SharedSlice {
    /// # Safety
    /// `i` must be in bounds of the slice this pointer came from.
    unsafe fn at(self, i: usize) -> *mut Fr {
        unsafe { self.0.add(i) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn random(n: usize, seed: u64) -> Vec<Fr> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| Fr::random(&mut rng)).collect()
    }

    /// O(n²) evaluation of the polynomial `coeffs` at `shift · ω^i`.
    fn naive_dft(coeffs: &[Fr], omega: Fr, shift: Fr) -> Vec<Fr> {
        (0..coeffs.len())
            .map(|i| {
                let x = shift * omega.pow_vartime([i as u64]);
                coeffs.iter().rev().fold(Fr::ZERO, |acc, c| acc * x + c)
            })
            .collect()
    }

    #[test]
    fn fft_matches_naive_dft() {
        for log_n in [0, 1, 3, 10] {
            let d = Domain::new(log_n);
            let coeffs = random(d.size(), log_n as u64);
            let mut a = coeffs.clone();
            d.fft(&mut a);
            assert_eq!(a, naive_dft(&coeffs, omega(log_n), Fr::ONE), "fft, 2^{log_n}");

            let mut b = coeffs.clone();
            d.coset_fft(&mut b);
            assert_eq!(
                b,
                naive_dft(&coeffs, omega(log_n), Fr::MULTIPLICATIVE_GENERATOR),
                "coset fft, 2^{log_n}"
            );

            d.ifft(&mut a);
            assert_eq!(a, coeffs, "ifft ∘ fft, 2^{log_n}");
            d.icoset_fft(&mut b);
            assert_eq!(b, coeffs, "icoset_fft ∘ coset_fft, 2^{log_n}");
        }
    }

    #[test]
    fn dif_and_dit_chain_without_reordering() {
        // Large enough that both the wide and the narrow stages run.
        let log_n = CHUNK_LOG + 3;
        let d = Domain::new(log_n);
        let coeffs = random(d.size(), 7);
        let mut expected = coeffs.clone();
        d.fft(&mut expected);

        let mut a = coeffs.clone();
        bit_reverse(&mut a);
        d.dit(&mut a, Direction::Forward);
        assert_eq!(a, expected, "dit after bit reversal is the fft");

        d.dif(&mut a, Direction::Inverse);
        d.dit(&mut a, Direction::Forward);
        scale(&mut a, d.size_inv());
        assert_eq!(a, expected, "dit(dif⁻¹(x))/n = x");
    }

    #[test]
    fn matches_bellperson_evaluation_domain() {
        use bellperson::domain::EvaluationDomain;
        use ec_gpu_gen::threadpool::Worker;

        let worker = Worker::new();
        for len in [1usize, 2, 5, 8, 1000, 1 << 13] {
            let coeffs = random(len, len as u64);
            let d = Domain::for_len(len).unwrap();
            let mut ours = coeffs.clone();
            ours.resize(d.size(), Fr::ZERO);

            let mut theirs = EvaluationDomain::from_coeffs(coeffs).unwrap();
            assert_eq!(theirs.as_ref().len(), d.size(), "domain size for {len}");

            theirs.ifft(&worker, &mut None).unwrap();
            d.ifft(&mut ours);
            assert_eq!(ours, theirs.as_ref(), "ifft, len {len}");

            theirs.coset_fft(&worker, &mut None).unwrap();
            d.coset_fft(&mut ours);
            assert_eq!(ours, theirs.as_ref(), "coset fft, len {len}");

            theirs.icoset_fft(&worker, &mut None).unwrap();
            d.icoset_fft(&mut ours);
            assert_eq!(ours, theirs.as_ref(), "icoset fft, len {len}");

            theirs.fft(&worker, &mut None).unwrap();
            d.fft(&mut ours);
            assert_eq!(ours, theirs.as_ref(), "fft, len {len}");
        }
    }
}
