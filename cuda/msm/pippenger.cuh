// Pippenger MSM with signed windows, buckets sorted by index, and a 0/1 split, for G1 and G2.
//
// Host-driven steps (src/gpu/msm.rs runs them in order on one stream):
//   1. msm_*_classify: scalars (canonical) equal to 0 are dropped, 1s go to a list that is summed
//      directly (Filecoin witnesses are mostly bits), the rest go to the windowed path.
//   2. msm_hist / scan / msm_scatter: a counting sort of (window, |digit|) keys; each entry holds
//      the point index and the digit's sign in bit 31.
//   3. msm_*_buckets: the sorted entries are cut into equal chunks of MSM_CHUNK, one thread a
//      chunk, so every thread makes the same number of mixed XYZZ additions whatever the bucket
//      sizes (per-bucket tasks left warps waiting on their longest task: at c = 20 a third of the
//      lanes idled). A bucket that lies inside one chunk is written whole; a chunk's pieces of
//      buckets that cross its edges go to two per-chunk slots, which msm_*_gather adds up.
//   4. msm_*_segments: each thread turns a run of buckets into sum(b * B_b) by running sums.
//   5. msm_*_reduce_rows: pairwise sums per row, repeated until one point per window is left.
// The host combines the windows (Horner, c doublings each) and the 1s in blstrs.
#pragma once
#include "../ec/xyzz.cuh"
#include "../ff/bls12_381.cuh"

/* scalars are < r < 2^255; windows cover 256 bits so the last signed digit never carries */
#define MSM_SCALAR_BITS 256
#define MSM_SIGN_BIT 0x80000000u
/* sorted entries one thread adds in the bucket step */
#define MSM_CHUNK 256

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

// Appends `value` to `list` where `pred` holds, one atomic a block on `count` (one a warp made
// 8.4 M atomics on the same two counters for 2^27 scalars, ~10 ms of serialized updates). The
// block's entries land together and in index order. Every thread of the block must call it.
#define MSM_INDEX_BLOCK 256
__device__ __forceinline__ void block_append(bool pred, uint32_t value, uint32_t* list, uint32_t* count) {
    __shared__ uint32_t warp_off[MSM_INDEX_BLOCK / 32];
    __shared__ uint32_t base;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t mask = __ballot_sync(0xffffffffu, pred);
    if (lane == 0) warp_off[warp] = __popc(mask);
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t run = 0;
        for (uint32_t w = 0; w < blockDim.x / 32; w++) {
            uint32_t c = warp_off[w];
            warp_off[w] = run;
            run += c;
        }
        base = run ? atomicAdd(count, run) : 0;
    }
    __syncthreads();
    if (pred) list[base + warp_off[warp] + __popc(mask & ((1u << lane) - 1))] = value;
    __syncthreads(); /* warp_off and base are reused by the next call */
}

// counts[0] = number of 1s, counts[1] = number of other nonzero scalars. blockDim.x = MSM_INDEX_BLOCK.
extern "C" __global__ void __launch_bounds__(MSM_INDEX_BLOCK)
msm_classify(const fr_t* s, uint32_t n, uint32_t* ones, uint32_t* big, uint32_t* counts) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    bool valid = i < n;
    fr_t v = valid ? s[i] : fr_t::zero();
    bool nz = !v.is_zero();
    uint32_t hi = 0;
#pragma unroll
    for (int k = 1; k < 8; k++) hi |= v.l[k];
    bool is_one = nz && hi == 0 && v.l[0] == 1;
    block_append(valid && is_one, i, ones, &counts[0]);
    block_append(valid && nz && !is_one, i, big, &counts[1]);
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

// Exclusive prefix sum of the bucket counts in three launches: msm_tile_sums (one block a tile of
// MSM_SCAN_TILE counts), msm_scan over the tile sums (one block), msm_tile_scan (each tile again,
// offset by its tile's sum). One block over all counts took 18 ms for the 6.8 M keys of c = 20
// (each thread walking ~6,600 counts alone) and 67 ms for c = 22's 25 M.
#define MSM_SCAN_THREADS 1024
#define MSM_SCAN_PER 8
#define MSM_SCAN_TILE (MSM_SCAN_THREADS * MSM_SCAN_PER)

// The block-wide exclusive prefix sum of each thread's v (blockDim.x = MSM_SCAN_THREADS); *total
// gets the block's sum.
__device__ __forceinline__ uint32_t block_exclusive(uint32_t v, uint32_t* total) {
    __shared__ uint32_t warp_sum[MSM_SCAN_THREADS / 32];
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint32_t inc = v;
#pragma unroll
    for (uint32_t off = 1; off < 32; off <<= 1) {
        uint32_t u = __shfl_up_sync(0xffffffffu, inc, off);
        if (lane >= off) inc += u;
    }
    if (lane == 31) warp_sum[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        uint32_t w = warp_sum[lane], winc = w;
#pragma unroll
        for (uint32_t off = 1; off < 32; off <<= 1) {
            uint32_t u = __shfl_up_sync(0xffffffffu, winc, off);
            if (lane >= off) winc += u;
        }
        warp_sum[lane] = winc - w;
        if (lane == 31) *total = winc;
    }
    __syncthreads();
    return warp_sum[warp] + inc - v;
}

// The sum of thread t's MSM_SCAN_PER counts of tile blockIdx.x.
__device__ __forceinline__ uint32_t thread_counts(const uint32_t* in, uint32_t n, uint32_t (&c)[MSM_SCAN_PER]) {
    const uint64_t base = (uint64_t)blockIdx.x * MSM_SCAN_TILE + threadIdx.x * MSM_SCAN_PER;
    uint32_t sum = 0;
#pragma unroll
    for (int i = 0; i < MSM_SCAN_PER; i++) {
        c[i] = base + i < n ? in[base + i] : 0;
        sum += c[i];
    }
    return sum;
}

extern "C" __global__ void msm_tile_sums(const uint32_t* in, uint32_t n, uint32_t* tile_sum) {
    __shared__ uint32_t total;
    uint32_t c[MSM_SCAN_PER];
    block_exclusive(thread_counts(in, n, c), &total);
    if (threadIdx.x == 0) tile_sum[blockIdx.x] = total;
}

// Exclusive prefix sum of n counters, one block of MSM_SCAN_THREADS threads (for the tile sums).
extern "C" __global__ void msm_scan(const uint32_t* in, uint32_t* out, uint32_t n) {
    __shared__ uint32_t total;
    uint32_t t = threadIdx.x;
    uint32_t per = (n + MSM_SCAN_THREADS - 1) / MSM_SCAN_THREADS;
    uint32_t lo = t * per, hi = min(n, lo + per);
    uint32_t sum = 0;
    for (uint32_t i = lo; i < hi; i++) sum += in[i];
    uint32_t run = block_exclusive(sum, &total);
    for (uint32_t i = lo; i < hi; i++) {
        uint32_t v = in[i];
        out[i] = run;
        run += v;
    }
}

extern "C" __global__ void msm_tile_scan(const uint32_t* in, uint32_t n, const uint32_t* tile_off, uint32_t* out) {
    __shared__ uint32_t total;
    uint32_t c[MSM_SCAN_PER];
    uint32_t run = tile_off[blockIdx.x] + block_exclusive(thread_counts(in, n, c), &total);
    const uint64_t base = (uint64_t)blockIdx.x * MSM_SCAN_TILE + threadIdx.x * MSM_SCAN_PER;
#pragma unroll
    for (int i = 0; i < MSM_SCAN_PER; i++) {
        if (base + i < n) out[base + i] = run;
        run += c[i];
    }
}

// Places each (point index | sign) at its bucket's cursor; cursors start at the scan and end at
// the bucket's end. One thread a scalar and group of `wpt` windows (blockIdx.y), reading the
// scalar once a group: its digits first, then every window's cursor increment, then the stores,
// so that the increments (each store needs its old value) are in flight together instead of one
// round trip after another (increment-then-store a window at a time: 110 ms at 2^27, c = 16).
// The host sizes the groups so that one group's write fronts, a 32-byte sector a bucket, stay in
// L2 while its blocks run (blocks start in blockIdx order): at c = 20 the 13 windows' 6.8 M
// fronts did not, and each 4-byte store went to memory alone (163 ms at 2^27).
#define MSM_SCATTER_BATCH 16
extern "C" __global__ void msm_scatter(const fr_t* s, const uint32_t* big, const uint32_t* counts, uint32_t c,
                                       uint32_t nwin, uint32_t wpt, uint32_t* cursor, uint32_t* sorted) {
    uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= counts[1]) return;
    const uint32_t idx = big[k];
    const fr_t v = s[idx];
    const uint32_t lo = blockIdx.y * wpt, hi = min(nwin, lo + wpt);
    uint32_t carry = 0;
    for (uint32_t w = 0; w < lo; w++) next_digit(v, w, c, carry);
    for (uint32_t w0 = lo; w0 < hi; w0 += MSM_SCATTER_BATCH) {
        uint32_t d[MSM_SCATTER_BATCH], pos[MSM_SCATTER_BATCH];
#pragma unroll
        for (uint32_t i = 0; i < MSM_SCATTER_BATCH; i++) d[i] = w0 + i < hi ? next_digit(v, w0 + i, c, carry) : 0;
#pragma unroll
        for (uint32_t i = 0; i < MSM_SCATTER_BATCH; i++)
            if (d[i]) pos[i] = atomicAdd(&cursor[(w0 + i) * (1u << (c - 1)) + (d[i] & ~MSM_SIGN_BIT) - 1], 1);
#pragma unroll
        for (uint32_t i = 0; i < MSM_SCATTER_BATCH; i++)
            if (d[i]) sorted[pos[i]] = idx | (d[i] & MSM_SIGN_BIT);
    }
}

// The bucket holding sorted entry p: the last key whose start is <= p (empty buckets share
// their start with the next key, so the last one is the bucket that holds p). `lo` is a key at
// or before it.
__device__ __forceinline__ uint32_t bucket_of(const uint32_t* start, uint32_t keys, uint32_t lo, uint32_t p) {
    // the next bucket is usually the next key; a skewed distribution leaves runs of empty keys
#pragma unroll 1
    for (uint32_t k = 0; k < 4; k++) {
        if (lo + 1 >= keys || start[lo + 1] > p) return lo;
        lo++;
    }
    uint32_t hi = keys;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (start[mid] <= p)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// Stores a chunk's sum over bucket b: whole into bk when the bucket lies inside one chunk;
// otherwise into last[t] when the bucket begins in chunk t (it is then t's last bucket), or
// into first[t] when it began in an earlier chunk (then it is t's first bucket).
template <class F>
__device__ __forceinline__ void put_piece(const xyzz_t<F>& acc, uint32_t b, uint32_t t, const uint32_t* start,
                                          const uint32_t* end, xyzz_t<F>* bk, xyzz_t<F>* first, xyzz_t<F>* last) {
    uint32_t c0 = start[b] / MSM_CHUNK, c1 = (end[b] - 1) / MSM_CHUNK;
    if (c0 == c1)
        bk[b] = acc;
    else if (c0 == t)
        last[t] = acc;
    else
        first[t] = acc;
}

// Thread t adds sorted entries [t * MSM_CHUNK, (t + 1) * MSM_CHUNK) into their buckets.
template <class F>
__device__ __forceinline__ void buckets(const affine_t<F>* bases, const uint32_t* sorted, const uint32_t* start,
                                        const uint32_t* end, uint32_t keys, xyzz_t<F>* bk, xyzz_t<F>* first,
                                        xyzz_t<F>* last) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t filled = end[keys - 1];
    if ((uint64_t)t * MSM_CHUNK >= filled) return;
    uint32_t lo = t * MSM_CHUNK, hi = min(filled, lo + MSM_CHUNK);
    uint32_t b = bucket_of(start, keys, 0, lo);
    uint32_t stop = min(end[b], hi);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint32_t p = lo; p < hi; p++) {
        if (p == stop) {
            put_piece(acc, b, t, start, end, bk, first, last);
            b = bucket_of(start, keys, b, p);
            stop = min(end[b], hi);
            acc = xyzz_t<F>::inf();
        }
        uint32_t e = sorted[p];
        affine_t<F> q = load_affine(&bases[e & ~MSM_SIGN_BIT]);
        if (e & MSM_SIGN_BIT) q.y = q.y.neg();
        acc.add_affine(q);
    }
    put_piece(acc, b, t, start, end, bk, first, last);
}

// bk[j] for each bucket that crosses chunk edges: the piece of the chunk it begins in, then the
// first piece of every chunk up to the one it ends in. Buckets inside one chunk are already
// written; empty ones stay zero (infinity).
template <class F>
__device__ __forceinline__ void gather(const xyzz_t<F>* first, const xyzz_t<F>* last, const uint32_t* start,
                                       const uint32_t* end, uint32_t keys, xyzz_t<F>* bk) {
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= keys || start[j] == end[j]) return;
    uint32_t c0 = start[j] / MSM_CHUNK, c1 = (end[j] - 1) / MSM_CHUNK;
    if (c0 == c1) return;
    xyzz_t<F> acc = last[c0];
    for (uint32_t t = c0 + 1; t <= c1; t++) acc.add(first[t]);
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
                                                 const uint32_t* start, const uint32_t* end, uint32_t keys,      \
                                                 xyzz_t<F>* bk, xyzz_t<F>* first, xyzz_t<F>* last) {             \
        buckets<F>(bases, sorted, start, end, keys, bk, first, last);                                            \
    }                                                                                                            \
    extern "C" __global__ void msm_##G##_gather(const xyzz_t<F>* first, const xyzz_t<F>* last,                 \
                                                const uint32_t* start, const uint32_t* end, uint32_t keys,       \
                                                xyzz_t<F>* bk) {                                                 \
        gather<F>(first, last, start, end, keys, bk);                                                            \
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
