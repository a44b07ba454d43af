// One Montgomery-form prime field template over 32-bit limbs; curves only add constants.
//
// Elements are stored exactly as blst stores them (little-endian limbs, Montgomery form with
// R = 2^(32*N)), so buffers copied from blstrs are used as they are. Every operation returns a
// fully reduced value (< P): the moduli used here leave at least one spare top bit, so sums never
// overflow N limbs.
#pragma once
#include <cstdint>
#include "carry.cuh"

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

    // r = r - P when r >= P: subtract, then keep the difference unless it borrowed.
    __device__ __forceinline__ void final_sub() {
        uint32_t t[N], p[N];
#pragma unroll
        for (int i = 0; i < N; i++) t[i] = l[i], p[i] = C::p(i);
        sub_words(t, p);
        const uint32_t keep = borrow_mask();
#pragma unroll
        for (int i = 0; i < N; i++) l[i] = (l[i] & keep) | (t[i] & ~keep);
    }

    // Both operands < P, and P leaves a spare top bit: the sum never carries out of N limbs.
    __device__ __forceinline__ friend mont_t operator+(const mont_t& a, const mont_t& b) {
        mont_t r = add_unreduced(a, b);
        r.final_sub();
        return r;
    }
    // a − b, plus P when that borrowed.
    __device__ __forceinline__ friend mont_t operator-(const mont_t& a_in, const mont_t& b) {
        mont_t r = a_in;
        sub_words(r.l, b.l);
        const uint32_t add = borrow_mask();
        uint32_t p[N];
#pragma unroll
        for (int i = 0; i < N; i++) p[i] = C::p(i) & add;
        add_words(r.l, p);
        return r;
    }
    __device__ __forceinline__ mont_t neg() const { return zero() - *this; }
    __device__ __forceinline__ mont_t dbl() const { return *this + *this; }

    // CIOS Montgomery multiplication, a * b / R mod P, with the running sum T kept as two
    // numbers: T = X + Y·2^32. A row a·b_i splits into the products of a's even limbs (at words
    // 2k, 2k+1: they do not overlap, so X takes them as one carry chain of lo/hi pairs) and of its
    // odd limbs (the same into Y, one word up). Each lo/hi pair of one product into one word pair
    // can become a single wide multiply-add with carries on sm_80+; a chain of whole-row lo
    // products then whole-row hi products compiled to an IMAD plus an IADD3.X per step (1235
    // SASS instructions an Fp multiply). Shifting T right by a word swaps the roles: the new X is
    // Y plus X's word 1 (its carry goes into the first step of the next Y chain, which sits at
    // that carry's weight), the new Y is X from word 2 on. X and Y each stay below 4·2^(32N), so
    // N + 1 words hold them.
    static __device__ __forceinline__ mont_t mul_body(const mont_t& a_in, const mont_t& b_in) {
        static_assert(N % 2 == 0, "even/odd split needs an even limb count");
        // By value: with references into memory, nvcc reloads a limb for each asm statement that
        // reads it, and ptxas cannot pair the lo and hi products of one limb into a wide one.
        const mont_t a = a_in, b = b_in;
        uint32_t x[N + 1], y[N + 1];
        first_row(x, y, a.l, b.l[0]);
        reduce_step(x, y);
#pragma unroll
        for (int i = 1; i < N; i++) {
            shift_word(x, y);
            chain<true, 1>(y, a.l, b.l[i]);  // y += a_odd · b_i, taking shift_word's carry
            chain<false, 0>(x, a.l, b.l[i]); // x += a_even · b_i
            reduce_step(x, y);
        }
        // T / 2^32; T < 2P < 2^(32N)
        fold(x, y);
        mont_t r;
#pragma unroll
        for (int j = 0; j < N; j++) r.l[j] = y[j];
        r.final_sub();
        return r;
    }

    // The whole product a·b (2N words, no reduction), by mul_body's rows without their
    // reduction steps: after row i the lowest word of the window is final and is written out.
    // Operands may be any N-word values (Fp2's Karatsuba multiplies sums below 2P).
    static __device__ __forceinline__ void mul_wide(const mont_t& a_in, const mont_t& b_in, uint32_t (&t)[2 * N]) {
        const mont_t a = a_in, b = b_in;
        uint32_t x[N + 1], y[N + 1];
        first_row(x, y, a.l, b.l[0]);
        t[0] = x[0];
#pragma unroll
        for (int i = 1; i < N; i++) {
            shift_word(x, y);
            chain<true, 1>(y, a.l, b.l[i]);
            chain<false, 0>(x, a.l, b.l[i]);
            t[i] = x[0];
        }
        // the rest, (window − X[0]) / 2^32, is below 2^(32N)
        fold(x, y);
#pragma unroll
        for (int j = 0; j < N; j++) t[N + j] = y[j];
    }

    // Montgomery reduction of a 2N-word T < P·R (a sum or difference of two products of values
    // below P, or one product of sums below 2P), fully reduced: T / R mod P. The low half goes
    // through the reduction steps ((T_lo + M·P) / R ≤ P), the high half (< P) is added after: the
    // sum stays below 2P.
    static __device__ __forceinline__ mont_t redc_wide(const uint32_t (&t)[2 * N]) {
        uint32_t x[N + 1], y[N + 1];
#pragma unroll
        for (int j = 0; j < N; j++) x[j] = t[j], y[j] = 0;
        x[N] = 0;
        y[N] = 0;
        reduce_step(x, y);
#pragma unroll
        for (int i = 1; i < N; i++) {
            shift_word(x, y);
            reduce_step<true>(x, y);
        }
        fold(x, y);
        mont_t r, hi;
#pragma unroll
        for (int j = 0; j < N; j++) r.l[j] = y[j], hi.l[j] = t[N + j];
        add_words(r.l, hi.l);
        r.final_sub();
        return r;
    }

    // Row 0 of a product: x, y = the products of a's even and odd limbs with s (no carries).
    static __device__ __forceinline__ void first_row(uint32_t (&x)[N + 1], uint32_t (&y)[N + 1], const uint32_t (&a)[N],
                                                     uint32_t s) {
#pragma unroll
        for (int k = 0; k < N / 2; k++) {
            x[2 * k] = mul_lo(a[2 * k], s);
            x[2 * k + 1] = mul_hi(a[2 * k], s);
            y[2 * k] = mul_lo(a[2 * k + 1], s);
            y[2 * k + 1] = mul_hi(a[2 * k + 1], s);
        }
        x[N] = 0;
        y[N] = 0;
    }

    // T = X + Y·2^32 shifted right by a word, once X[0] is spent (reduced to 0 or written out):
    // the new X is Y plus X[1], whose carry stays in the flag for the next chain into the new Y
    // (it sits at that carry's weight); the new Y is X from word 2 on.
    static __device__ __forceinline__ void shift_word(uint32_t (&x)[N + 1], uint32_t (&y)[N + 1]) {
        uint32_t nx[N + 1], ny[N + 1];
#pragma unroll
        for (int j = 0; j <= N; j++) nx[j] = y[j];
#pragma unroll
        for (int j = 0; j < N - 1; j++) ny[j] = x[j + 2];
        ny[N - 1] = 0;
        ny[N] = 0;
        add_cc(nx[0], x[1]);
#pragma unroll
        for (int j = 0; j <= N; j++) x[j] = nx[j], y[j] = ny[j];
    }

    // The window's value over 2^32 (X[0] spent) into y[0..N): Y + X[1..], whose top word is 0.
    static __device__ __forceinline__ void fold(uint32_t (&x)[N + 1], uint32_t (&y)[N + 1]) {
        add_cc(y[0], x[1]);
#pragma unroll
        for (int j = 1; j < N; j++) addc_cc(y[j], x[j + 1]);
    }

    // a + b without the final subtraction (< 2P, which N words hold).
    __device__ __forceinline__ static mont_t add_unreduced(const mont_t& a, const mont_t& b) {
        mont_t r = a;
        add_words(r.l, b.l);
        return r;
    }

    // m = X[0]·(−P^-1); X += P_even·m, Y += P_odd·m: afterwards X[0] = 0. With CARRY_IN the Y
    // chain also takes the carry flag (shift_word's, when no product row came between).
    template <bool CARRY_IN = false>
    static __device__ __forceinline__ void reduce_step(uint32_t (&x)[N + 1], uint32_t (&y)[N + 1]) {
        const uint32_t m = x[0] * C::m0();
        uint32_t p[N];
#pragma unroll
        for (int j = 0; j < N; j++) p[j] = C::p(j);
        chain<CARRY_IN, 1>(y, p, m);
        chain<false, 0>(x, p, m);
    }

    // z[0..N] += Σ_k v[2k + ODD]·s at words 2k, 2k+1, as one carry chain of lo/hi pairs; with
    // CARRY_IN the first step also takes the carry flag set just before.
    template <bool CARRY_IN, int ODD>
    static __device__ __forceinline__ void chain(uint32_t (&z)[N + 1], const uint32_t (&v)[N], uint32_t s) {
        if (CARRY_IN)
            madc_lo_cc(z[0], v[ODD], s);
        else
            mad_lo_cc(z[0], v[ODD], s);
        madc_hi_cc(z[1], v[ODD], s);
#pragma unroll
        for (int k = 1; k < N / 2; k++) {
            madc_lo_cc(z[2 * k], v[2 * k + ODD], s);
            madc_hi_cc(z[2 * k + 1], v[2 * k + ODD], s);
        }
        addc(z[N], 0);
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
