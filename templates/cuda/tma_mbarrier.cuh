MX_INLINE void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the async proxy (the copy engine).
MX_INLINE void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// True in one lane of the calling warp, which all its lanes must call: the
// copies' issuer inside a warp-uniform branch (wgmma_common.lua's C.KERNEL).
MX_INLINE bool elect_one() {
  u32 is_elected;
  asm volatile("{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 %0, 1, 0, p; }" : "=r"(is_elected));
  return is_elected != 0;
}
// The issuing thread's arrival, announcing how many bytes the copies will bring.
MX_INLINE void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
// A plain arrival (count 1), for barriers that count consumers.
MX_INLINE void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
// Spins until the barrier's phase with this parity has completed.  The loop is
// in C so the asm needs no labels (an inlined asm label would be duplicated).
MX_INLINE void mbar_wait(u32 bar, u32 parity) {
  u32 done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}

// One box of a rank-4 tensor map into shared memory; coordinates are in
// elements, innermost first ({d0, row0, head, batch}).  Rows and columns past
// the tensor's extent arrive as zeros and still count toward the bytes.
MX_INLINE void tma_load_4d(u32 dst, const void *map, int c0, int c1, int c2, int c3, u32 bar) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
MX_INLINE void tma_prefetch_map(const void *map) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(map) : "memory");
}
