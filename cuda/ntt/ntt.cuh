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
// st0, so a warp's loads are runs of L·32 bytes). Coset and scaling multiplications are fused
// into the loads of the first pass or the stores of the last one.
#pragma once
#include "../ff/bls12_381.cuh"

/* log2 of the elements one block holds in shared memory (32 B each: 32 KiB) */
#define NTT_PASS_LOG 10
/* low bits of a power's exponent served by the lo table */
#define NTT_TW_LO_BITS 12

/* ntt_pass flags (src/gpu/ntt.rs mirrors them) */
#define NTT_DIF 1u         /* Gentleman-Sande butterflies, stages descending */
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

// Stages st0 .. st0+nst−1 of a transform of 2^log_n elements; blockDim.x = 2^(nst + log_l − 1)
// where log_l = st0 ? min(st0, NTT_PASS_LOG − nst) : 0, one block per 2^(nst + log_l) elements.
// `in` may equal `out` unless GATHER or SCATTER is set.
extern "C" __global__ void __launch_bounds__(1 << (NTT_PASS_LOG - 1))
ntt_pass(const fr_t* in, fr_t* out, uint32_t log_n, uint32_t st0, uint32_t nst, const fr_t* tw, uint32_t flags,
         const fr_t* pw_lo, const fr_t* pw_hi) {
    __shared__ uint32_t planes[8][1 << NTT_PASS_LOG];
    const smem_fr s{planes};
    const uint32_t log_l = st0 ? min(st0, (uint32_t)NTT_PASS_LOG - nst) : 0;
    const uint32_t cols_log = st0 - log_l; /* column blocks per row group: 2^cols_log */
    const uint64_t b = blockIdx.x;
    const uint64_t hi = b >> cols_log;
    const uint32_t lo_base = (uint32_t)(b & ((1u << cols_log) - 1)) << log_l;
    const uint32_t half = 1u << (nst + log_l - 1);
    const uint32_t t = threadIdx.x;
    const uint32_t lmask = (1u << log_l) - 1;

    // position of block element e = (row k, column l)
    auto pos = [&](uint32_t e) -> uint64_t {
        uint32_t k = e >> log_l, l = e & lmask;
        return (hi << (st0 + nst)) | ((uint64_t)k << st0) | (lo_base + l);
    };

#pragma unroll
    for (int r = 0; r < 2; r++) {
        uint32_t e = t + r * half;
        uint64_t p = pos(e);
        fr_t v = load_fr(&in[flags & NTT_GATHER ? brev_bits(p, log_n) : p]);
        if (flags & NTT_SCALE_IN) v = v * pow_at(pw_lo, pw_hi, flags & NTT_SCALE_BREV ? brev_bits(p, log_n) : p);
        s.put(e, v);
    }
    __syncthreads();

    const bool dif = flags & NTT_DIF;
    for (uint32_t i = 0; i < nst; i++) {
        const uint32_t st = dif ? nst - 1 - i : i; /* stage within the pass */
        const uint32_t l = t & lmask;
        const uint32_t kk = t >> log_l;
        const uint32_t k0 = ((kk >> st) << (st + 1)) | (kk & ((1u << st) - 1));
        const uint32_t e0 = (k0 << log_l) | l, e1 = e0 | (1u << (st + log_l));
        const uint32_t gst = st0 + st; /* stage of the whole transform */
        fr_t u = s.get(e0), v = s.get(e1);
        if (gst == 0) {
            /* every twiddle of stage 0 is 1 */
            fr_t x = u + v;
            v = u - v;
            u = x;
        } else {
            const uint64_t j = ((uint64_t)(k0 & ((1u << st) - 1)) << st0) | (lo_base + l);
            const fr_t w = load_fr_ro(&tw[j << (log_n - 1 - gst)]);
            if (dif) {
                fr_t x = u + v;
                v = (u - v) * w;
                u = x;
            } else {
                v = v * w;
                fr_t x = u + v;
                v = u - v;
                u = x;
            }
        }
        s.put(e0, u);
        s.put(e1, v);
        __syncthreads();
    }

#pragma unroll
    for (int r = 0; r < 2; r++) {
        uint32_t e = t + r * half;
        uint64_t p = pos(e);
        fr_t v = s.get(e);
        if (flags & NTT_SCALE_OUT) v = v * pow_at(pw_lo, pw_hi, flags & NTT_SCALE_BREV ? brev_bits(p, log_n) : p);
        store_fr(&out[flags & NTT_SCATTER ? brev_bits(p, log_n) : p], v);
    }
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

// Montgomery -> canonical, in place (MSM scalars).
extern "C" __global__ void fr_from_mont(fr_t* x, uint64_t n) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_fr(&x[i], load_fr(&x[i]).from_mont());
}
