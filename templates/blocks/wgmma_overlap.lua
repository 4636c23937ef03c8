-- FlashAttention-3's two overlaps for a consumer warpgroup (sm_90a), used by
-- families/f16_wgmma.lua when overlap=1 (two consumer warpgroups and a
-- producer):
--
-- Inter-warpgroup ping-pong.  Each consumer warpgroup w owns named barrier
-- SCHED_BAR + w (256 threads: its own 128 bar.sync there, the other
-- warpgroup's 128 bar.arrive there).  A warpgroup issues its MMAs only between
-- sched_wait (bar.sync on its own barrier) and sched_pass (bar.arrive on the
-- other's), so the two warpgroups take turns on the tensor cores and the
-- exponentials of one run under the other's MMAs.  Warpgroup 1 passes once
-- before its first turn (the kick-off: warpgroup 0 goes first) and not after
-- its last, so over n turns each barrier sees n bar.syncs and n bar.arrives:
-- none is left waiting at exit.  A warpgroup cannot arrive twice on one
-- barrier generation: its next pass comes after its next wait, which needs
-- the other warpgroup's pass, which comes after that warpgroup's wait.
--
-- Intra-warpgroup overlap.  Turn t issues S(t) = Q K(t)^T and then
-- O += P(t-1) V(t-1) as two commit groups; wgmma.wait_group 1 lets the
-- softmax of S(t) start while P(t-1) V(t-1) still runs.  The softmax is
-- split: softmax_scores updates the row max and sum and returns the factor
-- alpha by which O must shrink; rescale_o applies it once the P V group is
-- done (wait_group 0).  Live across a turn: O, S(t) and P(t-1) packed.
--
-- Where that wait stands.  At the end of the loop body (after the softmax)
-- ptxas hoisted it above the softmax, which then ran after P V instead of
-- under it (ncu on the H200: 14% of the consumers' samples stalled on it).
-- So the wait, O's rescale and P's packing head the next turn instead, where
-- the loop's back edge keeps them after the softmax: +3.5-4% for the f16
-- kernels (H200, 2026-11-29; bench/NOTES.md).  S(t) then holds P(t) across
-- the turn boundary.
--
-- The family brings its operands' pieces, called by the turns below:
--   issue_qk(acc, desc_q, desc_k)  S = Q K^T into `acc`, one commit group
--   issue_pv(o, pa, desc_v)        O += P V, one commit group
--   pack_p(pa, s)                  P as the A operand of issue_pv
local U = require("util")
local O = {}

local SCHED = [[
constexpr int SCHED_BAR = ${SCHED_BAR};   // named barriers SCHED_BAR + consumer warpgroup
// Waits for this warpgroup's turn on the tensor cores.
MX_INLINE void sched_wait(int wg) { asm volatile("bar.sync %0, 256;" :: "r"(SCHED_BAR + wg) : "memory"); }
// Hands the turn to the other warpgroup (does not wait).
MX_INLINE void sched_pass(int wg) { asm volatile("bar.arrive %0, 256;" :: "r"(SCHED_BAR + 1 - wg) : "memory"); }
]]

-- The bf16/fp16 operands' pieces (families/f16_wgmma.lua).
O.F16_ISSUE = [[
// S = Q K^T for the K tile `desc_k` points at: D_PAD/16 k-steps, one commit group.
MX_INLINE void issue_qk(float (&s)[1][NT][4], u64 desc_q, u64 desc_k) {
  reg_fence(s);
  wgmma_fence();
#pragma unroll
  for (int kd = 0; kd < KD; kd++) {
    const int panel = kd / (W / 16), step = (kd % (W / 16)) * 32;
    wgmma_qk(s, desc_q + (panel * BM * ROW_BYTES + step) / 16, desc_k + (panel * BN * ROW_BYTES + step) / 16, kd > 0);
  }
  wgmma_commit();
}

// O += P V for the V tile `desc_v` points at: BN/16 k-steps, one commit group.
MX_INLINE void issue_pv(float (&o)[1][DT][4], const u32 (&pa)[BN / 16][4], u64 desc_v) {
  reg_fence(o);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++) wgmma_pv(o, pa[kk], desc_v + kk * 16 * ROW_BYTES / 16);
  wgmma_commit();
}
]]

O.F16_PACK = [[
// P to the A operand in registers: k16 step kk covers S chunks 2kk, 2kk+1.
MX_INLINE void pack_p(u32 (&pa)[BN / 16][4], const float (&s)[1][NT][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++) {
    pa[kk][0] = pack_in(s[0][2 * kk][0], s[0][2 * kk][1]);
    pa[kk][1] = pack_in(s[0][2 * kk][2], s[0][2 * kk][3]);
    pa[kk][2] = pack_in(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
    pa[kk][3] = pack_in(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
#pragma unroll
    for (int i = 0; i < 4; i++) reg_fence(pa[kk][i]);
  }
}
]]

local SOFTMAX = [[
// The online softmax of one tile without touching O: S becomes P against the
// new row maximum, the running sum is rescaled and extended, and alpha[h] is
// what O's rows must be multiplied by (exp2(old max - new max)).
MX_INLINE void softmax_scores(float (&s)[1][NT][4], float (&row_max)[1][2], float (&row_sum)[1][2], float (&alpha)[2],
                              float scale_log2) {
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float m = MX_NEG_INF;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) m = fmaxf(m, fmaxf(s[0][nt][2 * h], s[0][nt][2 * h + 1]));
    m = fmaxf(row_max[0][h], quad_max(m) * scale_log2);
    // A row that has seen only masked keys keeps max -inf; subtracting 0
    // instead keeps exp2 at 0 rather than NaN.
    const float base = m == MX_NEG_INF ? 0.f : m;
    alpha[h] = fast_exp2(row_max[0][h] - base);
    row_max[0][h] = m;
    float sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
      for (int e = 2 * h; e < 2 * h + 2; e++) {
        s[0][nt][e] = fast_exp2(fmaf(s[0][nt][e], scale_log2, -base));
        sum += s[0][nt][e];
      }
    row_sum[0][h] = row_sum[0][h] * alpha[h] + sum;
  }
}

// O *= alpha per row half, skipped when no lane of the warp needs it.
MX_INLINE void rescale_o(float (&o)[1][DT][4], const float (&alpha)[2]) {
#pragma unroll
  for (int h = 0; h < 2; h++)
    if (__any_sync(0xffffffffu, alpha[h] != 1.f))
#pragma unroll
      for (int dt = 0; dt < DT; dt++) { o[0][dt][2 * h] *= alpha[h]; o[0][dt][2 * h + 1] *= alpha[h]; }
}
]]

-- The device functions of the turns.  p.sched_bar: the first of the two named
-- barrier ids (not 0: __syncthreads); p.issue and p.pack: the family's
-- issue_qk/issue_pv and pack_p.
function O.block(p)
  return U.fill(table.concat({ SCHED, p.issue, SOFTMAX, p.pack }, "\n"), { SCHED_BAR = p.sched_bar })
end

-- The consumer warpgroups' loop: turn 0 issues S(0) only, turn t >= 1 S(t)
-- and P(t-1) V(t-1), the last P V runs outside the turns.  Both warpgroups
-- walk all n_tiles (masking what their rows do not see), so they take the
-- same number of turns; each P V is closed at the head of the next turn
-- (above).  Hooks (C text):
--   decls   the turns' registers: s, alpha, pa
--   acc     the accumulator issue_qk writes (s)
--   scale   the factor softmax_scores applies to s (to base 2)
--   k_step, v_step  a ring slot's size in descriptor units (16 bytes)
--   persistent  true: the turns of one work unit of a persistent kernel,
--          whose ring position starts at g (blocks/wgmma_common.lua)
local TURNS = [[
    if (n_tiles > 0) {
${decls}
      if (wg == 1) sched_pass(wg);     // kick-off: warpgroup 0 takes the first turn

      // Turn 0: S(0) only.
      mbar_wait(bar_k(${slot0}), ${phase0});
      sched_wait(wg);
      issue_qk(${acc}, desc_q, ${desc_k0});
      if (wg == 0 || n_tiles > 1) sched_pass(wg);   // warpgroup 1 does not pass after its last turn
      wgmma_wait<0>();
      reg_fence(${acc});
      ${q_done0}
      mask_tile(s, ${mtile0}, warp_row0, a);
      softmax_scores(s, row_max, row_sum, alpha, ${scale});
      ${turn0_end}
${open_unit}

      for (int t = 1; t < n_tiles; t++) {
        const int slot = ${rt} % STAGES, prev = ${rt1} % STAGES;
${head}
        mbar_wait(bar_k(slot), (${rt} / STAGES) & 1);
        mbar_wait(bar_v(prev), (${rt1} / STAGES) & 1);
        sched_wait(wg);
        issue_qk(${acc}, desc_q, desc_k + slot * ${k_step});${pad_qk}// S(t) = Q K(t)^T
        issue_pv(o, pa, desc_v + prev * ${v_step});${pad_pv}// O += P(t-1) V(t-1)
        if (wg == 0 || t + 1 < n_tiles) sched_pass(wg);
        wgmma_wait<1>();               // S(t) is done; P(t-1) V(t-1) may still run
        reg_fence(${acc});
        ${q_done}
        mask_tile(s, ${mtile}, warp_row0, a);
        softmax_scores(s, row_max, row_sum, alpha, ${scale});
      }

      // The last P V, outside the turns.
${last_head}
      const int last = ${rlast} % STAGES;
      mbar_wait(bar_v(last), (${rlast} / STAGES) & 1);
      issue_pv(o, pa, desc_v + last * ${v_step});
      wgmma_wait<0>();
      reg_fence(o);
      mbar_arrive(bar_empty(last));
    }
]]

-- The close of a P V product, at the head of the next turn and before the
-- last P V (see "Where that wait stands" above): wait for it, release its
-- ring slot where the turn has one to close (`guard`), then rescale O and
-- pack the next P.
local function close_pv(indent, slot, guard)
  local release = "mbar_arrive(bar_empty(" .. slot .. "));   // this thread's MMAs on that slot are complete\n"
  release = "if (" .. guard .. ") {\n" .. U.indent(release, "  ") .. "}\n"
  return U.indent("wgmma_wait<0>();\nreg_fence(o);\n" .. release .. "rescale_o(o, alpha);\npack_p(pa, s);\n",
                  indent):gsub("\n$", "")
end
local CLOSE = { turn0_end = "alpha[0] = alpha[1] = 1.f;       // O is still 0: nothing to rescale",
                head = close_pv("        ", "${rt2} % STAGES", "t > 1"),
                last_head = close_pv("      ", "${rlast1} % STAGES", "n_tiles > 1") }

-- Spaces that put a trailing comment at column `col` after `text`.
local function pad_to(text, col) return string.rep(" ", math.max(col - #text, 1)) end

-- Where the ring stands in the turns: tile t of the kernel (g = 0), or of
-- the unit of a persistent kernel that starts at ring position g; there,
-- the last S product of the unit also releases Q's buffer.
local RING = {
  grid = { slot0 = "0", phase0 = "0", desc_k0 = "desc_k", rt = "t", rt1 = "(t - 1)", rt2 = "(t - 2)",
          rlast = "(n_tiles - 1)", rlast1 = "(n_tiles - 2)",
          q_done0 = "", q_done = "" },
  persistent = { slot0 = "g % STAGES", phase0 = "(g / STAGES) & 1", desc_k0 = "desc_k + g % STAGES * ${k_step}",
               rt = "(g + t)", rt1 = "(g + t - 1)", rt2 = "(g + t - 2)", rlast = "(g + n_tiles - 1)",
               rlast1 = "(g + n_tiles - 2)",
               q_done0 = "if (n_tiles == 1) mbar_arrive(bar_q_empty);   // Q is free for the next unit",
               q_done = "if (t + 1 == n_tiles) mbar_arrive(bar_q_empty);" },
}

-- The turns' text with the hooks in h filled (blank hook lines dropped).
local function turns(h)
  local v = {}
  for k, x in pairs(h.persistent and RING.persistent or RING.grid) do v[k] = U.fill(x, h) end
  for k, x in pairs(h) do v[k] = x end
  v.open_unit = h.open_unit or " "
  v.mtile0, v.mtile = h.mtile0 or "0", h.mtile or "t"   -- the key tile mask_tile sees (a split piece's start + t)
  -- (" ": a line of spaces, dropped below like an empty hook's)
  for k, x in pairs(CLOSE) do v[k] = U.fill(x, v) end
  v.pad_qk = pad_to(string.format("        issue_qk(%s, desc_q, desc_k + slot * %s);", h.acc, h.k_step), 76)
  v.pad_pv = pad_to(string.format("        issue_pv(o, pa, desc_v + prev * %s);", h.v_step), 76)
  -- A hook left empty leaves no blank line behind.
  local lines = {}
  for line in U.fill(TURNS, v):gmatch("([^\n]*)\n") do
    if not line:match("^%s+$") then lines[#lines + 1] = line end
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The opening of both kernels up to the consumers' first line: the block's
-- set-up, the producer warpgroup (`producer`), and the consumers taking the
-- producer's registers.
local function kernel_head(producer)
  return [[
extern "C" __global__ void __launch_bounds__(THREADS, 1) ${NAME}(const __grid_constant__ mx_kernel_args a) {
${SETUP}
]] .. producer .. [[
  } else {                             // consumer warpgroups, taking turns
    if (REGS_CONSUMER) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(REGS_CONSUMER));
]]
end

-- The warp-specialized kernel with the turns: the producer of
-- blocks/wgmma_common.lua and two consumer warpgroups.  ${NAME}, ${SETUP},
-- ${CONSUME} and ${EPILOGUE} are left for the family to fill.
function O.kernel(h)
  return kernel_head(require("blocks.wgmma_common").PRODUCER) .. [[
${CONSUME}
]] .. turns(h) .. [[
${EPILOGUE}
  }
}
]]
end

-- Both persistent kernels' consumers: the loop over the units the producer
-- hands out, up to set_work of the next one.
local UNIT_LOOP_HEAD = [[
    int g = 0;                         // the ring position of this unit, as the producer counts it
    for (int units = 0;; units++) {
      mbar_wait(bar_q, units & 1);     // Q has landed, or the unit sees no key, or the end
      int w;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w) : "r"(unit_slot) : "memory");
      if (w >= ${N_ITEMS}) break;
      set_work(w);
]]

-- The persistent kernel (persistent=1): the same turns, looped over the
-- work units the producer hands out (blocks/wgmma_common.lua, WORK_SETUP,
-- PRODUCER_PERSISTENT): the consumers read each unit from unit_slot when
-- bar_q completes, until the producer writes the end.  While
-- one unit's last P V and output run, the producer already loads the next
-- unit's Q and K/V.  ${SETUP} must end with WORK_SETUP's names and the ring;
-- ${DESCRIPTORS} declares wg and the operands' descriptors; ${STATE} the
-- unit's warp_row0 and running state; ${EPILOGUE} writes the unit's output.
function O.persistent_kernel(h)
  local v = {}
  for k, x in pairs(h) do v[k] = x end
  v.persistent = true
  -- The turns, one level deeper inside the loop over units.
  local body = U.indent(turns(v), "  ")
  return kernel_head(require("blocks.wgmma_common").producer_persistent(false)) .. [[
${DESCRIPTORS}
]] .. U.fill(UNIT_LOOP_HEAD, { N_ITEMS = "n_work" }) .. [[
${STATE}
      if (n_tiles == 0) mbar_arrive(bar_q_empty);   // nothing to read: the slot is free
]] .. body .. [[
${EPILOGUE}
      g += n_tiles;
    }
  }
}
]]
end

-- The persistent kernel with each unit's output stored late (families pick
-- it without a causal mask): a unit ends by normalizing and packing its
-- output and recording where it goes (u.pending, at the same place
-- ${EPILOGUE} has above); the next unit stores it (u.flush) after its first
-- softmax, so the stores leave under the other warpgroup's MMAs instead of
-- between this warpgroup's units.  D=128 N=4096: 1.633 vs 1.659 ms, N=16384
-- 6.22 vs 6.30; under causal 0.956 vs 0.948 ms, slower, so causal keeps the
-- kernel above (H200, 2026-11-29).  Stored right after S(0) was
-- issued, before the softmax, it was 1.5% slower than the kernel above: the
-- softmax's shuffles queued behind the stores.  u.flush runs once more after the last unit, and in a unit that sees no key.  The hooks of u
-- (C text, indented here): state, the registers that outlive a unit; row0
-- and open, the unit's warp_row0 and its fresh O and softmax state;
-- flush and pending as above; split, true when ${SETUP} splits units along
-- the keys (split=1; blocks/wgmma_common.lua, C.work_setup): the turns then
-- mask by the piece's key tiles and the loop runs over n_items.  ${SETUP} and
-- ${DESCRIPTORS} as above.
function O.persistent_kernel_deferred(h, u)
  local v = {}
  for k, x in pairs(h) do v[k] = x end
  v.persistent = true
  v.open_unit = (U.indent(u.flush, "      "):gsub("\n$", ""))
  if u.split then v.mtile0, v.mtile = "tile0", "tile0 + t" end
  -- The turns, one level deeper inside the loop over units.
  local body = U.indent(turns(v), "  ")
  local function at(text, n) return (U.indent(text, string.rep(" ", n)):gsub("\n$", "")) end
  return kernel_head(require("blocks.wgmma_common").producer_persistent(u.split)) .. [[
${DESCRIPTORS}
]] .. at(u.state, 4) .. "\n" .. U.fill(UNIT_LOOP_HEAD, { N_ITEMS = u.split and "n_items" or "n_work" })
    .. at(u.row0 .. u.open, 6) .. [[

      if (n_tiles == 0) {              // nothing to read: the slot is free, the output is 0
        mbar_arrive(bar_q_empty);
]] .. at(u.flush, 8) .. [[

      }
]] .. body .. at(u.pending, 6) .. [[

      g += n_tiles;
    }
]] .. at(u.flush, 4) .. [[

  }
}
]]
end

return O
