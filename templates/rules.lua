-- Constraints as data.  Each schedule (a family's variant: f16 wgmma,
-- int8-fp8 mma, ...) declares its legal values and the rules between them
-- as a list of records that validation, the tuner's walk and `mxattn params`
-- all read, so a rule's message and its help line cannot drift apart:
--
--   { need = { stages = R.at_least(2) }, why = "a TMA ring" }
--   { when = { overlap = 1 }, need = { block_m = 128, warps = 12 }, why = "..." }
--   { when = { split = 1 }, check = function(t) ... end, text = "..." }
--
-- `when` picks the tables a rule binds (every key matches), `need` is what
-- they must then hold.  A matcher is a plain value (equal), a list (one of)
-- or one of the constructors below.  What a value list cannot say (shared
-- memory, registers, a layout's arithmetic) is a `check` function that
-- returns the message or nil, beside the `text` that help prints.
local R = {}

local function matcher(test, text) return { test = test, text = text } end
function R.at_most(n) return matcher(function(v) return v <= n end, "<=" .. n) end
function R.at_least(n) return matcher(function(v) return v >= n end, ">=" .. n) end
function R.above(n) return matcher(function(v) return v > n end, ">" .. n) end
function R.multiple_of(n) return matcher(function(v) return v % n == 0 end, " a multiple of " .. n) end
-- A test a comparison cannot say, with the words that describe it.
function R.where(words, test) return matcher(test, " " .. words) end
R.POWER_OF_TWO = R.where("a power of two", function(v) return v & (v - 1) == 0 end)

local function matches(m, v)
  if m == v then return true end
  if type(m) ~= "table" then return tostring(m) == tostring(v) end
  if m.test then return v ~= nil and m.test(v) end
  for _, x in ipairs(m) do if tostring(x) == tostring(v) then return true end end
  return false
end

R.matches = matches

local function demand_text(k, m)
  if type(m) ~= "table" then return k .. "=" .. tostring(m) end
  if m.test then return k .. m.text end
  local vs = {}
  for _, x in ipairs(m) do vs[#vs + 1] = tostring(x) end
  return k .. "=" .. table.concat(vs, "|")
end

-- A table's keys in the parameter table's order (order: name -> index;
-- space.lua sets R.order), so a message reads the same every time.
local function ordered(tbl, order)
  order = order or R.order or {}
  local keys = {}
  for k in pairs(tbl or {}) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return (order[a] or 1e9) < (order[b] or 1e9) end)
  return keys
end

local function demands(tbl, order)
  local out = {}
  for _, k in ipairs(ordered(tbl, order)) do out[#out + 1] = demand_text(k, tbl[k]) end
  return table.concat(out, " ")
end

-- "overlap=1: " for a rule with a `when`, else "".
local function when_text(rule, order) return rule.when and demands(rule.when, order) .. ": " or "" end
local function why_text(rule) return rule.why and " (" .. rule.why .. ")" or "" end

-- The line `mxattn params` prints for a rule.
function R.text(rule, order)
  if rule.check then return rule.text end
  return when_text(rule, order) .. demands(rule.need, order) .. why_text(rule)
end

-- The message of a table `t` that breaks `rule` of schedule `where`, or nil.
function R.broken(rule, t, where, order)
  for k, m in pairs(rule.when or {}) do
    if not matches(m, t[k]) then return nil end
  end
  if rule.check then return rule.check(t) end
  -- The walk checks every rule at every leaf: the keys are sorted once a rule.
  rule.need_keys = rule.need_keys or ordered(rule.need, order)
  local bad = {}
  for _, k in ipairs(rule.need_keys) do
    if not matches(rule.need[k], t[k]) then bad[#bad + 1] = k .. "=" .. tostring(t[k]) end
  end
  if #bad == 0 then return nil end
  return string.format("%s%s needs %s%s, not %s", when_text(rule, order), where, demands(rule.need, order),
                       why_text(rule), table.concat(bad, " "))
end

-- The first rule of `rules` that `t` breaks: its message, or nil.
function R.first_broken(rules, t, where, order)
  for _, rule in ipairs(rules) do
    local why = R.broken(rule, t, where, order)
    if why then return why end
  end
end

return R
