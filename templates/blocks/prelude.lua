-- The start of every generated source (cuda/prelude.cuh): fixed-width types,
-- the argument struct every kernel takes, and the PTX wrappers the kernels
-- need.  It reads no constant, so it may come before a kernel's header.
-- require("blocks.prelude")() is the text, as is .text.
local U = require("util")
local TEXT = U.cuda("cuda/prelude.cuh")
return setmetatable({ text = TEXT }, { __call = function() return TEXT end })
