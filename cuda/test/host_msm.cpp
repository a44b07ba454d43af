// Host build of the G1 MSM's windowed path (cuda/msm/pippenger.cuh), its kernels run one thread
// at a time (cuda/test/host_cuda.h), so that the counting sort, the chunked bucket step with its
// gather, the running sums and the row reduction are checked on machines without a GPU.
// tests/library/msm_host.rs compiles this and compares the result with blstrs.
//
// Input (whitespace-separated hex): c wpt nseg n, then n bases (24 words each, affine, Montgomery,
// blst layout), then n scalars (8 words each, canonical). Every scalar takes the windowed path
// (the 0/1 split is not emulated: its kernel votes across a warp). Output: the 48 words of
// Σ scalar·base in XYZZ coordinates, windows combined by doublings as the host does.
#include "host_cuda.h"

#include <vector>

#include "../msm/pippenger.cuh"

MSM_INSTANTIATE(g1, fp_t)

static bool read_words(uint32_t* w, int n) {
    for (int i = 0; i < n; i++)
        if (scanf("%x", &w[i]) != 1) return false;
    return true;
}

static uint32_t blocks(uint64_t n, uint32_t per) { return (uint32_t)std::max<uint64_t>(1, (n + per - 1) / per); }

int main() {
    uint32_t c, wpt, nseg, n;
    if (scanf("%x %x %x %x", &c, &wpt, &nseg, &n) != 4 || c < 2 || c > 22 || wpt == 0 || nseg == 0) return 2;
    std::vector<affine_t<fp_t>> bases(n);
    std::vector<fr_t> s(n);
    for (auto& b : bases)
        if (!read_words(b.x.l, 12) || !read_words(b.y.l, 12)) return 2;
    for (auto& v : s)
        if (!read_words(v.l, 8)) return 2;

    const uint32_t nwin = (MSM_SCALAR_BITS + c - 1) / c, nb = 1u << (c - 1), keys = nwin * nb;
    if (nb % nseg) return 2;
    std::vector<uint32_t> big(n), counts = {0, n};
    for (uint32_t i = 0; i < n; i++) big[i] = i;
    std::vector<uint32_t> hist(keys), start(keys), sorted((size_t)nwin * n);
    launch(blocks(n, 256), 1, 256, msm_hist, s.data(), big.data(), counts.data(), c, nwin, hist.data());
    for (uint32_t k = 0, run = 0; k < keys; k++) start[k] = run, run += hist[k];
    std::vector<uint32_t> cursor = start;
    launch(blocks(n, 256), (nwin + wpt - 1) / wpt, 256, msm_scatter, s.data(), big.data(), counts.data(), c, nwin,
           wpt, cursor.data(), sorted.data());
    for (uint32_t k = 0; k < keys; k++)
        if (cursor[k] != start[k] + hist[k]) return 3; /* the scatter and the histogram disagree */

    const uint64_t chunks = (sorted.size() + MSM_CHUNK - 1) / MSM_CHUNK;
    std::vector<xyzz_t<fp_t>> bk(keys, xyzz_t<fp_t>::inf()), first(chunks), last(chunks);
    launch(blocks(chunks, 128), 1, 128, msm_g1_buckets, bases.data(), sorted.data(), start.data(), cursor.data(),
           keys, bk.data(), first.data(), last.data());
    launch(blocks(keys, 128), 1, 128, msm_g1_gather, first.data(), last.data(), start.data(), cursor.data(), keys,
           bk.data());
    std::vector<xyzz_t<fp_t>> rows((size_t)nseg * nwin);
    launch(blocks(nseg * nwin, 128), 1, 128, msm_g1_segments, bk.data(), nb, nseg, nwin, rows.data());
    for (uint32_t cols = nseg; cols > 1; cols = (cols + 1) / 2) {
        std::vector<xyzz_t<fp_t>> out((size_t)((cols + 1) / 2) * nwin);
        launch(blocks(out.size(), 128), 1, 128, msm_g1_reduce_rows, rows.data(), cols, nwin, out.data());
        rows.swap(out);
    }

    xyzz_t<fp_t> acc = xyzz_t<fp_t>::inf();
    for (int w = (int)nwin - 1; w >= 0; w--) {
        for (uint32_t i = 0; i < c; i++) acc = acc.dbl();
        acc.add(rows[w]);
    }
    for (const fp_t* f : {&acc.X, &acc.Y, &acc.ZZ, &acc.ZZZ})
        for (int i = 0; i < 12; i++) printf("%08x ", f->l[i]);
    printf("\n");
    return 0;
}
