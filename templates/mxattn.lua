-- Entry point of the templates; functions here are what C calls (gen/gen.h).
local M = {}
function M.version() return "0" end
return M
