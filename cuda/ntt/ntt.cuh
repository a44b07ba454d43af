// Fr NTTs over power-of-two domains in a few passes over memory, each pass several radix-2
// stages inside shared memory.
//
// Stage st pairs elements i and i + 2^st; its twiddle is w^(j·m/2^(st+1)) with j = i mod 2^st,
// read from a table of all m/2 powers (tw[j << (log_m - 1 - st)]). Both butterfly forms are here:
//   DIT (Cooley-Tukey): bit-reversed in, natural out, stages ascending:  (u, v) -> (u + w·v, u − w·v)
//   DIF (Gentleman-Sande): natural in, bit-reversed out, stages descending: (u, v) -> (u + v, (u − v)·w)
// A natural-order transform is DIT with the bit-reversal folded into its first pass's loads; the
// Groth16 h pipeline pairs DIF and DIT so that only its last pass permutes (see src/gpu/ntt.rs).
//
// One pass (ntt_pass) does stages st0 .. st0+nst−1 for one block of 2^NTT_PASS_LOG elements:
// 2^nst rows (the index bits st0 .. st0+nst−1) × L columns (consecutive values of the bits below
// st0, so a warp's loads are runs of L·32 bytes). Inside the pass each thread takes its stages
// three at a time on eight elements in registers (ntt_group). Coset and scaling multiplications
// are fused into the loads of the first pass or the stores of the last one.
#pragma once
#include "../ff/bls12_381.cuh"

/* log2 of the elements one block holds in shared memory (32 B each: 32 KiB) */
#define NTT_PASS_LOG 10
/* log2 of the elements one thread holds in registers for a group of stages */
#define NTT_RADIX_LOG 3
/* low bits of a power's exponent served by the lo table */
#define NTT_TW_LO_BITS 12

/* ntt_pass flags (src/gpu/ntt.rs mirrors them) */
#define NTT_DIF 1u         /* Gentleman-Sande butterflies, stages descending: ntt_pass_dif */
#define NTT_GATHER 2u      /* element at position p is loaded from in[brev(p)] */
#define NTT_SCATTER 4u     /* element at position p is stored to out[brev(p)] */
#define NTT_SCALE_IN 8u    /* multiply each element by pw(index) after loading it */
#define NTT_SCALE_OUT 16u  /* multiply each element by pw(index) before storing it */
#define NTT_SCALE_BREV 32u /* the pw index of position p is brev(p), not p */

__device__ __forceinline__ fr_t pow_at(const fr_t* lo, const fr_t* hi, uint64_t i) {
    return lo[i & ((1u << NTT_TW_LO_BITS) - 1)] * hi[i >> NTT_TW_LO_BITS];
}

// 32-byte elements as two 16-byte accesses (cudaMalloc aligns buffers to 256 bytes).
__device__ __forceinline__ fr_t load_fr(const fr_t* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    uint4 a = q[0], b = q[1];
    fr_t r;
    r.l[0] = a.x, r.l[1] = a.y, r.l[2] = a.z, r.l[3] = a.w;
    r.l[4] = b.x, r.l[5] = b.y, r.l[6] = b.z, r.l[7] = b.w;
    return r;
}
__device__ __forceinline__ fr_t load_fr_ro(const fr_t* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    uint4 a = __ldg(q), b = __ldg(q + 1);
    fr_t r;
    r.l[0] = a.x, r.l[1] = a.y, r.l[2] = a.z, r.l[3] = a.w;
    r.l[4] = b.x, r.l[5] = b.y, r.l[6] = b.z, r.l[7] = b.w;
    return r;
}
__device__ __forceinline__ void store_fr(fr_t* p, const fr_t& v) {
    uint4* q = reinterpret_cast<uint4*>(p);
    q[0] = make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]);
    q[1] = make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]);
}

__device__ __forceinline__ uint64_t brev_bits(uint64_t i, uint32_t log_n) {
    return log_n ? __brevll(i) >> (64 - log_n) : 0;
}

// out[i] = lo[..] * hi[..] = c * w^i: the twiddle table of a domain.
extern "C" __global__ void fr_powers(fr_t* out, uint64_t n, const fr_t* lo, const fr_t* hi) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i < n) store_fr(&out[i], pow_at(lo, hi, i));
}

// Shared memory as 8 limb planes, so that a warp touching consecutive elements touches
// consecutive words of each plane (no bank conflicts).
struct smem_fr {
    uint32_t (*s)[1 << NTT_PASS_LOG];
    __device__ __forceinline__ fr_t get(uint32_t e) const {
        fr_t r;
#pragma unroll
        for (int i = 0; i < 8; i++) r.l[i] = s[i][e];
        return r;
    }
    __device__ __forceinline__ void put(uint32_t e, const fr_t& v) const {
#pragma unroll
        for (int i = 0; i < 8; i++) s[i][e] = v.l[i];
    }
};

// G stages of a pass in registers, for the butterfly groups t, t + T, ... of the block: a group is
// the 2^G elements whose rows differ only in the bits s0 .. s0+G−1 (stages s0 .. s0+G−1 of the
// pass, descending for DIF). A thread keeps up to 2^(G−1) independent butterflies in flight a
// stage, and the block meets in shared memory once per G stages instead of once per stage.
template <int G, bool DIF, bool ZERO_BASE>
__device__ __forceinline__ void ntt_group(const smem_fr& s, uint32_t t, uint32_t T, uint32_t ngroups, uint32_t s0,
                                          uint32_t log_l, uint32_t st0, uint32_t log_n, uint32_t lo_base,
                                          const fr_t* tw) {
    const uint32_t low = s0 + log_l; /* element bits below the group's row bits */
    const uint32_t lmask = (1u << log_l) - 1;
    for (uint32_t q = t; q < ngroups; q += T) {
        const uint32_t base = ((q >> low) << (low + G)) | (q & ((1u << low) - 1));
        fr_t v[1 << G];
#pragma unroll
        for (int x = 0; x < (1 << G); x++) v[x] = s.get(base | ((uint32_t)x << low));
        const uint32_t l = base & lmask;
        const uint32_t k = base >> log_l; /* row of element x = 0; row bits s0.. of it are 0 */
        /* the twiddle index of stage s0 + i depends on x only through x's low i bits */
        const uint32_t jbase = ((k & ((1u << s0) - 1)) << st0) | (lo_base + l); /* < 2^(log_n − 1) */
#pragma unroll
        for (int ii = 0; ii < G; ii++) {
            const int i = DIF ? G - 1 - ii : ii;
            const uint32_t gst = st0 + s0 + i; /* stage of the transform */
#pragma unroll
            for (int xl = 0; xl < (1 << i); xl++) {
                /* in the group that starts the transform (st0 = s0 = 0) jbase is 0, so the
                   butterflies with xl = 0 have twiddle 1: half of stage 1, a quarter of stage 2 */
                if (ZERO_BASE && xl == 0) {
#pragma unroll
                    for (int xh = 0; xh < (1 << (G - 1 - i)); xh++) {
                        const int x = xl | (xh << (i + 1)), y = x | (1 << i);
                        const fr_t u = v[x], w_v = v[y];
                        v[x] = u + w_v;
                        v[y] = u - w_v;
                    }
                    continue;
                }
                const uint32_t j = jbase | ((uint32_t)xl << (s0 + st0));
                const fr_t w = load_fr_ro(&tw[j << (log_n - 1 - gst)]);
#pragma unroll
                for (int xh = 0; xh < (1 << (G - 1 - i)); xh++) {
                    const int x = xl | (xh << (i + 1)), y = x | (1 << i);
                    fr_t u = v[x], w_v = v[y];
                    if (DIF) {
                        v[x] = u + w_v;
                        v[y] = (u - w_v) * w;
                    } else {
                        w_v = w_v * w;
                        v[x] = u + w_v;
                        v[y] = u - w_v;
                    }
                }
            }
        }
#pragma unroll
        for (int x = 0; x < (1 << G); x++) s.put(base | ((uint32_t)x << low), v[x]);
    }
}

// Stages st0 .. st0+nst−1 of a transform of 2^log_n elements, one block per 2^(nst + log_l)
// elements where log_l = st0 ? min(st0, NTT_PASS_LOG − nst) : 0; blockDim.x = that count over
// 2^min(nst, NTT_RADIX_LOG). The stages go in groups of NTT_RADIX_LOG (ascending from stage 0 of
// the pass; DIF takes the same groups from the top). `in` may equal `out` unless GATHER or SCATTER
// is set. One kernel a direction (ntt_pass_dit, ntt_pass_dif, below), each with only its own
// butterfly code: the two together did not stay in the instruction cache as well.
template <bool DIF>
__device__ __forceinline__ void ntt_pass(const fr_t* in, fr_t* out, uint32_t log_n, uint32_t st0, uint32_t nst,
                                         const fr_t* tw, uint32_t flags, const fr_t* pw_lo, const fr_t* pw_hi) {
    __shared__ uint32_t planes[8][1 << NTT_PASS_LOG];
    const smem_fr s{planes};
    const uint32_t log_l = st0 ? min(st0, (uint32_t)NTT_PASS_LOG - nst) : 0;
    const uint32_t cols_log = st0 - log_l; /* column blocks per row group: 2^cols_log */
    const uint64_t b = blockIdx.x;
    const uint64_t hi = b >> cols_log;
    const uint32_t lo_base = (uint32_t)(b & ((1u << cols_log) - 1)) << log_l;
    const uint32_t elems = 1u << (nst + log_l);
    const uint32_t t = threadIdx.x, T = blockDim.x;
    const uint32_t lmask = (1u << log_l) - 1;

    // position of block element e = (row k, column l)
    auto pos = [&](uint32_t e) -> uint64_t {
        uint32_t k = e >> log_l, l = e & lmask;
        return (hi << (st0 + nst)) | ((uint64_t)k << st0) | (lo_base + l);
    };

    for (uint32_t e = t; e < elems; e += T) {
        uint64_t p = pos(e);
        fr_t v = load_fr(&in[flags & NTT_GATHER ? brev_bits(p, log_n) : p]);
        if (flags & NTT_SCALE_IN) v = v * pow_at(pw_lo, pw_hi, flags & NTT_SCALE_BREV ? brev_bits(p, log_n) : p);
        s.put(e, v);
    }
    __syncthreads();

    const uint32_t ngrp = (nst + NTT_RADIX_LOG - 1) / NTT_RADIX_LOG;
    for (uint32_t gi = 0; gi < ngrp; gi++) {
        const uint32_t g_index = DIF ? ngrp - 1 - gi : gi;
        const uint32_t s0 = g_index * NTT_RADIX_LOG;
        const uint32_t g = min((uint32_t)NTT_RADIX_LOG, nst - s0);
        const uint32_t ngroups = elems >> g;
        /* the butterfly pattern is fixed at compile time, so v[] stays in registers */
#define NTT_GROUP(G, Z) ntt_group<G, DIF, Z>(s, t, T, ngroups, s0, log_l, st0, log_n, lo_base, tw)
        if (st0 == 0 && s0 == 0 && g == 3) {
            /* the transform's stages 0-2: their butterflies with twiddle 1 skip the multiply */
            NTT_GROUP(3, true);
        } else {
            if (g == 3) NTT_GROUP(3, false); else if (g == 2) NTT_GROUP(2, false); else NTT_GROUP(1, false);
        }
#undef NTT_GROUP
        __syncthreads();
    }

    for (uint32_t e = t; e < elems; e += T) {
        uint64_t p = pos(e);
        fr_t v = s.get(e);
        if (flags & NTT_SCALE_OUT) v = v * pow_at(pw_lo, pw_hi, flags & NTT_SCALE_BREV ? brev_bits(p, log_n) : p);
        store_fr(&out[flags & NTT_SCATTER ? brev_bits(p, log_n) : p], v);
    }
}

extern "C" __global__ void __launch_bounds__(1 << (NTT_PASS_LOG - 1))
ntt_pass_dit(const fr_t* in, fr_t* out, uint32_t log_n, uint32_t st0, uint32_t nst, const fr_t* tw, uint32_t flags,
             const fr_t* pw_lo, const fr_t* pw_hi) {
    ntt_pass<false>(in, out, log_n, st0, nst, tw, flags, pw_lo, pw_hi);
}

extern "C" __global__ void __launch_bounds__(1 << (NTT_PASS_LOG - 1))
ntt_pass_dif(const fr_t* in, fr_t* out, uint32_t log_n, uint32_t st0, uint32_t nst, const fr_t* tw, uint32_t flags,
             const fr_t* pw_lo, const fr_t* pw_hi) {
    ntt_pass<true>(in, out, log_n, st0, nst, tw, flags, pw_lo, pw_hi);
}

// x[i] *= lo[i & mask] * hi[i >> bits] (c folded into lo by the host): for a domain of one element.
extern "C" __global__ void fr_mul_powers(fr_t* x, uint64_t n, const fr_t* lo, const fr_t* hi) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_fr(&x[i], load_fr(&x[i]) * pow_at(lo, hi, i));
}

// The pointwise step of h on the coset: a = (a * b - c) * z_inv, z_inv = (g^m - 1)^-1.
extern "C" __global__ void h_pointwise(fr_t* a, const fr_t* b, const fr_t* c, uint64_t n, fr_t z_inv) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_fr(&a[i], (load_fr(&a[i]) * load_fr(&b[i]) - load_fr(&c[i])) * z_inv);
}

// x[i] *= y[i]: c = a∘b on the domain, which a satisfied R1CS's c equals (host: Domain::h).
extern "C" __global__ void fr_mul_pointwise(fr_t* x, const fr_t* y, uint64_t n) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_fr(&x[i], load_fr(&x[i]) * load_fr(&y[i]));
}

// The values of src whose density bit is set, in order: dst[offsets[i / 64] + (set bits of word
// i / 64 below bit i % 64)] = src[i]. The A and B queries' scalars, picked from the aux assignment
// on the device instead of collected and uploaded twice more (host: stage.rs, select_scalars).
extern "C" __global__ void fr_select(const fr_t* src, uint64_t n, const uint64_t* words, const uint32_t* offsets,
                                     fr_t* dst) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t w = words[i >> 6];
    uint32_t bit = i & 63;
    if (!((w >> bit) & 1)) return;
    store_fr(&dst[offsets[i >> 6] + __popcll(w & ((1ull << bit) - 1))], load_fr(&src[i]));
}

// Montgomery -> canonical, in place (MSM scalars).
extern "C" __global__ void fr_from_mont(fr_t* x, uint64_t n) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_fr(&x[i], load_fr(&x[i]).from_mont());
}
