// Short-Weierstrass (a = 0) points in extended Jacobian "XYZZ" coordinates over any field type.
//
// x = X/ZZ, y = Y/ZZZ with ZZ^3 = ZZZ^2. Chosen (as in sppark) because a mixed addition costs
// 8M+2S and needs no inversion; ZZ = 0 encodes infinity. Affine inputs use blst's layout, where
// infinity is all-zero x and y. Formulas: hyperelliptic.org EFD, add-2008-s, madd-2008-s,
// dbl-2008-s-1, mdbl-2008-s-1; the P = Q and P = -Q cases are handled explicitly.
#pragma once
#include <cstdint>
#include "../ff/bls12_381.cuh"

template <class F>
struct alignas(16) affine_t {
    F x, y;
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
};
static_assert(sizeof(affine_t<fp_t>) == 96 && sizeof(affine_t<fp2_t>) == 192, "blst layout");

// One base from a resident table, in 16-byte read-only loads (bases are gathered at random, so
// fewer, wider requests matter).
template <class F>
__device__ __forceinline__ affine_t<F> load_affine(const affine_t<F>* p) {
    affine_t<F> r;
    const uint4* q = reinterpret_cast<const uint4*>(p);
    uint4* d = reinterpret_cast<uint4*>(&r);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(affine_t<F>) / 16); i++) d[i] = __ldg(q + i);
    return r;
}

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;

    __device__ __forceinline__ static xyzz_t inf() { return {F::zero(), F::zero(), F::zero(), F::zero()}; }
    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }

    __device__ __forceinline__ static xyzz_t from_affine(const affine_t<F>& p) {
        if (p.is_inf()) return inf();
        return {p.x, p.y, F::one(), F::one()};
    }

    __device__ __forceinline__ xyzz_t dbl() const {
        if (is_inf()) return *this;
        F U = Y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = X * V;
        F XX = X.sqr();
        F M = XX.dbl() + XX;
        xyzz_t r;
        r.X = M.sqr() - S.dbl();
        r.Y = M * (S - r.X) - W * Y;
        r.ZZ = V * ZZ;
        r.ZZZ = W * ZZZ;
        return r;
    }

    static __device__ __forceinline__ xyzz_t dbl_affine(const affine_t<F>& p) {
        F U = p.y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = p.x * V;
        F XX = p.x.sqr();
        F M = XX.dbl() + XX;
        xyzz_t r;
        r.X = M.sqr() - S.dbl();
        r.Y = M * (S - r.X) - W * p.y;
        r.ZZ = V;
        r.ZZZ = W;
        return r;
    }

    // this += affine point
    __device__ __forceinline__ void add_affine(const affine_t<F>& p) {
        if (p.is_inf()) return;
        if (is_inf()) {
            *this = from_affine(p);
            return;
        }
        F U2 = p.x * ZZ;
        F S2 = p.y * ZZZ;
        F P = U2 - X;
        F R = S2 - Y;
        if (P.is_zero()) {
            *this = R.is_zero() ? dbl_affine(p) : inf();
            return;
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = X * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        Y = R * (Q - X3) - Y * PPP;
        X = X3;
        ZZ = ZZ * PP;
        ZZZ = ZZZ * PPP;
    }

    // this += q
    __device__ __forceinline__ void add(const xyzz_t& q) {
        if (q.is_inf()) return;
        if (is_inf()) {
            *this = q;
            return;
        }
        F U1 = X * q.ZZ;
        F U2 = q.X * ZZ;
        F S1 = Y * q.ZZZ;
        F S2 = q.Y * ZZZ;
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) {
            *this = R.is_zero() ? dbl() : inf();
            return;
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = U1 * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        Y = R * (Q - X3) - S1 * PPP;
        X = X3;
        ZZ = ZZ * q.ZZ * PP;
        ZZZ = ZZZ * q.ZZZ * PPP;
    }

    // this * k for a small non-negative k (double-and-add, most significant bit first).
    __device__ __forceinline__ xyzz_t mul_small(uint32_t k) const {
        xyzz_t acc = inf();
        for (int b = 31; b >= 0; b--) {
            acc = acc.dbl();
            if ((k >> b) & 1) acc.add(*this);
        }
        return acc;
    }
};
