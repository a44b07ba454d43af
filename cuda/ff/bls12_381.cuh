// BLS12-381 base field Fp, its quadratic extension Fp2 = Fp[u]/(u^2+1), and the scalar field Fr.
//
// Only constants live here; the arithmetic is the shared template in mont.cuh.
#pragma once
#include "mont.cuh"

struct fp_consts {
    static constexpr int N = 12;
    /* out of line: the G1/G2 kernels inline hundreds of these */
    static constexpr bool INLINE_MUL = false;
    /* -P^-1 mod 2^32 */
    static constexpr uint32_t M0 = 0xfffcfffd;
    __device__ __forceinline__ static constexpr uint32_t m0() { return M0; }
    __device__ __forceinline__ static constexpr uint32_t p(int i) {
        constexpr uint32_t v[N] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                                      0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
        return v[i];
    }
    /* P², 24 words (Fp2's lazy Karatsuba adds it to a negative difference of products) */
    __device__ __forceinline__ static constexpr uint32_t p2(int i) {
        constexpr uint32_t v[2 * N] = {0x1c718e39, 0x26aa0000, 0x76382eab, 0x7ced6b1d, 0x62113cfd, 0x162c3383,
                                       0x3e71b743, 0x66bf91ed, 0x7091a049, 0x292e85a8, 0x86185c7b, 0x1d68619c,
                                       0x0978ef01, 0xf5314933, 0x16ddca6e, 0x50a62cfd, 0x349e8bd0, 0x66e59e49,
                                       0x0e7046b4, 0xe2dc90e5, 0xa22f25e9, 0x4bd278ea, 0xb8c35fc7, 0x02a437a4};
        return v[i];
    }
    /* (1<<384) % P */
    __device__ __forceinline__ static constexpr uint32_t one(int i) {
        constexpr uint32_t v[N] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b, 0x53c758ba, 0x5f489857,
                                        0x70525745, 0x77ce5853, 0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
        return v[i];
    }
};

#ifdef __CUDA_ARCH__
__device__ __constant__ uint32_t FR_M0 = 0xffffffff;
#endif

struct fr_consts {
    static constexpr int N = 8;
    /* inline: the NTT kernels hold one or two a butterfly */
    static constexpr bool INLINE_MUL = true;
    /* -R^-1 mod 2^32 */
    static constexpr uint32_t M0 = 0xffffffff;
    /* M0 as the reduction reads it: from constant memory on the device. Known to be -1 (with
       the modulus's low limb 1), ptxas rewrites each reduction's first products into negations
       and adds, and the rest of the chain no longer pairs into wide multiply-adds (48 more
       instructions a multiplication). */
    __device__ __forceinline__ static uint32_t m0() {
#ifdef __CUDA_ARCH__
        return FR_M0;
#else
        return M0;
#endif
    }
    __device__ __forceinline__ static constexpr uint32_t p(int i) {
        constexpr uint32_t v[N] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                      0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
        return v[i];
    }
    /* (1<<256) % R */
    __device__ __forceinline__ static constexpr uint32_t one(int i) {
        constexpr uint32_t v[N] = {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
                                        0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
        return v[i];
    }
};

typedef mont_t<fp_consts> fp_t;
typedef mont_t<fr_consts> fr_t;

// Fp2 with u^2 = -1; layout c0 || c1 as in blst_fp2.
struct fp2_t {
    fp_t c0, c1;

    __device__ __forceinline__ static fp2_t zero() { return {fp_t::zero(), fp_t::zero()}; }
    __device__ __forceinline__ static fp2_t one() { return {fp_t::one(), fp_t::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ friend fp2_t operator+(const fp2_t& a, const fp2_t& b) {
        return {a.c0 + b.c0, a.c1 + b.c1};
    }
    __device__ __forceinline__ friend fp2_t operator-(const fp2_t& a, const fp2_t& b) {
        return {a.c0 - b.c0, a.c1 - b.c1};
    }
    __device__ __forceinline__ fp2_t neg() const { return {c0.neg(), c1.neg()}; }
    __device__ __forceinline__ fp2_t dbl() const { return {c0.dbl(), c1.dbl()}; }
    // Karatsuba with lazy reduction: three whole products and two Montgomery reductions instead
    // of three multiplications (each half product, half reduction): G2 MSM 2^24 471 -> 394 ms on
    // the H200 against Karatsuba over three full multiplications. With a0·b0, a1·b1 < P² and
    // the sums a0 + a1, b0 + b1 left unreduced (< 2P):
    //   c0 = redc(a0·b0 − a1·b1, plus P² when negative)           (< P²)
    //   c1 = redc((a0 + a1)·(b0 + b1) − a0·b0 − a1·b1) = redc(a0·b1 + a1·b0)   (< 2P²)
    // and redc needs T < P·R = P·2^384, which 2P² meets (2P < 2^382 < R).
    static __device__ __forceinline__ fp2_t mul_body(const fp2_t& a, const fp2_t& b) {
        // ordered so that at most three products (and no operand) are live at once
        constexpr int W = 2 * fp_t::N;
        uint32_t t2[W], t0[W], t1[W];
        fp_t::mul_wide(fp_t::add_unreduced(a.c0, a.c1), fp_t::add_unreduced(b.c0, b.c1), t2);
        fp_t::mul_wide(a.c0, b.c0, t0);
        sub_words(t2, t0);
        fp_t::mul_wide(a.c1, b.c1, t1);
        sub_words(t2, t1);
        sub_words(t0, t1);
        const uint32_t neg = borrow_mask();
#pragma unroll
        for (int i = 0; i < W; i++) t1[i] = fp_consts::p2(i) & neg;
        add_words(t0, t1);
        return {fp_t::redc_wide(t0), fp_t::redc_wide(t2)};
    }
    // Out of line, as fp_t's multiplication is (one copy per kernel keeps compile times down).
    static __device__ __noinline__ fp2_t mul(const fp2_t a, const fp2_t b) { return mul_body(a, b); }
    __device__ __forceinline__ friend fp2_t operator*(const fp2_t& a, const fp2_t& b) { return mul(a, b); }
    __device__ __forceinline__ fp2_t sqr() const {
        fp_t t = c0 * c1;
        return {(c0 + c1) * (c0 - c1), t.dbl()};
    }
};
