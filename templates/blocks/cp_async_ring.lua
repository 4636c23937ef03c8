-- The cp.async ring of the mma.sync kernels, as text: `stages` K/V tiles in
-- flight.  The prologue issues the first STAGES-1 tiles; each iteration of
-- the key loop issues tile t+STAGES-1, then waits until tile t has landed.
-- Every iteration commits a group, empty or not, so "at most STAGES-1 groups
-- pending" always means "tile t is here".  The kernel defines load_kv(tile)
-- and n_tiles, and continues the loop body after this text.
--   .text      prologue and loop head together
--   .prologue, .loop  the two apart, for a kernel that does something between
--              them (the f16 kernel waits there for Q, whose copy it issued
--              first, so Q and the first K/V tiles are in flight together)
local R = {}
R.prologue = [[
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < n_tiles) load_kv(s);
    cp_async_commit();
  }
]]
R.loop = [[

  for (int t = 0; t < n_tiles; t++) {
    if (t + STAGES - 1 < n_tiles) load_kv(t + STAGES - 1);
    cp_async_commit();                 // possibly empty: keeps the group count uniform
    cp_async_wait<STAGES - 1>();       // tile t has landed
    __syncthreads();
]]
R.text = R.prologue .. R.loop
return R
