// A block of the TMA-fed wgmma schedules (f16's, int8-fp8's and the FP4
// families'): where its tiles and the ring's barriers sit in shared memory,
// which query rows, head and keys it owns, and the warp roles' set-up.
// Each family's block (cuda/wgmma_ring.cuh's GridBlock, cuda/int8_fp8_block.cuh's
// Block) adds its own copies.  The barriers are 8 bytes each from bar_q:
// Q's, then full_k[STAGES], full_v[STAGES] and empty[STAGES].  Reads
// STAGES, CONSUMERS, BM, REGS_PRODUCER, REGS_CONSUMER, SM_Q, SM_K, SM_V,
// SM_BAR and CAUSAL.
struct TmaBlock {
  u32 base, sQ, sK, sV, bar_q;
  int warp;                  // from lane 0: a uniform branch (place_ring says why)
  int head, batch, kv_head, m0;
  int n_tiles;               // all keys, or (causal) up to the last row's diagonal
  const void *map_q, *map_k, *map_v;

  MX_INLINE u32 bar_k(int s) const { return bar_q + 8 * (1 + s); }
  MX_INLINE u32 bar_v(int s) const { return bar_q + 8 * (1 + STAGES + s); }
  MX_INLINE u32 bar_empty(int s) const { return bar_q + 8 * (1 + 2 * STAGES + s); }
};

// Thread 0 initialises the ring's barriers: Q's and each slot's full K and V
// wait for one arrival (the copies' issuer, with their bytes), each slot's
// empty barrier for every consumer thread; and prefetches the tensor maps.
// The caller's __syncthreads() makes them visible to the block.
MX_INLINE void init_ring(const TmaBlock &b) {
  if (threadIdx.x == 0) {
    tma_prefetch_map(b.map_q); tma_prefetch_map(b.map_k); tma_prefetch_map(b.map_v);
    mbar_init(b.bar_q, 1);
    for (int s = 0; s < STAGES; s++) {
      mbar_init(b.bar_k(s), 1);
      mbar_init(b.bar_v(s), 1);
      mbar_init(b.bar_empty(s), CONSUMERS * 128);   // every consumer thread releases the slot
    }
    mbar_init_fence();
  }
}

// The shared-memory map and the tensor maps (0 Q, 1 K, 2 V); the unit of
// work is left to the caller.
MX_INLINE void place_ring(TmaBlock &b, u8 *smem, const mx_kernel_args &a) {
  // Swizzled tiles need 1024-byte alignment (the 128B pattern spans 8 rows).
  b.base = (smem_addr(smem) + 1023u) & ~1023u;
  b.sQ = b.base + SM_Q, b.sK = b.base + SM_K, b.sV = b.base + SM_V;
  b.bar_q = b.base + SM_BAR;
  // Broadcast from lane 0 so that the compiler knows it is the same in every
  // lane: a branch on it is then a uniform branch, which the warps that fail
  // it jump over whole (the copies' issue).
  b.warp = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
  b.map_q = &a.tmap[0], b.map_k = &a.tmap[1], b.map_v = &a.tmap[2];
}

// Grid (query blocks, heads_q, batch): the block's unit, but for its key
// tiles (n_tiles = key_tiles(m0, a)), which the caller counts where its
// register pressure is lowest: counted here, before int8-fp8's scale
// indices, it made ptxas spill 16 bytes at D=64 with 4 blocks an SM.
MX_INLINE void place_block(TmaBlock &b, u8 *smem, const mx_kernel_args &a) {
  place_ring(b, smem, a);
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  b.head = blockIdx.y, b.batch = blockIdx.z, b.kv_head = b.head / a.gqa;
  b.m0 = m_block * BM;
}

// The producer's thread: Q, then every key tile into its slot, once the
// consumers have released the tile STAGES before it there.
template <class Ring> MX_INLINE void produce_tiles(const Ring &b) {
  b.load_q();
  for (int t = 0; t < b.n_tiles; t++) {
    const int slot = t % STAGES;
    if (t >= STAGES) mbar_wait(b.bar_empty(slot), (t / STAGES - 1) & 1);   // tile t - STAGES released
    b.load_kv(t);
  }
}

// setmaxnreg: the producer warpgroup gives registers away, the consumers
// take them (0: the header asks for no split).
MX_INLINE void producer_registers() {
  if (REGS_PRODUCER) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(REGS_PRODUCER));
}
MX_INLINE void consumer_registers() {
  if (REGS_CONSUMER) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(REGS_CONSUMER));
}
