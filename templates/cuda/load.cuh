// Tile loads: global -> shared memory with cp.async, ROWS x D_PAD halves per
// tile, row stride RS.  Rows past the sequence and columns past D are zero-
// filled, which is how the kernel pads any head dimension without the caller
// padding.  The copy width follows ALIGN (elements per vector access):
// cp.async moves 16, 8 or 4 bytes, so ALIGN=1 (odd head dims) falls back to
// plain 2-byte loads.

// One 16-byte chunk (8 halves) of a row; `base` is any valid address, used
// as the source of zero-filled copies so no lane reads out of bounds.
MX_INLINE void copy_chunk(u32 dst, const u16 *src, const u16 *base, bool row_ok, int col) {
  if constexpr (ALIGN == 8) {
    const bool ok = row_ok && col < D;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(ok ? src : base), "r"(ok ? 16 : 0));
  } else if constexpr (ALIGN == 4) {
#pragma unroll
    for (int j = 0; j < 2; j++) {
      const bool ok = row_ok && col + 4 * j < D;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(dst + 8 * j), "l"(ok ? src + 4 * j : base), "r"(ok ? 8 : 0));
    }
  } else if constexpr (ALIGN == 2) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const bool ok = row_ok && col + 2 * j < D;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(dst + 4 * j), "l"(ok ? src + 2 * j : base), "r"(ok ? 4 : 0));
    }
  } else {
#pragma unroll
    for (int j = 0; j < 8; j++) {
      u16 x = 0;
      if (row_ok && col + j < D) x = src[j];
      asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst + 2 * j), "h"(x));
    }
  }
}

// Shared tiles are addressed either by 32-bit shared address or, in kernels
// that keep generic pointers (the int8 kernels' V ring), by pointer.
MX_INLINE u32 tile_addr(u32 tile, int r, int col) { return tile + (r * RS + col) * 2; }
MX_INLINE u32 tile_addr(u16 *tile, int r, int col) { return smem_addr(tile + r * RS + col); }

// Chunk `col` of tile row r from slice row row0 + r (seq stride `ss`); rows
// at or past `rows` become zeros.
template <typename Tile>
MX_INLINE void load_chunk(Tile tile, const u16 *g, i64 ss, int row0, int rows, int r, int col) {
  const bool row_ok = row0 + r < rows;
  const u16 *src = g + (row_ok ? (i64)(row0 + r) * ss : 0) + col;
  copy_chunk(tile_addr(tile, r, col), src, g, row_ok, col);
}

// Rows [row0, row0 + ROWS) of a [seq, D] slice into a shared tile, for any
// D_PAD and block size: chunk c of the tile is thread c % THREADS's.
template <int ROWS, typename Tile>
MX_INLINE void load_tile_chunks(Tile tile, const u16 *g, i64 ss, int row0, int rows) {
  constexpr int CPR = D_PAD / 8;                  // 16-byte chunks per row
  constexpr int CHUNKS = ROWS * CPR;
#pragma unroll
  for (int i = 0; i < (CHUNKS + THREADS - 1) / THREADS; i++) {
    const int c = threadIdx.x + i * THREADS;
    if (CHUNKS % THREADS != 0 && c >= CHUNKS) break;
    load_chunk(tile, g, ss, row0, rows, c / CPR, (c % CPR) * 8);
  }
}

// The same tile by shared address.  Where a row's chunks divide the block,
// each thread copies one fixed column of every RSTEP-th row: its addresses
// are a per-thread base plus compile-time row offsets, which ptxas keeps in
// fewer registers (at D=128, 128x64 with 4 warps, the chunk order above
// spills 32 bytes and this one none).
template <int ROWS>
MX_INLINE void load_tile(u32 tile, const u16 *g, i64 ss, int row0, int rows) {
  constexpr int CPR = D_PAD / 8;
  if constexpr (THREADS % CPR != 0) {
    load_tile_chunks<ROWS>(tile, g, ss, row0, rows);
  } else {
    constexpr int RSTEP = THREADS / CPR;
    const int r0 = threadIdx.x / CPR, col = threadIdx.x % CPR * 8;
#pragma unroll
    for (int i = 0; i < (ROWS + RSTEP - 1) / RSTEP; i++) {
      if (ROWS % RSTEP != 0 && r0 + i * RSTEP >= ROWS) break;
      load_chunk(tile, g, ss, row0, rows, r0 + i * RSTEP, col);
    }
  }
}

// The int8 kernels' V ring passes pointers and keeps the chunk order it was
// tuned with (the strided one above costs it registers).
template <int ROWS>
MX_INLINE void load_tile(u16 *tile, const u16 *g, i64 ss, int row0, int rows) {
  load_tile_chunks<ROWS>(tile, g, ss, row0, rows);
}
