#!/usr/bin/env bash
# Session 17, call 4: cold JIT time on the GPU machine's CPU (16 cores), against the goal of a
# cold compile under a second.
#   1. `mxattn compile` (NVRTC, the library's options) of every family at D = 64, 128, 256;
#   2. the same generated sources (build-gpu/jit/*.cu, dumped on the CPU machine) through a
#      bare NVRTC driver (build-gpu/jit/nvt: the library's options plus the ones named), best of
#      three: as is, --split-compile=4 and --split-compile=0 (NVRTC optimizes and assembles the
#      module's kernels on parallel threads), and NVRTC's own phase times (--time);
#   3. cuobjdump -sass of each source's cubin with and without --split-compile=4: same code?
# Prediction: 0.5-0.9 s as is for the quantized families' modules (3-4 kernels each), split
# compile -30 to -50% there (their quant kernels assemble as long as the attention kernel), ~0
# for f16 (one kernel). ~2 min; timeout_s 240; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
nproc >> "$S"; lscpu | grep -E "Model name|^CPU\(s\)" >> "$S"
for f in f16 int8-f16 int8-fp8 nvfp4 mxfp4 nvfp4-int8qk; do
  line="$f"
  for d in 64 128 256; do
    ms=$($B/mxattn compile --family $f --head-dim $d 2>&1 | awk '/^compile/ {print $2}')
    line+=" D=$d ${ms:-fail}ms"
  done
  stamp "compile $line"
done
J=$B/jit
for src in $J/*.cu; do
  name=$(basename "$src" .cu)
  for opt in "" "--split-compile=4" "--split-compile=0"; do
    best=""
    for rep in 1 2 3; do
      t=$($J/nvt "$src" $opt | awk '{print $2}')
      best=$(awk -v a="$best" -v b="$t" 'BEGIN{print (a=="" || b+0<a+0) ? b : a}')
    done
    stamp "nvt $name ${opt:-base} best ${best} ms"
  done
  $J/nvt "$src" --time=$L/time_$name.csv > /dev/null
  stamp "phases $name: $(tail -n +2 $L/time_$name.csv | awk -F, '{printf "%s %s ms; ", $2, $3}')"
  CUBIN=$L/a.cubin $J/nvt "$src" > /dev/null; CUBIN=$L/b.cubin $J/nvt "$src" --split-compile=4 > /dev/null
  cuobjdump -sass $L/a.cubin > $L/a.sass; cuobjdump -sass $L/b.cubin > $L/b.sass
  # Function by function (the order of functions in a cubin may differ): same instructions?
  same=$(python3 - $L/a.sass $L/b.sass <<'PY'
import re, sys
def funcs(path):
    out, name = {}, None
    for line in open(path):
        m = re.match(r"\s+Function : (\S+)", line)
        if m: name = m.group(1); out[name] = []; continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if m and name: out[name].append(m.group(1).strip())
    return out
a, b = funcs(sys.argv[1]), funcs(sys.argv[2])
diff = [n for n in a if a[n] != b.get(n)] + [n for n in b if n not in a]
print("identical" if not diff else "DIFFERENT: " + " ".join(diff), sum(len(v) for v in a.values()), "instructions")
PY
)
  stamp "sass $name split=4 vs base: $same"
done
rm -f $L/a.cubin $L/b.cubin $L/a.sass $L/b.sass
finish_call
exit 0
