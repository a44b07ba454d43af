// Pippenger MSM with signed windows, buckets sorted by index, and a 0/1 split, for G1 and G2.
//
// Host-driven steps (src/gpu/msm.rs runs them in order on one stream):
//   1. msm_*_classify: scalars (canonical) equal to 0 are dropped, 1s go to a list that is summed
//      directly (Filecoin witnesses are mostly bits), the rest go to the windowed path.
//   2. msm_hist / scan / msm_scatter: a counting sort of (window, |digit|) keys; each entry holds
//      the point index and the digit's sign in bit 31.
//   3. msm_task_count / scan / msm_task_fill: each bucket is cut into tasks of at most
//      MSM_TASK_POINTS points (a top window, or the 1-bucket of a skewed distribution, can hold
//      a large share of all points); msm_*_buckets: one thread a task sums its points (mixed XYZZ
//      additions); msm_*_gather: one thread a bucket adds up its tasks.
//   4. msm_*_segments: each thread turns a run of buckets into sum(b * B_b) by running sums.
//   5. msm_*_reduce_rows: pairwise sums per row, repeated until one point per window is left.
// The host combines the windows (Horner, c doublings each) and the 1s in blstrs.
#pragma once
#include "../ec/xyzz.cuh"
#include "../ff/bls12_381.cuh"

/* scalars are < r < 2^255; windows cover 256 bits so the last signed digit never carries */
#define MSM_SCALAR_BITS 256
#define MSM_SIGN_BIT 0x80000000u
/* most points one thread adds in the bucket step */
#define MSM_TASK_POINTS 128

__device__ __forceinline__ uint32_t scalar_bits(const fr_t& s, uint32_t off, uint32_t c) {
    uint32_t w = off >> 5, b = off & 31;
    uint64_t lo = s.l[w];
    uint64_t hi = w + 1 < 8 ? s.l[w + 1] : 0;
    uint64_t v = (lo | (hi << 32)) >> b;
    return (uint32_t)v & ((1u << c) - 1);
}

// The signed digit of window w, given the carry out of window w − 1 (updated for window w + 1):
// d in (-2^(c-1), 2^(c-1)], encoded as |d| | sign << 31 (0 if d = 0).
__device__ __forceinline__ uint32_t next_digit(const fr_t& s, uint32_t w, uint32_t c, uint32_t& carry) {
    uint32_t v = scalar_bits(s, w * c, c) + carry;
    if (v > (1u << (c - 1))) {
        uint32_t mag = (1u << c) - v; // 0 when v = 2^c: digit 0, carry 1
        carry = 1;
        return mag ? mag | MSM_SIGN_BIT : 0;
    }
    carry = 0;
    return v;
}

// Signed digit of window `win` alone (the carries of the windows below recomputed).
__device__ __forceinline__ uint32_t signed_digit(const fr_t& s, uint32_t win, uint32_t c) {
    uint32_t carry = 0, d = 0;
    for (uint32_t w = 0; w <= win; w++) d = next_digit(s, w, c, carry);
    return d;
}

__device__ __forceinline__ void warp_append(bool pred, uint32_t value, uint32_t* list, uint32_t* count) {
    uint32_t mask = __ballot_sync(__activemask(), pred);
    if (!pred) return;
    uint32_t lane = threadIdx.x & 31;
    uint32_t leader = __ffs(mask) - 1;
    uint32_t base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(mask, base, leader);
    list[base + __popc(mask & ((1u << lane) - 1))] = value;
}

// counts[0] = number of 1s, counts[1] = number of other nonzero scalars.
extern "C" __global__ void msm_classify(const fr_t* s, uint32_t n, uint32_t* ones, uint32_t* big,
                                        uint32_t* counts) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    bool valid = i < n;
    fr_t v = valid ? s[i] : fr_t::zero();
    bool nz = !v.is_zero();
    uint32_t hi = 0;
#pragma unroll
    for (int k = 1; k < 8; k++) hi |= v.l[k];
    bool is_one = nz && hi == 0 && v.l[0] == 1;
    warp_append(valid && is_one, i, ones, &counts[0]);
    warp_append(valid && nz && !is_one, i, big, &counts[1]);
}

// hist[win * nbuckets + |d| - 1] += 1 for every nonzero digit of the listed scalars, one thread
// a scalar for all windows: the scalar is read once instead of once a window (16 reads of 32
// bytes for each of 2^27 scalars at c = 16) and each digit's carry comes from the one before;
// the additions do not wait for their results. 2^27 scalars at c = 16: 50.4 -> 23.3 ms.
extern "C" __global__ void msm_hist(const fr_t* s, const uint32_t* big, const uint32_t* counts, uint32_t c,
                                    uint32_t nwin, uint32_t* hist) {
    uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= counts[1]) return;
    const fr_t v = s[big[k]];
    uint32_t carry = 0;
    for (uint32_t w = 0; w < nwin; w++) {
        uint32_t d = next_digit(v, w, c, carry);
        if (d) atomicAdd(&hist[w * (1u << (c - 1)) + (d & ~MSM_SIGN_BIT) - 1], 1);
    }
}

// Exclusive prefix sum of n counters, one block of MSM_SCAN_THREADS threads.
#define MSM_SCAN_THREADS 1024
extern "C" __global__ void msm_scan(const uint32_t* in, uint32_t* out, uint32_t n) {
    __shared__ uint32_t part[MSM_SCAN_THREADS];
    uint32_t t = threadIdx.x;
    uint32_t per = (n + MSM_SCAN_THREADS - 1) / MSM_SCAN_THREADS;
    uint32_t lo = t * per, hi = min(n, lo + per);
    uint32_t sum = 0;
    for (uint32_t i = lo; i < hi; i++) sum += in[i];
    part[t] = sum;
    __syncthreads();
    for (uint32_t off = 1; off < MSM_SCAN_THREADS; off <<= 1) {
        uint32_t v = t >= off ? part[t - off] : 0;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    uint32_t run = part[t] - sum;
    for (uint32_t i = lo; i < hi; i++) {
        uint32_t v = in[i];
        out[i] = run;
        run += v;
    }
}

// Places each (point index | sign) at its bucket's cursor; cursors start at the scan and end at
// the bucket's end. One thread a scalar and window (blockIdx.y): each needs its cursor's old
// value before it can write, and one thread walking all windows waited for 16 such round trips
// in turn (2^27 scalars at c = 16: 88.5 -> 110.0 ms).
extern "C" __global__ void msm_scatter(const fr_t* s, const uint32_t* big, const uint32_t* counts, uint32_t c,
                                       uint32_t nwin, uint32_t* cursor, uint32_t* sorted) {
    uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t win = blockIdx.y;
    if (k >= counts[1] || win >= nwin) return;
    uint32_t idx = big[k];
    uint32_t d = signed_digit(s[idx], win, c);
    if (!d) return;
    uint32_t pos = atomicAdd(&cursor[win * (1u << (c - 1)) + (d & ~MSM_SIGN_BIT) - 1], 1);
    sorted[pos] = idx | (d & MSM_SIGN_BIT);
}

extern "C" __global__ void msm_task_count(const uint32_t* start, const uint32_t* end, uint32_t keys,
                                          uint32_t* ntask) {
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= keys) return;
    ntask[j] = max(1u, (end[j] - start[j] + MSM_TASK_POINTS - 1) / MSM_TASK_POINTS);
}

extern "C" __global__ void msm_task_fill(const uint32_t* start, const uint32_t* end, const uint32_t* ntask,
                                         const uint32_t* task_off, uint32_t keys, uint32_t* task_lo,
                                         uint32_t* task_hi) {
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= keys) return;
    for (uint32_t k = 0; k < ntask[j]; k++) {
        uint32_t lo = start[j] + k * MSM_TASK_POINTS;
        task_lo[task_off[j] + k] = lo;
        task_hi[task_off[j] + k] = min(end[j], lo + MSM_TASK_POINTS);
    }
}

template <class F>
__device__ __forceinline__ void buckets(const affine_t<F>* bases, const uint32_t* sorted, const uint32_t* start,
                                        const uint32_t* end, uint32_t total, xyzz_t<F>* out) {
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= total) return;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint32_t p = start[j]; p < end[j]; p++) {
        uint32_t e = sorted[p];
        affine_t<F> q = load_affine(&bases[e & ~MSM_SIGN_BIT]);
        if (e & MSM_SIGN_BIT) q.y = q.y.neg();
        acc.add_affine(q);
    }
    out[j] = acc;
}

// bk[j] = sum of bucket j's task sums.
template <class F>
__device__ __forceinline__ void gather(const xyzz_t<F>* partial, const uint32_t* ntask, const uint32_t* task_off,
                                       uint32_t keys, xyzz_t<F>* bk) {
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= keys) return;
    xyzz_t<F> acc = partial[task_off[j]];
    for (uint32_t k = 1; k < ntask[j]; k++) acc.add(partial[task_off[j] + k]);
    bk[j] = acc;
}

// Row r (window) of `nseg` segments, each of `len` buckets with values lo..lo+len-1:
// out[r * nseg + s] = sum over the segment of value * bucket.
template <class F>
__device__ __forceinline__ void segments(const xyzz_t<F>* bk, uint32_t nbuckets, uint32_t nseg, uint32_t nrows,
                                         xyzz_t<F>* out) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nseg * nrows) return;
    uint32_t row = t / nseg, seg = t % nseg;
    uint32_t len = nbuckets / nseg;
    const xyzz_t<F>* b = bk + (uint64_t)row * nbuckets + seg * len;
    xyzz_t<F> run = xyzz_t<F>::inf(), sum = xyzz_t<F>::inf();
    for (int i = len - 1; i >= 0; i--) {
        run.add(b[i]);
        sum.add(run);
    }
    // bucket value of b[i] is seg * len + i + 1; the running sums weighted it by i + 1
    sum.add(run.mul_small(seg * len));
    out[t] = sum;
}

// out[r * ceil(cols/2) + i] = in[r * cols + 2i] + in[r * cols + 2i + 1]
template <class F>
__device__ __forceinline__ void reduce_rows(const xyzz_t<F>* in, uint32_t cols, uint32_t rows, xyzz_t<F>* out) {
    uint32_t half = (cols + 1) / 2;
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= half * rows) return;
    uint32_t r = t / half, i = t % half;
    xyzz_t<F> a = in[(uint64_t)r * cols + 2 * i];
    if (2 * i + 1 < cols) a.add(in[(uint64_t)r * cols + 2 * i + 1]);
    out[t] = a;
}

// Sum of the listed points (the scalars equal to 1): grid-stride partial sums, one per thread.
template <class F>
__device__ __forceinline__ void sum_listed(const affine_t<F>* bases, const uint32_t* list, const uint32_t* count,
                                           xyzz_t<F>* out) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t stride = gridDim.x * blockDim.x;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint32_t k = t; k < *count; k += stride) acc.add_affine(load_affine(&bases[list[k]]));
    out[t] = acc;
}

#define MSM_INSTANTIATE(G, F)                                                                                    \
    extern "C" __global__ void msm_##G##_buckets(const affine_t<F>* bases, const uint32_t* sorted,              \
                                                 const uint32_t* start, const uint32_t* end, uint32_t total,     \
                                                 xyzz_t<F>* out) {                                               \
        buckets<F>(bases, sorted, start, end, total, out);                                                       \
    }                                                                                                            \
    extern "C" __global__ void msm_##G##_gather(const xyzz_t<F>* partial, const uint32_t* ntask,              \
                                                const uint32_t* task_off, uint32_t keys, xyzz_t<F>* bk) {     \
        gather<F>(partial, ntask, task_off, keys, bk);                                                           \
    }                                                                                                            \
    extern "C" __global__ void msm_##G##_segments(const xyzz_t<F>* bk, uint32_t nbuckets, uint32_t nseg,       \
                                                  uint32_t nrows, xyzz_t<F>* out) {                              \
        segments<F>(bk, nbuckets, nseg, nrows, out);                                                             \
    }                                                                                                            \
    extern "C" __global__ void msm_##G##_reduce_rows(const xyzz_t<F>* in, uint32_t cols, uint32_t rows,        \
                                                     xyzz_t<F>* out) {                                           \
        reduce_rows<F>(in, cols, rows, out);                                                                     \
    }                                                                                                            \
    extern "C" __global__ void msm_##G##_sum_listed(const affine_t<F>* bases, const uint32_t* list,            \
                                                    const uint32_t* count, xyzz_t<F>* out) {                     \
        sum_listed<F>(bases, list, count, out);                                                                  \
    }
