-- x / scale as every quantizer computes it, and the INT8 code of the quotient
-- (cuda/scale_recip.cuh says why).  require("blocks.scale_recip") is the text:
-- it reads no constant.
local U = require("util")
return U.cuda("cuda/scale_recip.cuh")
