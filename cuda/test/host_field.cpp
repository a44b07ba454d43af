// Host build of the field arithmetic in cuda/ff (the PTX carry steps emulated in carry.cuh), so
// the Montgomery multiplication the kernels use is checked on machines without a GPU.
// tests/library/field_host.rs compiles this with the system C++ compiler and feeds it pairs of
// field elements; each input line is "fp|fr|fp2 a0 .. aN-1 b0 .. bN-1" (hex u32 limbs, Montgomery
// form; an Fp2 element is c0's limbs then c1's), each output line the limbs of a·b, a + b,
// a − b and a².
#include "host_cuda.h"

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include "../ff/bls12_381.cuh"

template <class F>
static void run(FILE* in) {
    F a, b;
    for (int i = 0; i < F::N; i++)
        if (fscanf(in, "%x", &a.l[i]) != 1) return;
    for (int i = 0; i < F::N; i++)
        if (fscanf(in, "%x", &b.l[i]) != 1) return;
    for (const F& r : {a * b, a + b, a - b, a.sqr()}) {
        for (int i = 0; i < F::N; i++) printf("%08x ", r.l[i]);
    }
    printf("\n");
}

static bool read_fp2(FILE* in, fp2_t& v) {
    for (fp_t* c : {&v.c0, &v.c1})
        for (int i = 0; i < fp_t::N; i++)
            if (fscanf(in, "%x", &c->l[i]) != 1) return false;
    return true;
}

static void run_fp2(FILE* in) {
    fp2_t a, b;
    if (!read_fp2(in, a) || !read_fp2(in, b)) return;
    for (const fp2_t& r : {a * b, a + b, a - b, a.sqr()}) {
        for (const fp_t& c : {r.c0, r.c1})
            for (int i = 0; i < fp_t::N; i++) printf("%08x ", c.l[i]);
    }
    printf("\n");
}

int main() {
    char field[8];
    while (scanf("%7s", field) == 1) {
        if (!strcmp(field, "fp"))
            run<fp_t>(stdin);
        else if (!strcmp(field, "fp2"))
            run_fp2(stdin);
        else if (!strcmp(field, "fr"))
            run<fr_t>(stdin);
        else
            return 2;
    }
    return 0;
}
