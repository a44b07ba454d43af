//! The backend-independent parts of a Groth16 proof: checking a witness against the parameters,
//! the quotient polynomial h, and assembling A, B, C from the MSM results. Every backend (CPU here,
//! CUDA in `crate::gpu`) computes the five MSMs its own way and then calls [`assemble`], so proofs
//! agree bit for bit whatever the device.

use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve};
use rayon::prelude::*;

use super::ntt::{bit_reverse, distribute_powers, Direction, Domain};
use super::{BackendError, Proof, VerifyingKey, Witness};
use crate::srs::Srs;

/// Checks that `w` was synthesized from the circuit `srs` was generated for, so that no MSM pairs a
/// scalar with the wrong base (that would yield a proof that does not verify, not an error).
pub fn check_shape(w: &Witness, srs: &Srs) -> Result<(), BackendError> {
    let shape = |what: &str, got: usize, want: usize| {
        if got == want {
            Ok(())
        } else {
            Err(BackendError::Shape(format!(
                "{what}: witness has {got}, parameters {} expect {want}; check that the parameter file matches the proof type",
                srs.id
            )))
        }
    };
    let n = w.evaluations();
    if w.record.is_none() {
        shape("b evaluations", w.b.len(), n)?;
    }
    let m = 1usize << Domain::log_size_for(n)?;
    shape("h query points (domain size − 1)", m - 1, srs.h.len())?;
    shape("public inputs (with ONE)", w.input.len(), srs.vk.ic.len())?;
    shape("aux variables", w.aux.len(), srs.l.len())?;
    shape("A aux density bits", w.a_aux_density.len(), w.aux.len())?;
    shape("B input density bits", w.b_input_density.len(), w.input.len())?;
    shape("B aux density bits", w.b_aux_density.len(), w.aux.len())?;
    shape(
        "A query points",
        w.input.len() + w.a_aux_density.count_ones(),
        srs.a.len(),
    )?;
    let b = w.b_input_density.count_ones() + w.b_aux_density.count_ones();
    shape("B G1 query points", b, srs.b_g1.len())?;
    shape("B G2 query points", b, srs.b_g2.len())?;
    Ok(())
}

/// The coefficients of h = (A·B − C)/Z, as bellperson computes them: pad the evaluations to the
/// domain, interpolate, evaluate on the coset g·H (g = 7), combine, divide by Z(g) = g^m − 1,
/// interpolate back from the coset and keep m − 1 coefficients.
///
/// Orders alternate instead of being restored after every transform: the evaluations are
/// bit-reversed once, the inverse transform (`dit`) leaves natural-order coefficients for the coset
/// shift, the forward transform (`dif`) leaves coset evaluations in bit-reversed order, which the
/// pointwise step does not care about, and the last `dit` leaves h in natural order again.
pub fn compute_h(mut a: Vec<Fr>, mut b: Vec<Fr>, mut c: Vec<Fr>) -> Result<Vec<Fr>, BackendError> {
    let domain = Domain::for_len(a.len())?;
    let m = domain.size();
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    let n_inv = domain.size_inv();
    [&mut a, &mut b, &mut c].into_par_iter().for_each(|p| {
        p.resize(m, Fr::ZERO);
        bit_reverse(p);
        domain.dit(p, Direction::Inverse);
        distribute_powers(p, g, n_inv);
        domain.dif(p, Direction::Forward);
    });
    let z_inv = domain.z_at_generator().invert().unwrap();
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .with_min_len(1 << 10)
        .for_each(|((a, b), c)| {
            *a = (*a * b - c) * z_inv;
        });
    drop((b, c));
    domain.dit(&mut a, Direction::Inverse);
    distribute_powers(&mut a, g.invert().unwrap(), n_inv);
    a.truncate(m - 1);
    Ok(a)
}

/// The five MSM results a backend hands to [`assemble`].
#[derive(Debug, Clone, Copy)]
pub struct MsmSums {
    /// Σ h_i · H_i
    pub h: G1Projective,
    /// Σ aux_i · L_i
    pub l: G1Projective,
    /// Σ of the A query over inputs and present aux variables
    pub a: G1Projective,
    /// Σ of the B query in G1
    pub b_g1: G1Projective,
    /// Σ of the B query in G2
    pub b_g2: G2Projective,
}

/// Builds the proof from the MSM sums and the blinding factors r, s, in bellperson's order of
/// operations:
/// A = α + ΣA + r·δ₁, B = β₂ + ΣB₂ + s·δ₂,
/// C = s·ΣA + r·ΣB₁ + r·s·δ₁ + s·α + r·β₁ + ΣH + ΣL
/// (the same point as s·A + r·B₁ − r·s·δ₁ + ΣH + ΣL).
pub fn assemble(vk: &VerifyingKey<Bls12>, sums: &MsmSums, r: Fr, s: Fr) -> Result<Proof<Bls12>, BackendError> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        // A δ at infinity would let anyone forge proofs (a subversion-CRS attack).
        return Err(BackendError::Shape(
            "verifying key has δ at infinity; the parameter file is not usable".into(),
        ));
    }
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + sums.a;
    let g_b = vk.delta_g2 * s + vk.beta_g2 + sums.b_g2;
    let g_c = sums.a * s + sums.b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + sums.h + sums.l;
    Ok(Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// h computed with the natural-order transforms only, step by step as bellperson does it.
    fn reference_h(mut a: Vec<Fr>, mut b: Vec<Fr>, mut c: Vec<Fr>) -> Vec<Fr> {
        let d = Domain::for_len(a.len()).unwrap();
        for p in [&mut a, &mut b, &mut c] {
            p.resize(d.size(), Fr::ZERO);
            d.ifft(p);
            d.coset_fft(p);
        }
        let z_inv = d.z_at_generator().invert().unwrap();
        for i in 0..d.size() {
            a[i] = (a[i] * b[i] - c[i]) * z_inv;
        }
        d.icoset_fft(&mut a);
        a.truncate(d.size() - 1);
        a
    }

    #[test]
    fn h_matches_step_by_step_reference() {
        let mut rng = StdRng::seed_from_u64(3);
        for n in [1usize, 3, 64, 5000] {
            let v = |rng: &mut StdRng| (0..n).map(|_| Fr::random(&mut *rng)).collect::<Vec<_>>();
            let (a, b, c) = (v(&mut rng), v(&mut rng), v(&mut rng));
            assert_eq!(
                compute_h(a.clone(), b.clone(), c.clone()).unwrap(),
                reference_h(a, b, c),
                "n = {n}"
            );
        }
    }
}
