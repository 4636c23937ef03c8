-- Small helpers for writing templates.
local U = {}

-- Replaces ${NAME} in `text` with vars.NAME; an unknown name is an error, so a
-- typo in a template fails loudly at render time instead of reaching NVRTC.
function U.fill(text, vars)
  return (text:gsub("%${([%w_]+)}", function(name)
    local v = vars[name]
    if v == nil then error("template variable ${" .. name .. "} is not set", 2) end
    if type(v) == "boolean" then return v and "true" or "false" end
    return tostring(v)
  end))
end

-- The first lines of every rendered source: what it is, and the canonical
-- configuration it was rendered from.
function U.banner(canonical)
  return "// mxattn generated kernel. Do not edit: re-render with `mxattn gen`.\n// params: " .. canonical .. "\n"
end

-- `text` with `by` before every non-empty line (a block of C nested deeper).
function U.indent(text, by) return (text:gsub("([^\n]+)", by .. "%1")) end

function U.round_up(x, m) return (x + m - 1) // m * m end
function U.ceil_div(x, m) return (x + m - 1) // m end

-- Stable identifier from a canonical parameter string (FNV-1a, 32-bit): kernel
-- names must be deterministic and valid C identifiers.
function U.short_hash(text)
  local h = 2166136261
  for i = 1, #text do
    h = ((h ~ text:byte(i)) * 16777619) & 0xffffffff
  end
  return string.format("%08x", h)
end

-- Cheap analytic prior for ranking mma.sync candidates before timing them:
-- the warps that fit on an SM (by shared memory, registers, warps) times the
-- reuse a tile buys.  Only the order matters.
function U.occupancy_prior(t, smem_bytes, registers)
  local threads = 32 * t.warps
  local by_smem = (228 * 1024) // math.max(smem_bytes, 1)
  local by_regs = 65536 // (math.max(registers, 64) * threads)
  local resident_warps = math.min(by_smem, by_regs, 32 // t.warps) * t.warps
  local reuse = (t.block_m * t.block_n) / (t.block_m + t.block_n)
  return math.min(resident_warps, 16) * reuse
end

-- How much of a tile's work is the problem's, for a prior (pr: the sizes, or
-- nil: long sequences, 1): the share of real rows and keys in the padded
-- tiles (77 keys in one 192-key tile use 40% of its MMAs), and a ring deeper
-- than a row's key tiles holds shared memory that no load uses.
function U.size_fit(t, pr)
  local fit = 1
  if pr and pr.seq_k then
    fit = fit * pr.seq_k / U.round_up(pr.seq_k, t.block_n)
    if t.stages and t.stages > 2 and U.ceil_div(pr.seq_k, t.block_n) < t.stages then fit = fit * 0.9 end
  end
  if pr and pr.seq_q then fit = fit * pr.seq_q / U.round_up(pr.seq_q, t.block_m) end
  return fit
end

-- The text of a CUDA file of the templates (templates/cuda/): a schedule is
-- real CUDA there, and a template writes the constants it reads before it.
-- Read at a module's top level, so the file is in the template hash.
function U.cuda(name) return cuda_file(name) end

return U
