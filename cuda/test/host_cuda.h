// Just enough of CUDA's device built-ins to compile kernel sources for the host and run their
// kernels one thread at a time (cuda/test/host_msm.cpp). Kernels that need threads of a block to
// run together (barriers, warp votes and shuffles) compile but stop the program if called.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __launch_bounds__(...)

struct dim3_t {
    uint32_t x = 0, y = 0, z = 0;
};
static dim3_t blockIdx, threadIdx, blockDim, gridDim;

struct uint4 {
    uint32_t x, y, z, w;
};

template <class T>
static inline T __ldg(const T* p) {
    return *p;
}
static inline uint32_t atomicAdd(uint32_t* p, uint32_t v) {
    uint32_t old = *p;
    *p += v;
    return old;
}
using std::max;
using std::min;

[[noreturn]] static inline void host_unsupported(const char* what) {
    fprintf(stderr, "%s needs a real thread block\n", what);
    abort();
}
static inline void __syncthreads() { host_unsupported("__syncthreads"); }
static inline uint32_t __activemask() { host_unsupported("__activemask"); }
static inline uint32_t __ballot_sync(uint32_t, bool) { host_unsupported("__ballot_sync"); }
static inline uint32_t __shfl_up_sync(uint32_t, uint32_t, uint32_t) { host_unsupported("__shfl_up_sync"); }
static inline uint32_t __shfl_sync(uint32_t, uint32_t, uint32_t) { host_unsupported("__shfl_sync"); }
static inline int __popc(uint32_t v) { return __builtin_popcount(v); }
static inline int __ffs(uint32_t v) { return __builtin_ffs(v); }

// Runs kernel(args...) for every thread of a grid, one after another.
template <class K, class... A>
static void launch(uint32_t grid_x, uint32_t grid_y, uint32_t block, K kernel, A... args) {
    gridDim = {grid_x, grid_y, 1};
    blockDim = {block, 1, 1};
    for (uint32_t y = 0; y < grid_y; y++)
        for (uint32_t x = 0; x < grid_x; x++)
            for (uint32_t t = 0; t < block; t++) {
                blockIdx = {x, y, 0};
                threadIdx = {t, 0, 0};
                kernel(args...);
            }
}
