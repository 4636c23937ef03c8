-- Entry point of the templates: the functions C calls through gen/gen.h.
-- Every argument and result is text; parameter tables travel as canonical
-- "key=value ..." strings (see space.lua).
local S = require("space")
local M = {}

-- Families are required up front so the template hash covers them all.
local FAMILY, LOAD_ERROR = {}, {}
for _, name in ipairs(S.by_name.family.values) do
  local ok, mod = pcall(require, "families." .. S.family_module(name))
  if ok then FAMILY[name] = mod else LOAD_ERROR[name] = tostring(mod) end
end

local function family_of(t)
  local fam = FAMILY[t.family]
  if not fam and t.family ~= nil then
    local known = false
    for _, f in ipairs(S.by_name.family.values) do if f == t.family then known = true end end
    if not known then
      error("invalid parameter family=" .. t.family .. ": must be one of " .. table.concat(S.by_name.family.values, "|"), 0)
    end
  end
  -- A template that fails to load is the developer's error: say which and why.
  if not fam then
    error("template error: family " .. tostring(t.family) .. " failed to load: " ..
          tostring(LOAD_ERROR[t.family] or "no template"), 0)
  end
  return fam
end

local function parse_numbers(text)
  local t = {}
  for key, value in string.gmatch(text or "", "([%w_]+)=([^%s]+)") do t[key] = tonumber(value) or value end
  return t
end

-- A full, validated table: shape parameters from `text`, knobs from `text`
-- or else the family's heuristic default, which may read the problem's
-- sizes `pr` (batch, heads_q, seq_q, ...) where the caller has them.
local function complete(text, pr)
  local t = S.parse(text)
  if t.family == nil then error("invalid parameter family: missing", 0) end
  local fam = family_of(t)
  local probe = {}
  for k, v in pairs(t) do probe[k] = v end
  -- Shape defaults only: the knobs the caller left out are the family's to
  -- choose (its default may depend on the arch, e.g. wgmma on sm_90a).
  for _, p in ipairs(S.params) do
    if probe[p.name] == nil and p.role ~= "knob" and p.default ~= nil and p.default ~= "same as dtype" then
      probe[p.name] = p.default
    end
  end
  if probe.head_dim == nil then error("invalid parameter head_dim: missing", 0) end
  -- Knobs the caller left out come from the family's heuristic default.
  for k, v in pairs(fam.default(probe, pr)) do
    if t[k] == nil then t[k] = v end
  end
  return S.validate(t), fam
end

function M.params_help() return S.help() end

-- The parameter table for C and Python (mxattn_params, gen/params.c reads
-- it): one entry per parameter, in S.params' order, each field text or a
-- number, so that no list of families or knobs is kept anywhere but here.
function M.param_table()
  local out = {}
  for i, p in ipairs(S.params) do
    local is_bool = p.values and #p.values == 2 and tonumber(p.values[1]) ~= nil
                    and math.max(p.values[1], p.values[2]) == 1 and math.min(p.values[1], p.values[2]) == 0
    local values, families = {}, {}
    for _, v in ipairs(p.values or {}) do values[#values + 1] = tostring(v) end
    for _, f in ipairs(S.by_name.family.values) do
      if p.families and p.families[f] then families[#families + 1] = f end
    end
    out[i] = { name = p.name, role = p.role, help = p.help or "",
               legal = p.values and table.concat(values, "|") or string.format("%d..%d", p.min, p.max),
               default = p.default ~= nil and tostring(p.default) or "",
               families = table.concat(families, " "), is_bool = is_bool and 1 or 0,
               min = p.min or 0, max = p.max or 0 }
  end
  return out
end

-- One line per parameter, "name bool|value", so a command line can turn
-- --head-dim 80 and --causal into a parameter table without knowing the space.
function M.flag_spec()
  local lines = {}
  for _, p in ipairs(S.params) do
    local is_bool = p.values and #p.values == 2 and tonumber(p.values[1]) ~= nil
                    and math.max(p.values[1], p.values[2]) == 1 and math.min(p.values[1], p.values[2]) == 0
    lines[#lines + 1] = p.name .. (is_bool and " bool" or " value")
  end
  return table.concat(lines, "\n")
end

-- Canonical text of the source-determining parameters (shape + knobs).
function M.validate(text)
  local t = complete(text)
  return S.canonical(t, S.SOURCE_ROLES)
end

-- A configuration (mxattn_plan_create's, `mxattn run --config`'s, a tuned
-- or imported row's) names knobs only, in S.parse's strict grammar, at most
-- S.MAX_CONFIG_CHARS long.  The problem sets the shape (head_dim, causal,
-- lse, ...), and a configuration that named one would build a kernel for
-- another problem than the one it runs: lse=1 where the caller asked for no
-- LSE writes through a NULL pointer.  With `shape` (the problem's shape
-- parameters, as a plan passes them) the knobs must also be legal for it:
-- the family reads them, and the constraints between them and the shape hold
-- (knobs left out are the family's default, as a plan fills them).  Returns
-- the text when it is clean; otherwise an "invalid ..." error naming the token.
function M.check_config(text, shape)
  text = text or ""
  if #text > S.MAX_CONFIG_CHARS then
    error(string.format("invalid configuration: %d characters, at most %d", #text, S.MAX_CONFIG_CHARS), 0)
  end
  local t = S.parse(text)
  for _, p in ipairs(S.params) do
    if t[p.name] ~= nil and p.role ~= "knob" then
      error(string.format("invalid configuration: %s is a %s parameter, set by the problem, not by a configuration "
                          .. "(a configuration names knobs only: mxattn params)", p.name, p.role), 0)
    end
  end
  if shape then complete(shape .. " " .. text) end
  return text
end

-- Canonical text of the knobs alone.
function M.knobs(text)
  local t = complete(text)
  return S.canonical(t, S.KNOB_ROLES)
end

-- How many keys one tile of the kernel covers, the span its softmax operand P
-- is quantized and rescaled over (mxattn_plan_info.key_block): C asks here
-- rather than reading a knob's name from the configuration.
function M.key_block(text)
  local t = complete(text)
  return tostring(t.block_n or 0)
end

-- The heuristic default's knobs for a problem ("batch=.. heads_q=.. seq_q=..
-- seq_k=.."): what a plan without a tuned configuration builds.  Without the
-- sizes (mxattn compile, the tuner's candidate list) a family picks for long
-- sequences.
function M.default_knobs(text, problem)
  local t = complete(text, parse_numbers(problem))
  return S.canonical(t, S.KNOB_ROLES)
end

-- Each kernel of a module between #if guards, so that the runtime can compile
-- the kernels as separate NVRTC programs on parallel threads (jit/jit.c,
-- mx_jit_compile): with MX_COMPILE_ONE defined, only the kernel whose
-- MX_COMPILE_<name> is defined is compiled.  A cold start then waits for the
-- slowest kernel rather than for all of them in turn (the INT8 families'
-- quantization kernel alone compiles as long as their attention kernel).
-- A kernel runs from its 'extern "C" __global__' line to the next line that is
-- a lone "}", as every template closes its kernels.  A kernel of a CUDA file
-- is declared by a macro its header defines to the symbol ("#define
-- KERNEL_NAME mxattn_f16_d64_..."): the guard names the symbol.
local function guard_kernels(src)
  local out, open, symbol = {}, nil, {}
  for line in src:gmatch("[^\n]+") do
    local macro, name = line:match("^#define ([%w_]+) ([%w_]+)$")
    if macro then symbol[macro] = name end
  end
  for line in src:gmatch("([^\n]*)\n?") do
    if line:find('^extern "C" __global__') then
      local name = line:match("([%w_]+)%(const")
      name = symbol[name] or name
      assert(name and not open, "kernel line without a name, or inside a kernel: " .. line)
      out[#out + 1] = "#if !defined(MX_COMPILE_ONE) || defined(MX_COMPILE_" .. name .. ")"
      open = name
    end
    out[#out + 1] = line
    if open and line == "}" then
      out[#out + 1] = "#endif  // " .. open
      open = nil
    end
  end
  assert(not open, "kernel " .. tostring(open) .. " has no closing line")
  return table.concat(out, "\n") .. (src:sub(-1) == "\n" and "\n" or "")
end

function M.render(text)
  local t, fam = complete(text)
  return guard_kernels(fam.render(t, S.canonical(t, S.SOURCE_ROLES)))
end

-- Launch plan for a problem, the table C reads field by field through Lua's C
-- API (gen/launch.c, which names any field it cannot use):
--   { workspace = BYTES, ws_off = { BYTES, ... },       -- ws_off[i]: section i-1
--     kernels = { { name =, grid = { X, Y, Z }, block = THREADS, smem = BYTES,
--                   resident = N,   -- a persistent kernel: at most N blocks per SM
--                   pdl = true },   -- a programmatic dependent of the kernel before it
--                 ... },            -- in launch order
--     tmaps = { { slot =, tensor = "q"|"k"|"v"|"o", box_cols =, box_rows =, swizzle =, head_dim = },
--               { slot =, section =, elem_bytes =, cols =, rows =, heads =, batch =,
--                 box_cols =, box_rows =, swizzle = }, ... } }
-- A map with `section` reads a workspace array [batch][heads][rows][cols] of
-- elem_bytes elements (quantized operands) instead of Q/K/V/O; the runtime
-- encodes every map at each run (the tensor's address is in it).  pdl: its
-- source waits for that kernel in wait_for_previous_kernel (blocks/prelude.lua).
function M.launch_plan(text, problem)
  local t, fam = complete(text)
  local plan = fam.launches(t, parse_numbers(problem), S.canonical(t, S.SOURCE_ROLES))
  local tmaps = {}
  for i, m in ipairs(plan.tmaps or {}) do
    local c = {}
    for k, v in pairs(m) do c[k] = v end
    if not c.section then c.head_dim = t.head_dim end
    tmaps[i] = c
  end
  return { workspace = plan.workspace, ws_off = plan.ws_off, main = plan.main, kernels = plan.kernels, tmaps = tmaps }
end

-- The same plan as text, one line per item, for reading and for the
-- templates' tests (C reads the table, never this text): "workspace N",
-- "kernel NAME GX GY GZ THREADS SMEM [RESIDENT]", "pdl I" (kernel I, from 0),
-- "main I" (the attention kernel, from 0, where it is not the last),
-- "wsoff I N", "tmap SLOT TENSOR BOX_COLS BOX_ROWS SWIZZLE HEAD_DIM" and
-- "tmapws SLOT SECTION ELEM_BYTES COLS ROWS HEADS BATCH BOX_COLS BOX_ROWS SWIZZLE".
function M.launch(text, problem)
  local plan = M.launch_plan(text, problem)
  local lines = { "workspace " .. plan.workspace }
  for _, k in ipairs(plan.kernels) do
    lines[#lines + 1] = string.format("kernel %s %d %d %d %d %d", k.name, k.grid[1], k.grid[2], k.grid[3], k.block, k.smem)
                        .. (k.resident and string.format(" %d", k.resident) or "")
  end
  for i, k in ipairs(plan.kernels) do
    if k.pdl then lines[#lines + 1] = string.format("pdl %d", i - 1) end
  end
  if plan.main and plan.main ~= #plan.kernels then lines[#lines + 1] = string.format("main %d", plan.main - 1) end
  for i, off in ipairs(plan.ws_off or {}) do lines[#lines + 1] = string.format("wsoff %d %d", i - 1, off) end
  for _, m in ipairs(plan.tmaps) do
    if m.section then
      lines[#lines + 1] = string.format("tmapws %d %d %d %d %d %d %d %d %d %d", m.slot, m.section, m.elem_bytes,
                                        m.cols, m.rows, m.heads, m.batch, m.box_cols, m.box_rows, m.swizzle)
    else
      lines[#lines + 1] = string.format("tmap %d %s %d %d %d %d", m.slot, m.tensor, m.box_cols, m.box_rows, m.swizzle,
                                        m.head_dim)
    end
  end
  return table.concat(lines, "\n")
end

-- The family's defaults for the same shape at other sizes: short and long
-- rows, one block or thousands.  Each is a tile that measured best somewhere,
-- so it is the default's likeliest rival here (int8-fp8 at D=128: the shared
-- ring at long rows, one-warpgroup blocks at short ones, ranked far apart by
-- the analytic prior).
local RIVAL_SEQS = { 512, 2048, 8192, 65536 }   -- prefill lengths
local function rivals(shape_text, pr)
  -- Decoding's default is a rival only for a problem of a few query rows: for
  -- prefill it is the decode schedule, never the winner, and it took the
  -- second of the tuner's slots.
  local probes = {}
  if pr.seq_q == nil or pr.seq_q <= 16 then probes[1] = { seq_q = 1, seq_k = pr.seq_k or 4096 } end
  for _, n in ipairs(RIVAL_SEQS) do probes[#probes + 1] = { seq_q = n, seq_k = n } end
  local out = {}
  for _, probe in ipairs(probes) do
    local sizes = { batch = 1, heads_q = 1 }
    for k, v in pairs(pr) do sizes[k] = v end
    sizes.seq_q, sizes.seq_k = probe.seq_q, probe.seq_k
    local ok, t = pcall(complete, shape_text, sizes)
    if ok then out[#out + 1] = S.canonical(t, S.KNOB_ROLES) end
  end
  return out
end

-- Every legal knob setting for the shape in `text`, one canonical knob string
-- per line: the heuristic default first (for the problem's sizes `problem`
-- where the caller has them, as a plan builds it: the tuner then measures
-- against what an untuned plan would run), then the family's defaults at
-- other sizes (rivals above), then the rest best prior first.  A tuner that
-- times only the first few still pits the default against its rivals.
function M.candidates(text, problem)
  local base = S.parse(text)
  local shape = {}
  for _, p in ipairs(S.params) do
    if p.role == "knob" then base[p.name] = nil
    elseif base[p.name] ~= nil then shape[#shape + 1] = p.name .. "=" .. tostring(base[p.name]) end
  end
  -- The shape as given, with the family's default knobs: a parameter the
  -- family does not read but the caller set (v_terms=2 for f16) is an error
  -- here, not a silent drop by the canonical text below.
  complete(table.concat(shape, " "))
  local shape_text = S.canonical(base)   -- before S.enumerate, which fills base in
  local sizes = parse_numbers(problem)
  local t, fam = complete(shape_text, sizes)
  local default_knobs = S.canonical(t, S.KNOB_ROLES)
  local all = {}
  -- A legal setting the family says cannot win at these sizes (f16's decode
  -- schedule for hundreds of query rows: 720 of f16's 1,044 settings at D=64)
  -- is left out of the list; it can still be named in a configuration.
  for _, c in ipairs(S.enumerate(base)) do
    if not fam.candidate or fam.candidate(c, sizes) then all[#all + 1] = c end
  end
  -- The prior may read the problem's sizes (f16 ranks its decode schedule
  -- first for a few query rows, below the wgmma tiles for many).
  table.sort(all, function(x, y)
    local px, py = fam.prior(x, sizes), fam.prior(y, sizes)
    if px ~= py then return px > py end
    return S.canonical(x, S.KNOB_ROLES) < S.canonical(y, S.KNOB_ROLES)
  end)
  local out, listed = { default_knobs }, { [default_knobs] = true }
  local function add(k)
    if not listed[k] then out[#out + 1] = k; listed[k] = true end
  end
  for _, k in ipairs(rivals(shape_text, sizes)) do add(k) end
  for _, c in ipairs(all) do add(S.canonical(c, S.KNOB_ROLES)) end
  return table.concat(out, "\n")
end

return M
