// The one translation unit build.rs compiles into the embedded fatbin: every kernel snarkd launches.
#include "msm/pippenger.cuh"
#include "ntt/ntt.cuh"
#include "r1cs/spmv.cuh"

MSM_INSTANTIATE(g1, fp_t)
MSM_INSTANTIATE(g2, fp2_t)
