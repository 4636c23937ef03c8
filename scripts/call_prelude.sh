# Sourced by a session's device-call scripts (scripts/s*_call.sh): what
# sessions 8-10 wrote at the top and bottom of every call script.  Sets B (the
# carried build folder), L (the log folder under the device tool's $OUT), S
# (the summary), the library's environment, stamp (a timed summary line), and
# finish_call (packs the logs into one file, since $OUT returns at most 8,
# prints the summary); ab_best (an A/B's best time a line into the summary) and
# ncu_profile (one kernel's ncu source page, condensed, and its headline
# metrics), which session 11's calls wrote out each time; tune_and_bench (the
# tune and bench of issue #7's shapes, sessions 11 and 12's bench calls).
set -uo pipefail
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
stamp() { echo "[$(date +%T) +$SECONDS s] $*" >> "$S"; }
finish_call() {
  (cd "$L" && tar -czf "$OUT/logs.tgz" .)
  cat "$S"
}

# ab_best AB_TXT: each A/B line's best time over its rounds (ab.txt: round,
# templates, best ms, mean ms, problem...), sorted by problem, into the summary.
ab_best() {
  awk '{k=""; for (i=5;i<=NF;i++) k=k" "$i; n[k]++; if (!(k in b) || $3+0<b[k]) b[k]=$3+0}
       END{for (k in b) printf "best %.4f ms (%d rounds)%s\n", b[k], n[k], k}' "$1" |
    sed 's#--batch 4 --heads 32##' | sort -k6 >> "$S"
}

# sanitize_each CONFIG_PREFIX < LINES: compute-sanitizer memcheck, racecheck and synccheck of
# `mxattn run` for each line "CONFIG|RUN ARGUMENTS" of stdin (the config after CONFIG_PREFIX);
# a line of the summary each (rc 9: errors found), the tools' output in $L/sanitize.log.
sanitize_each() {
  local prefix=$1 cfg args tool
  while IFS='|' read -r cfg args; do
    for tool in memcheck racecheck synccheck; do
      timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run $args --reps 1 \
        --config "$prefix $cfg" < /dev/null > "$L/san.tmp" 2>&1
      stamp "$tool rc=$? $cfg $args | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|error +rel' "$L/san.tmp" | tr -s ' ' | tr '\n' ' ')"
      cat "$L/san.tmp" >> "$L/sanitize.log"
    done
  done
  rm -f "$L/san.tmp"
}

# ncu_profile LIMIT_S KERNEL_REGEX WARP_TILES -- COMMAND...: ncu --set full of the
# first launch of the kernel COMMAND runs; its source page condensed to
# $L/attn_source_lines.txt (scripts/ncu_source_lines.py), the headline metrics
# and the warp instructions a warp-tile (WARP_TILES = tiles x warps) into the summary.
ncu_profile() {
  local limit=$1 regex=$2 warp_tiles=$3; shift 4
  timeout "$limit" ncu --set full --clock-control none -k regex:"$regex" -c 1 -o "$L/attn" "$@" > "$L/ncu.log" 2>&1
  [[ -f "$L/attn.ncu-rep" ]] || { stamp "ncu: no report (ncu.log)"; return; }
  ncu --import "$L/attn.ncu-rep" --page source --print-source sass --csv > "$L/src.csv" 2>&1
  python3 scripts/ncu_source_lines.py "$L/src.csv" > "$L/attn_source_lines.txt"
  ncu --import "$L/attn.ncu-rep" --page details > "$L/details.txt" 2>&1
  grep -E "Duration|Registers Per|Issue Slots Busy|Executed Ipc A|Achieved Occupancy" "$L/details.txt" | head -8 >> "$S"
  rm -f "$L/attn.ncu-rep" "$L/src.csv"
  stamp "ncu: $(awk -v w="$warp_tiles" 'NR>1{s+=$2} END{printf "%.1f warp instructions a warp-tile", s/w}' "$L/attn_source_lines.txt")"
}

# tune_and_bench TUNE_END BENCH_END ROUNDS [REP_MS]: `mxattn tune` of f16 and int8-fp8 at issue
# #7's shapes (8 candidates each) until TUNE_END seconds into the call, the database's winners into
# the summary, then bench/attention.py on that database (ROUNDS rounds sharing REP_MS of timing a
# row, default 100; clocks, N=1024 included) until BENCH_END, its f16 / int8-fp8 / cuDNN rows into
# the summary.
tune_and_bench() {
  local tune_end=$1 bench_end=$2 rounds=$3 rep_ms=${4:-100}
  timeout $((tune_end - SECONDS)) $B/mxattn tune --family f16,int8-fp8 --head-dims 128,64 --seqs 4096,16384 --causal both \
    --batch 4 --heads 32 --max-candidates 8 > "$L/tune.log" 2>&1
  stamp "tune rc=$?"
  $B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
  BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 1024,4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds $rounds --rep-ms $rep_ms --clocks" \
    BENCH_TIMEOUT=$((bench_end - SECONDS)) MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
  stamp "$(grep '^## bench' "$L/device_bench.log")"
  grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8 >> "$S"
}
