// One Montgomery-form prime field template over 32-bit limbs; curves only add constants.
//
// Elements are stored exactly as blst stores them (little-endian limbs, Montgomery form with
// R = 2^(32*N)), so buffers copied from blstrs are used as they are. Every operation returns a
// fully reduced value (< P): the moduli used here leave at least one spare top bit, so sums never
// overflow N limbs.
#pragma once
#include <cstdint>

template <class C>
struct mont_t {
    static constexpr int N = C::N;
    uint32_t l[N];

    __device__ __forceinline__ static mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = 0;
        return r;
    }
    __device__ __forceinline__ static mont_t one() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = C::one(i);
        return r;
    }
    __device__ __forceinline__ bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= l[i];
        return acc == 0;
    }

    // r = r - P when r >= P.
    __device__ __forceinline__ void final_sub() {
        uint32_t t[N];
        uint64_t borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t d = (uint64_t)l[i] - C::p(i) - borrow;
            t[i] = (uint32_t)d;
            borrow = (d >> 32) & 1;
        }
        if (!borrow) {
#pragma unroll
            for (int i = 0; i < N; i++) l[i] = t[i];
        }
    }

    __device__ __forceinline__ friend mont_t operator+(const mont_t& a, const mont_t& b) {
        mont_t r;
        uint64_t c = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            c += (uint64_t)a.l[i] + b.l[i];
            r.l[i] = (uint32_t)c;
            c >>= 32;
        }
        r.final_sub();
        return r;
    }
    __device__ __forceinline__ friend mont_t operator-(const mont_t& a, const mont_t& b) {
        mont_t r;
        uint64_t borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t d = (uint64_t)a.l[i] - b.l[i] - borrow;
            r.l[i] = (uint32_t)d;
            borrow = (d >> 32) & 1;
        }
        if (borrow) {
            uint64_t c = 0;
#pragma unroll
            for (int i = 0; i < N; i++) {
                c += (uint64_t)r.l[i] + C::p(i);
                r.l[i] = (uint32_t)c;
                c >>= 32;
            }
        }
        return r;
    }
    __device__ __forceinline__ mont_t neg() const {
        if (is_zero()) return *this;
        mont_t r;
        uint64_t borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t d = (uint64_t)C::p(i) - l[i] - borrow;
            r.l[i] = (uint32_t)d;
            borrow = (d >> 32) & 1;
        }
        return r;
    }
    __device__ __forceinline__ mont_t dbl() const { return *this + *this; }

    // CIOS Montgomery multiplication: a * b / R mod P, as PTX carry chains (mad.lo/madc.hi):
    // about 4·N² multiply-adds, against ~2× that for the same loop on 64-bit C products.
    // The chains are runs of volatile asm statements (as in sppark): nvcc keeps them in order and
    // places nothing that writes the carry flag between them; the self-test checks every field.
    static __device__ __forceinline__ mont_t mul_body(const mont_t& a, const mont_t& b) {
        uint32_t t[N + 2];
#pragma unroll
        for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b.l[i];
            // t += lo(a·bi) (aligned), then t += hi(a·bi) (shifted one word)
            mad_lo_chain(t, a.l, bi);
            mad_hi_chain(t, a.l, bi);
            const uint32_t m = t[0] * C::M0;
            uint32_t p[N];
#pragma unroll
            for (int j = 0; j < N; j++) p[j] = C::p(j);
            mad_lo_chain(t, p, m);
            mad_hi_chain(t, p, m);
            // t[0] is now 0: divide by 2^32
#pragma unroll
            for (int j = 0; j < N + 1; j++) t[j] = t[j + 1];
            t[N + 1] = 0;
        }
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = t[i];
        r.final_sub();
        return r;
    }

    // t[0..N+1] += lo(x[j]·y) at word j, carries into t[N], t[N+1].
    static __device__ __forceinline__ void mad_lo_chain(uint32_t (&t)[N + 2], const uint32_t (&x)[N], uint32_t y) {
        asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(x[0]), "r"(y));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(x[j]), "r"(y));
        asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
    }
    // t[1..N+1] += hi(x[j]·y) at word j + 1.
    static __device__ __forceinline__ void mad_hi_chain(uint32_t (&t)[N + 2], const uint32_t (&x)[N], uint32_t y) {
        asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(x[0]), "r"(y));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(x[j]), "r"(y));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
    }

    // The out-of-line copy: fields with C::INLINE_MUL false (Fp) call it, which keeps nvcc's time
    // on the curve kernels to about a minute (arguments and result travel in registers).
    static __device__ __noinline__ mont_t mul(const mont_t a, const mont_t b) { return mul_body(a, b); }
    __device__ __forceinline__ friend mont_t operator*(const mont_t& a, const mont_t& b) {
        if constexpr (C::INLINE_MUL)
            return mul_body(a, b);
        else
            return mul(a, b);
    }
    __device__ __forceinline__ mont_t sqr() const { return *this * *this; }

    // Montgomery form -> canonical integer (multiply by 1 / R).
    __device__ __forceinline__ mont_t from_mont() const {
        mont_t one_raw;
#pragma unroll
        for (int i = 0; i < N; i++) one_raw.l[i] = i == 0 ? 1 : 0;
        return mul_body(*this, one_raw);
    }
};
