// Radix-2 Fr NTT over power-of-two domains, natural order in and out (bellperson's convention).
//
// A transform is: bit-reversal permutation, the first NTT_SMEM_LOG stages inside shared memory,
// then one launch per remaining stage. Twiddles come from a table of all m/2 powers of w, made on
// the device by fr_powers from two small host-made tables (w^e = lo[e & LO_MASK] * hi[e >> LO_BITS]);
// coset powers c * g^i use the two small tables directly (one extra multiplication per element).
#pragma once
#include "../ff/bls12_381.cuh"

/* log2 of the elements one block transforms in shared memory (32 B each: 32 KiB) */
#define NTT_SMEM_LOG 10
/* low bits of a twiddle exponent served by the lo table */
#define NTT_TW_LO_BITS 12
static_assert(NTT_SMEM_LOG <= 10, "one thread per butterfly, at most 1024 threads a block");

__device__ __forceinline__ fr_t pow_at(const fr_t* lo, const fr_t* hi, uint64_t i) {
    return lo[i & ((1u << NTT_TW_LO_BITS) - 1)] * hi[i >> NTT_TW_LO_BITS];
}

// out[i] = lo[..] * hi[..] = c * w^i: the twiddle table of a domain.
extern "C" __global__ void fr_powers(fr_t* out, uint64_t n, const fr_t* lo, const fr_t* hi) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = pow_at(lo, hi, i);
}

extern "C" __global__ void ntt_bitrev(fr_t* x, uint32_t log_n) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >> log_n) return;
    uint64_t j = __brevll(i) >> (64 - log_n);
    if (i < j) {
        fr_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

// Stages 0 .. min(log_n, NTT_SMEM_LOG)-1 on consecutive chunks; blockDim.x = chunk / 2.
extern "C" __global__ void ntt_smem(fr_t* x, uint32_t log_n, const fr_t* tw) {
    __shared__ fr_t s[1 << NTT_SMEM_LOG];
    const uint32_t log_c = log_n < NTT_SMEM_LOG ? log_n : NTT_SMEM_LOG;
    const uint32_t half = 1u << (log_c - 1);
    const uint64_t base = (uint64_t)blockIdx.x << log_c;
    const uint32_t t = threadIdx.x;
    s[t] = x[base + t];
    s[t + half] = x[base + t + half];
    __syncthreads();
    for (uint32_t st = 0; st < log_c; st++) {
        uint32_t h = 1u << st;
        uint32_t j = t & (h - 1);
        uint32_t i0 = ((t >> st) << (st + 1)) + j;
        fr_t w = tw[(uint64_t)j << (log_n - 1 - st)];
        fr_t u = s[i0];
        fr_t v = s[i0 + h] * w;
        s[i0] = u + v;
        s[i0 + h] = u - v;
        __syncthreads();
    }
    x[base + t] = s[t];
    x[base + t + half] = s[t + half];
}

// One radix-2 stage `st` >= NTT_SMEM_LOG over the whole array; one thread per butterfly.
extern "C" __global__ void ntt_stage(fr_t* x, uint32_t log_n, uint32_t st, const fr_t* tw) {
    uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (t >= (1ull << (log_n - 1))) return;
    uint64_t h = 1ull << st;
    uint64_t j = t & (h - 1);
    uint64_t i0 = ((t >> st) << (st + 1)) + j;
    fr_t w = tw[j << (log_n - 1 - st)];
    fr_t u = x[i0];
    fr_t v = x[i0 + h] * w;
    x[i0] = u + v;
    x[i0 + h] = u - v;
}

// x[i] *= lo[i & mask] * hi[i >> bits]: coset shifts c * g^i (c folded into lo by the host).
extern "C" __global__ void fr_mul_powers(fr_t* x, uint64_t n, const fr_t* lo, const fr_t* hi) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    x[i] = x[i] * pow_at(lo, hi, i);
}

// The pointwise step of h on the coset: a = (a * b - c) * z_inv, z_inv = (g^m - 1)^-1.
extern "C" __global__ void h_pointwise(fr_t* a, const fr_t* b, const fr_t* c, uint64_t n, fr_t z_inv) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = (a[i] * b[i] - c[i]) * z_inv;
}

// Montgomery -> canonical, in place (MSM scalars).
extern "C" __global__ void fr_from_mont(fr_t* x, uint64_t n) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    x[i] = x[i].from_mont();
}
