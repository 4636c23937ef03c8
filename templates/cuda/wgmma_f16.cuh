// A bf16/fp16 wgmma operand's shared-memory descriptor (blocks/wgmma_f16.lua
// says what the fields are); reads SWIZZLE_MODE.
MX_INLINE u64 smem_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr >> 4) & 0x3FFF) | ((u64)((lbo >> 4) & 0x3FFF) << 16) |
         ((u64)((sbo >> 4) & 0x3FFF) << 32) | (SWIZZLE_MODE << 62);
}
