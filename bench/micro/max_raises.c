/* How often does a key tile raise a row's running maximum, and by how much?  A CPU simulation on
 * the bench's inputs (standard normal q and k, D=128, scores in base 2: q.k / sqrt(D) * log2 e;
 * 64 rows, 128-key tiles), for a softmax that keeps a lagging reference maximum and moves it only
 * when a tile exceeds it by more than tau: the share of row-tiles and of warp-tiles (16 rows, the
 * unit that would take a fallback branch) after the first tile that would move it.  Run on 2026-11-30
 * (bench/NOTES.md, "A softmax that does not wait for the tile's maximum"):
 *     cc -O2 -o /tmp/max_raises bench/micro/max_raises.c -lm && /tmp/max_raises 4096
 * N=4096: tau 0 (the exact running max) 8.6% of row-tiles, 60% of warp-tiles; tau 2: 0.8% / 12%;
 * tau 3: 0.05% / 0.8%.  N=16384: tau 0 3.5% / 30%; tau 3 0.07% / 1.2%. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
static double gauss(void) { double u = (rand() + 1.0) / (RAND_MAX + 2.0), v = (rand() + 1.0) / (RAND_MAX + 2.0); return sqrt(-2 * log(u)) * cos(2 * M_PI * v); }
int main(int argc, char **argv) {
  int D = 128, N = argc > 1 ? atoi(argv[1]) : 4096, BN = 128, R = 64, T = N / BN;
  double taus[] = {0, 1, 2, 3, 4}; int nt = 5;
  float *k = malloc(sizeof(float) * N * D), q[64][128];
  for (int i = 0; i < N * D; i++) k[i] = gauss();
  for (int r = 0; r < R; r++) for (int c = 0; c < D; c++) q[r][c] = gauss();
  double sc = 1.0 / sqrt(D) * 1.4426950408889634;
  static float s[64][16384];
  for (int r = 0; r < R; r++) for (int j = 0; j < N; j++) { double d = 0; for (int c = 0; c < D; c++) d += q[r][c] * k[j * D + c]; s[r][j] = d * sc; }
  for (int ti = 0; ti < nt; ti++) {
    double tau = taus[ti]; long row_hits = 0, warp_hits = 0, raises = 0;
    for (int w = 0; w < R / 16; w++) {
      float ref[16], run[16];
      for (int r = 0; r < 16; r++) { ref[r] = -INFINITY; for (int j = 0; j < BN; j++) ref[r] = fmaxf(ref[r], s[w * 16 + r][j]); run[r] = ref[r]; }
      for (int t = 1; t < T; t++) {
        int any = 0;
        for (int r = 0; r < 16; r++) {
          float m = -INFINITY; for (int j = t * BN; j < (t + 1) * BN; j++) m = fmaxf(m, s[w * 16 + r][j]);
          if (m > run[r]) { raises++; run[r] = m; }
          if (m > ref[r] + tau) { row_hits++; any = 1; ref[r] = m; }
        }
        warp_hits += any;
      }
    }
    printf("N=%d tau=%.0f: rows re-referenced in %.2f%% of row-tiles, warps in %.2f%% of warp-tiles (plain max raises %.2f%%)\n",
           N, tau, 100.0 * row_hits / (R * (T - 1)), 100.0 * warp_hits / (R / 16 * (T - 1)), 100.0 * raises / (R * (T - 1)));
  }
  return 0;
}
