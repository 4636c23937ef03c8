-- The parameter space: every kernel parameter, its legal values, and the
-- constraints between them.  This table is the one place that knows them:
-- validation, rendering, the tuner's enumeration, cache keys and `mxattn
-- params` all read it.  Add a knob here and everything else sees it.
--
-- Roles:
--   shape   fixed by the problem and compiled into the kernel
--   problem fixed by the problem, passed at launch (part of the tuning key only)
--   knob    chosen by the tuner (or the heuristic default) and compiled in
local S = {}
local R = require("rules")

local FAMILIES = { "f16", "int8-f16", "int8-fp8", "nvfp4", "mxfp4", "nvfp4-int8qk" }
local ARCHS = { "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120a" }

S.params = {
  { name = "family", role = "shape", values = FAMILIES,
    help = "kernel family: f16 is exact (bf16/fp16 tensor cores); the others quantize Q, K, P, V" },
  { name = "arch", role = "shape", values = ARCHS, default = "sm_90a",
    help = "target GPU architecture" },
  { name = "head_dim", role = "shape", min = 8, max = 256,
    help = "head dimension D, any value; padded to the MMA's K inside the kernel" },
  { name = "dtype", role = "shape", values = { "bf16", "f16" }, default = "bf16",
    help = "element type of Q, K and V" },
  { name = "out_dtype", role = "shape", values = { "bf16", "f16" }, default = "same as dtype",
    help = "element type of O" },
  { name = "causal", role = "shape", values = { 0, 1 }, default = 0,
    help = "mask keys after the query's diagonal (its alignment is a launch argument)" },
  { name = "lse", role = "shape", values = { 0, 1 }, default = 0,
    help = "also write the log-sum-exp of each query row" },
  { name = "align", role = "shape", values = { 8, 4, 2, 1 }, default = 8,
    help = "elements per vector access: the largest of 8/4/2/1 dividing head_dim, every stride and pointer" },
  { name = "p_scale", role = "shape", values = { "two-level", "direct" }, default = "two-level",
    help = "FP4 families: scale of the softmax operand P" },
  { name = "smooth_k", role = "shape", values = { 1, 0 }, default = 1,
    help = "quantized families: subtract K's per-channel mean before quantizing" },
  { name = "v_terms", role = "shape", values = { 1, 2 }, default = 1, families = { ["int8-fp8"] = true },
    help = "int8-fp8: V in one E4M3 term, or two (the second, on the same per-channel scale, holds the first's rounding error: V as exact as bf16, P V's MMAs x2; variant=wgmma, head_dim<=128)" },
  { name = "gqa", role = "problem", min = 1, max = 256, default = 1,
    help = "query heads per KV head (grouped-query attention)" },
  { name = "layout", role = "problem", values = { "bhnd", "bnhd" }, default = "bhnd",
    help = "memory layout, [batch, heads, seq, dim] or [batch, seq, heads, dim]" },
  { name = "variant", role = "knob", values = { "mma", "wgmma", "decode" }, default = "mma",
    families = { f16 = true, ["int8-fp8"] = true, nvfp4 = true, mxfp4 = true, ["nvfp4-int8qk"] = true },
    help = "MMA building block: mma (mma.sync, sm_80+) or wgmma (Hopper warpgroup MMA + TMA, sm_90a); decode (f16, int8-fp8): mma.sync over a few query rows, a KV group's query heads packed into a tile's rows and the keys split over kv_splits blocks, int8-fp8 quantizing each K/V tile as it lands (the default up to 16 query rows)" },
  { name = "q_regs", role = "knob", values = { 1, 0 }, default = 1,
    families = { f16 = true },
    help = "mma: keep Q's fragments in registers across key tiles (1) or reload them from shared memory (0)" },
  { name = "overlap", role = "knob", values = { 0, 1, 3 }, default = 0,
    families = { f16 = true, ["int8-fp8"] = true }, variants = { wgmma = true },
    help = "wgmma: 1 (f16) ping-pongs two consumer warpgroups so one's softmax runs under the other's MMAs; 3 (int8-fp8) passes the tensor pipe around three consumer warpgroups of one block, a turn being one tile's P V and the next tile's S, so each softmax runs under the other two's turns (3 is the heuristic default at head_dim 65-128 without a mask from 16384 keys)" },
  { name = "persistent", role = "knob", values = { 0, 1 }, default = 0,
    families = { f16 = true }, variants = { wgmma = true },
    help = "wgmma overlap=1: one block per SM loops over the row blocks, loading the next one's Q, K and V under the last one's output" },
  { name = "split", role = "knob", values = { 0, 1 }, default = 0,
    families = { f16 = true }, variants = { wgmma = true },
    help = "persistent=1 without a causal mask: a problem with fewer row blocks than the GPU has SMs splits them along the keys" },
  { name = "blocks_per_sm", role = "knob", values = { 0, 4 }, default = 0,
    families = { ["int8-fp8"] = true },
    help = "wgmma, one warpgroup a block, head_dim<=64: compile for 4 blocks an SM (128 registers a thread); 0: as many as shared memory holds, at most 3; the heuristic default picks 4 up to head_dim 64" },
  { name = "rowsum_mma", role = "knob", values = { 0, 1 }, default = 0,
    families = { ["int8-fp8"] = true },
    help = "wgmma: the softmax's row sums by the tensor cores (P in E4M3 times a column of ones) instead of an FADD a score; the heuristic default picks 1 but for causal above head_dim 64" },
  { name = "kv_splits", role = "knob", values = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64 }, default = 1,
    families = { f16 = true, ["int8-fp8"] = true }, variants = { decode = true },
    help = "variant=decode: pieces the keys are cut into, one block each (the heuristic default: the count whose blocks fill the GPU's block slots most evenly, each piece at least 8 key tiles)" },
  { name = "block_m", role = "knob", values = { 16, 32, 64, 128, 192, 256 },
    help = "query rows per thread block" },
  { name = "block_n", role = "knob", values = { 16, 32, 64, 96, 128, 160, 176, 192 },
    help = "keys per inner-loop tile (96|160|176|192: f16 variant=wgmma only)" },
  { name = "warps", role = "knob", values = { 1, 2, 4, 8, 12, 16 },
    help = "warps per thread block; each owns block_m/warps query rows" },
  { name = "stages", role = "knob", values = { 1, 2, 3 },
    help = "K/V tiles in flight (cp.async pipeline depth)" },
}

S.by_name = {}
for i, p in ipairs(S.params) do p.index = i; S.by_name[p.name] = p end

-- Shared memory a thread block may use, per architecture (opt-in limit).
S.smem_limit = { sm_80 = 163 * 1024, sm_86 = 99 * 1024, sm_89 = 99 * 1024,
                 sm_90a = 227 * 1024, sm_100a = 227 * 1024, sm_120a = 99 * 1024 }

local function invalid(fmt, ...) error("invalid " .. string.format(fmt, ...), 0) end

local function contains(list, v)
  for _, x in ipairs(list) do if tostring(x) == tostring(v) then return true end end
  return false
end

local function list_text(list)
  local t = {}
  for _, v in ipairs(list) do t[#t + 1] = tostring(v) end
  return table.concat(t, "|")
end

-- Checks one parameter's value against its legal values.
local function check_value(p, v)
  if p.values then
    if not contains(p.values, v) then
      invalid("parameter %s=%s: must be one of %s", p.name, tostring(v), list_text(p.values))
    end
  elseif type(v) ~= "number" or v ~= math.floor(v) or v < p.min or v > p.max then
    invalid("parameter %s=%s: must be an integer in [%d, %d]", p.name, tostring(v), p.min, p.max)
  end
end

-- A token as a message shows it: printable ASCII, at most 60 characters.
local function shown(token)
  local s = token:gsub("[^\32-\126]", function(c) return string.format("\\x%02x", c:byte()) end)
  if #s > 60 then s = s:sub(1, 57) .. "..." end
  return s
end

-- The grammar of every parameter text (a configuration, a shape, a tuned
-- row): tokens separated by one or more spaces, each exactly key=value with
-- a known key and a value legal for it, no key twice.  Anything else is an
-- error naming the token, never dropped ("block_m:64" must not quietly
-- become the default).  Integers are decimal only (tonumber would read
-- "0x40" and "6.4e1" as 64).
function S.parse(text)
  local t = {}
  for token in string.gmatch(text or "", "[^ ]+") do
    local key, value = token:match("^([%a_][%w_]*)=([%w_.%-]+)$")
    if not key then
      invalid("parameter token '%s': each token is key=value, separated by spaces, with no space around '=' (see mxattn params)",
              shown(token))
    end
    local p = S.by_name[key]
    if not p then invalid("parameter '%s': no such parameter (see mxattn params)", shown(key)) end
    if t[key] ~= nil then
      invalid("parameter %s given twice ('%s=%s' and '%s'): each key once", key, key, tostring(t[key]), shown(token))
    end
    local v = value
    if value:match("^%-?%d+$") then v = math.tointeger(tonumber(value)) or value end
    check_value(p, v)
    t[key] = v
  end
  return t
end

-- The longest configuration text accepted: mxattn_plan_info.config holds 255
-- characters, and a text cut after it was checked would build another kernel.
S.MAX_CONFIG_CHARS = 255

-- The rules.  Every family module declares its schedules, one a variant
-- (F.schedules = { mma = { rule, ... }, wgmma = ... }), each a list of rule
-- records (rules.lua) that the family's own constants complete; the rules
-- below bind every table, before and after the schedule's own.
R.order = {}
for _, p in ipairs(S.params) do R.order[p.name] = p.index end

local modules = {}
local function family(t)
  local m = modules[t.family]
  if not m then m = require("families." .. S.family_module(t.family)); modules[t.family] = m end
  return m
end
-- The knobs only some families, or some variants, read.
local by_family, by_variant = {}, {}
for _, p in ipairs(S.params) do
  if p.families then by_family[#by_family + 1] = p end
  if p.variants then by_variant[#by_variant + 1] = p end
end

-- The mma.sync rule: each warp owns 16 or 32 query rows.
function S.check_rows_per_warp(t)
  if t.warps > 8 or t.block_m % (16 * t.warps) ~= 0 or t.block_m // (16 * t.warps) > 2 then
    return string.format("block_m=%d with warps=%d: each warp owns 16 or 32 query rows (block_m = 16*warps or 32*warps)",
                         t.block_m, t.warps)
  end
end
S.ROWS_PER_WARP = { check = S.check_rows_per_warp,
                    text = "block_m = 16*warps or 32*warps (each warp owns 16 or 32 query rows; warps <= 8)" }
-- The mma.sync kernels split a key tile by powers of two.
S.POW2_TILES = { need = { block_n = R.POWER_OF_TWO }, why = "the tile splits by powers of two" }

S.rules_before = {
  -- A knob that only some families read keeps its default elsewhere, so the
  -- tuner never times the same kernel twice under two names.
  { text = "a knob marked for some families keeps its default in the others",
    check = function(t)
      for _, p in ipairs(by_family) do
        if not p.families[t.family] and tostring(t[p.name]) ~= tostring(p.default) then
          return string.format("%s=%s: family %s has no such choice (only %s)", p.name, tostring(t[p.name]),
                               t.family, tostring(p.default))
        end
      end
    end },
  { text = "the variant is one of the family's schedules",
    check = function(t)
      local have = family(t).schedules
      if not have[t.variant] then
        local names = {}
        for _, v in ipairs(S.by_name.variant.values) do if have[v] then names[#names + 1] = v end end
        return string.format("variant=%s: family %s has no such schedule (%s)", tostring(t.variant), t.family,
                             table.concat(names, "|"))
      end
    end },
  -- Likewise a knob only some variants read (kv_splits: decode; overlap,
  -- persistent, split: wgmma).
  { text = "a knob marked for some variants keeps its default under the others",
    check = function(t)
      for _, p in ipairs(by_variant) do
        if not p.variants[t.variant] and tostring(t[p.name]) ~= tostring(p.default) then
          local only = {}
          for _, v in ipairs(S.by_name.variant.values) do if p.variants[v] then only[#only + 1] = v end end
          return string.format("%s=%s: only variant=%s reads it (variant=%s: keep %s=%s)", p.name, tostring(t[p.name]),
                               table.concat(only, "|"), tostring(t.variant), p.name, tostring(p.default))
        end
      end
    end },
}

S.rules_after = {
  { text = "align divides head_dim",
    check = function(t)
      if t.head_dim % t.align ~= 0 then
        return string.format("align=%d does not divide head_dim=%d", t.align, t.head_dim)
      end
    end },
  { text = "the tile set's shared memory <= the arch's per-block limit",
    check = function(t)
      local need, limit = family(t).smem_bytes(t), S.smem_limit[t.arch]
      if need > limit then
        return string.format("block_m=%d block_n=%d stages=%d need %d bytes of shared memory, %s has %d",
                             t.block_m, t.block_n, t.stages, need, t.arch, limit)
      end
    end },
  { text = "estimated registers a thread <= 255",
    check = function(t)
      local regs = family(t).register_estimate(t)
      if regs > 255 then
        return string.format("block_m=%d warps=%d block_n=%d head_dim=%d: about %d registers per thread, over 255",
                             t.block_m, t.warps, t.block_n, t.head_dim, regs)
      end
    end },
}

-- The message of the first rule `t` breaks, or nil.
function S.broken(t)
  local why = R.first_broken(S.rules_before, t)
  if why then return why end
  why = R.first_broken(family(t).schedules[t.variant], t, t.family .. " variant=" .. tostring(t.variant))
  if why then return why end
  return R.first_broken(S.rules_after, t)
end

-- Module of a family's template (names with '-' map to '_').
function S.family_module(family) return (family:gsub("-", "_")) end

-- Fills defaults for every parameter whose default does not depend on others.
local function fill_defaults(t)
  for _, p in ipairs(S.params) do
    if t[p.name] == nil and p.default ~= nil and p.default ~= "same as dtype" then t[p.name] = p.default end
  end
  if t.out_dtype == nil then t.out_dtype = t.dtype end
end

-- Validates a full table (knobs included); raises "invalid ..." naming the parameter.
function S.validate(t)
  fill_defaults(t)
  for _, p in ipairs(S.params) do
    if t[p.name] == nil then invalid("parameter %s: missing (%s)", p.name, p.help) end
    check_value(p, t[p.name])
  end
  local why = S.broken(t)
  if why then invalid("configuration: %s", why) end
  return t
end

-- Canonical text of the parameters with the given roles, in declaration order.
function S.canonical(t, roles)
  local out = {}
  for _, p in ipairs(S.params) do
    -- A knob the family does not read is pinned to its default by the
    -- constraints, so it says nothing about the kernel: leaving it out keeps
    -- a family's names (and cache keys) unchanged when another family gains
    -- a knob.
    local unread = p.families and t.family and not p.families[t.family]
    -- Likewise a knob at its default under a variant that does not read it
    -- (kv_splits outside decode, persistent outside wgmma); a value other
    -- than the default stays in the text, so two kernels never share a name.
    unread = unread or (p.variants and t.variant and not p.variants[t.variant] and t[p.name] == p.default)
    if (roles == nil or roles[p.role]) and not unread then
      if t[p.name] ~= nil then out[#out + 1] = p.name .. "=" .. tostring(t[p.name]) end
    end
  end
  return table.concat(out, " ")
end

S.SOURCE_ROLES = { shape = true, knob = true }
S.KNOB_ROLES = { knob = true }

-- The values of knob `k` that the unconditional rules (no `when`, no
-- `check`) of work's schedule allow; the variant is walked first.
local narrowed = {}
local function schedule_values(work, k, values)
  local rules = family(work).schedules[work.variant]
  if not rules then return values end
  local key = work.family .. " " .. work.variant .. " " .. k.name .. " " .. #values
  if narrowed[key] then return narrowed[key] end
  local out = {}
  for _, v in ipairs(values) do
    local ok = true
    for _, r in ipairs(rules) do
      if not r.when and not r.check and r.need[k.name] ~= nil and not R.matches(r.need[k.name], v) then ok = false end
    end
    if ok then out[#out + 1] = v end
  end
  narrowed[key] = out
  return out
end

-- Every legal knob combination for the shape parameters in `t`.
function S.enumerate(t)
  fill_defaults(t)
  -- A knob the family does not read can only hold its default (the first
  -- constraint): walking its other values would validate, and throw away,
  -- the whole space again for each (the walk is a product: each such knob
  -- multiplied the family's tuning start-up, 2 -> 10 s with three of them).
  local knobs = {}
  for _, p in ipairs(S.params) do
    if p.role == "knob" then
      local unread = p.families and t.family and not p.families[t.family]
      knobs[#knobs + 1] = unread and { name = p.name, values = { p.default } } or p
    end
  end
  -- Each leaf runs the constraints on one working table, and only a legal
  -- one is copied out: S.validate's per-value checks (the knobs' values come
  -- from their own lists; the shape's are checked once, here) and a fresh
  -- table per leaf were 80% of a walk of ~500k leaves (int8-fp8: 12 s).
  for _, p in ipairs(S.params) do
    if p.role ~= "knob" then
      if t[p.name] == nil then invalid("parameter %s: missing (%s)", p.name, p.help) end
      check_value(p, t[p.name])
    end
  end
  local work = {}
  for k, v in pairs(t) do work[k] = v end
  local function legal() return S.broken(work) == nil end
  local out = {}
  local function walk(i)
    if i > #knobs then
      local ok, yes = pcall(legal)
      if ok and yes then
        local c = {}
        for k, v in pairs(work) do c[k] = v end
        out[#out + 1] = c
      end
      return
    end
    -- A knob only some variants read (p.variants) holds its default under
    -- the others (their checks say so): walking it there would multiply
    -- the walk by its values for nothing.  variant is walked before it.
    -- Likewise the schedule's unconditional demands on a knob (decode's
    -- warps=4|8, wgmma's q_regs=0, ...) narrow its values before the walk
    -- goes on: the leaves they would reject are never built.
    local k = knobs[i]
    local values = k.variants and not k.variants[work.variant] and { k.default } or k.values
    if i > 1 then values = schedule_values(work, k, values) end
    for _, v in ipairs(values) do
      work[k.name] = v
      walk(i + 1)
    end
  end
  walk(1)
  return out
end

-- Text for `mxattn params`.
function S.help()
  local lines = { "Kernel parameters (role: shape = from the problem, problem = launch-time, knob = tuned):",
                  "A knob's (default) is what it takes when the family's heuristic, which fills the knobs a",
                  "table leaves out (wgmma on sm_90a, its tiles, ...), does not set it.", "" }
  local width = 0
  for _, p in ipairs(S.params) do width = math.max(width, #p.name) end
  for _, p in ipairs(S.params) do
    local legal = p.values and list_text(p.values) or string.format("%d..%d", p.min, p.max)
    local def = p.default ~= nil and (" (default " .. tostring(p.default) .. ")") or ""
    lines[#lines + 1] = string.format("  %-" .. width .. "s %-7s %-28s %s%s", p.name, p.role, legal, p.help, def)
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Constraints (the rules validation and the tuner's walk apply):"
  lines[#lines + 1] = "  every table:"
  for _, r in ipairs(S.rules_before) do lines[#lines + 1] = "    " .. R.text(r) end
  for _, r in ipairs(S.rules_after) do lines[#lines + 1] = "    " .. R.text(r) end
  -- One block a schedule; families whose schedule reads the same (the FP4
  -- families') share one heading.
  local blocks, order = {}, {}
  for _, fam_name in ipairs(FAMILIES) do
    local fam = require("families." .. S.family_module(fam_name))
    for _, v in ipairs(S.by_name.variant.values) do
      if fam.schedules[v] then
        local body = {}
        for _, r in ipairs(fam.schedules[v]) do body[#body + 1] = "    " .. R.text(r) end
        local key = v .. "\n" .. table.concat(body, "\n")
        if not blocks[key] then blocks[key] = { families = {}, variant = v, body = body }; order[#order + 1] = key end
        table.insert(blocks[key].families, fam_name)
      end
    end
  end
  for _, key in ipairs(order) do
    local b = blocks[key]
    lines[#lines + 1] = string.format("  %s variant=%s:", table.concat(b.families, ", "), b.variant)
    for _, l in ipairs(b.body) do lines[#lines + 1] = l end
  end
  return table.concat(lines, "\n") .. "\n"
end

return S
