// 32-bit multiply-add, add and subtract steps with the carry flag, as PTX on the device and as plain C++
// on the host, where cuda/test/host_field.cpp (run by tests/library/field_host.rs) checks the
// field arithmetic against blstrs without a GPU.
//
// On the device each step is one volatile asm statement: nvcc keeps them in program order and
// emits nothing between them that writes the carry flag (the chains in mont.cuh rely on it).
#pragma once
#include <cstdint>

#ifdef __CUDA_ARCH__
#define CARRY_FN __device__ __forceinline__
CARRY_FN uint32_t mul_lo(uint32_t a, uint32_t b) { return a * b; }
CARRY_FN uint32_t mul_hi(uint32_t a, uint32_t b) { return __umulhi(a, b); }
CARRY_FN void mad_lo_cc(uint32_t& d, uint32_t a, uint32_t b) { asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(a), "r"(b)); }
CARRY_FN void madc_lo_cc(uint32_t& d, uint32_t a, uint32_t b) { asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(a), "r"(b)); }
CARRY_FN void madc_hi_cc(uint32_t& d, uint32_t a, uint32_t b) { asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(a), "r"(b)); }
CARRY_FN void add_cc(uint32_t& d, uint32_t a) { asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(d) : "r"(a)); }
CARRY_FN void addc_cc(uint32_t& d, uint32_t a) { asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(d) : "r"(a)); }
CARRY_FN void addc(uint32_t& d, uint32_t a) { asm volatile("addc.u32 %0, %0, %1;" : "+r"(d) : "r"(a)); }
/* subtraction: the flag is the borrow */
CARRY_FN void sub_cc(uint32_t& d, uint32_t a) { asm volatile("sub.cc.u32 %0, %0, %1;" : "+r"(d) : "r"(a)); }
CARRY_FN void subc_cc(uint32_t& d, uint32_t a) { asm volatile("subc.cc.u32 %0, %0, %1;" : "+r"(d) : "r"(a)); }
/* 0 or 0xffffffff: all ones when the chain before borrowed */
CARRY_FN uint32_t borrow_mask() {
    uint32_t m;
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(m));
    return m;
}
#else
#define CARRY_FN inline
/* the emulated carry flag (host tests are single-threaded) */
inline uint32_t carry_flag = 0;
CARRY_FN uint32_t mul_lo(uint32_t a, uint32_t b) { return a * b; }
CARRY_FN uint32_t mul_hi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
CARRY_FN void add_with(uint32_t& d, uint64_t v) {
    v += d;
    d = (uint32_t)v;
    carry_flag = (uint32_t)(v >> 32);
}
CARRY_FN void mad_lo_cc(uint32_t& d, uint32_t a, uint32_t b) { add_with(d, mul_lo(a, b)); }
CARRY_FN void madc_lo_cc(uint32_t& d, uint32_t a, uint32_t b) { add_with(d, (uint64_t)mul_lo(a, b) + carry_flag); }
CARRY_FN void madc_hi_cc(uint32_t& d, uint32_t a, uint32_t b) { add_with(d, (uint64_t)mul_hi(a, b) + carry_flag); }
CARRY_FN void add_cc(uint32_t& d, uint32_t a) { add_with(d, a); }
CARRY_FN void addc_cc(uint32_t& d, uint32_t a) { add_with(d, (uint64_t)a + carry_flag); }
CARRY_FN void addc(uint32_t& d, uint32_t a) { d = d + a + carry_flag; }
CARRY_FN void sub_with(uint32_t& d, uint64_t v) {
    uint64_t r = (uint64_t)d - v;
    d = (uint32_t)r;
    carry_flag = (uint32_t)(r >> 63);
}
CARRY_FN void sub_cc(uint32_t& d, uint32_t a) { sub_with(d, a); }
CARRY_FN void subc_cc(uint32_t& d, uint32_t a) { sub_with(d, (uint64_t)a + carry_flag); }
CARRY_FN uint32_t borrow_mask() { return 0u - carry_flag; }
#endif

// d += s and d −= s over W words, each one carry (borrow) chain; the last carry or borrow stays in
// the flag (borrow_mask reads it).
template <int W>
CARRY_FN void add_words(uint32_t (&d)[W], const uint32_t (&s)[W]) {
    add_cc(d[0], s[0]);
#pragma unroll
    for (int i = 1; i < W; i++) addc_cc(d[i], s[i]);
}
template <int W>
CARRY_FN void sub_words(uint32_t (&d)[W], const uint32_t (&s)[W]) {
    sub_cc(d[0], s[0]);
#pragma unroll
    for (int i = 1; i < W; i++) subc_cc(d[i], s[i]);
}
