// a = A·w and b = B·w from a precompiled circuit's record (src/groth16/precompiled.rs), so that a
// proof's a and b are made where they are transformed and only its assignment crosses PCIe.
//
// A matrix is CSR: row r's terms are terms[ends[r-1] .. ends[r]], each (var, coeff) as two u32.
// var's bit 31 marks an aux variable (aux[var & 0x7fffffff]), else input[var]; coeff 0 is +1,
// 1 is −1 (no multiplication), any other id indexes coeffs (Montgomery form, as the values are).
// Rows past the matrix's are bellperson's closing constraints, one per input (a: the input, b: 0),
// then zeros up to the domain, so the output is the whole padded evaluation vector.
#pragma once
#include "../ntt/ntt.cuh"

#define R1CS_AUX 0x80000000u

extern "C" __global__ void r1cs_spmv(const uint32_t* ends, const uint2* terms, const fr_t* coeffs, const fr_t* input,
                                     uint32_t n_inputs, const fr_t* aux, uint64_t rows, uint32_t close_inputs,
                                     uint64_t m, fr_t* out) {
    uint64_t r = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (r >= m) return;
    fr_t acc = fr_t::zero();
    if (r < rows) {
        uint32_t t = r ? ends[r - 1] : 0, end = ends[r];
        for (; t < end; t++) {
            uint2 e = terms[t];
            fr_t v = (e.x & R1CS_AUX) ? load_fr_ro(&aux[e.x & ~R1CS_AUX]) : load_fr_ro(&input[e.x]);
            if (e.y == 0)
                acc = acc + v;
            else if (e.y == 1)
                acc = acc - v;
            else
                acc = acc + v * load_fr_ro(&coeffs[e.y]);
        }
    } else if (close_inputs && r - rows < n_inputs) {
        acc = load_fr_ro(&input[r - rows]);
    }
    store_fr(&out[r], acc);
}
