#!/bin/bash
# The layers run one way: cli -> api -> tuner -> jit -> (runtime, cache, gen)
# -> numerics -> util.  A file may include headers of its own folder and of
# the layers below it; runtime, cache and gen sit side by side and include
# none of each other's.  util includes nothing of mxattn's, not even the
# public header.  cli includes only the public header and its own files.
#
#   layers.sh SOURCE_DIR      checks the tree; prints each crossing, exit 1
#   layers.sh --self-test     checks that a made-up tree's crossings are found
#
# Only quoted #include lines are read ("dir/file.h", or "file.h" for one of
# the folder's own); system headers (<...>) are not mxattn's.
set -u

# Known crossings still to be removed (issue #34): "file header" pairs.  An
# entry that no longer occurs is an error too, so the list only shrinks.
PENDING=(
)

rank() {
    case "$1" in
        util) echo 0 ;; numerics) echo 1 ;; gen|runtime|cache) echo 2 ;;
        jit) echo 3 ;; tuner) echo 4 ;; api) echo 5 ;; cli) echo 6 ;;
        include) echo 5 ;;   # the public header: what api/ implements
        *) echo -1 ;;
    esac
}

# check ROOT: prints "file: includes header (why)" per crossing.
check() {
    local root=$1 file dir header hdir why
    (cd "$root" && for dir in util numerics gen runtime cache jit tuner api cli; do
        [ -d "$dir" ] || continue
        for file in "$dir"/*.c "$dir"/*.h; do
            [ -f "$file" ] || continue
            sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file" |
            while read -r header; do
                why=""
                if [ "$header" = mxattn.h ]; then
                    [ "$dir" = util ] && why="util includes nothing of mxattn's"
                elif [[ "$header" != */* ]]; then
                    :   # one of the folder's own
                else
                    hdir=${header%%/*}
                    if [ "$dir" = cli ]; then
                        [ "$hdir" = cli ] || why="cli includes only mxattn.h and cli/ headers"
                    elif [ "$hdir" != "$dir" ]; then
                        local a b
                        a=$(rank "$dir"); b=$(rank "$hdir")
                        if [ "$b" -lt 0 ]; then why="not a layer folder"
                        elif [ "$b" -ge "$a" ]; then why="$hdir is not below $dir"
                        fi
                    fi
                fi
                [ -n "$why" ] && echo "$file: includes $header ($why)"
            done
        done
    done)
}

run() {
    local root=$1 found rc=0 line pend seen
    found=$(check "$root")
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        seen=0
        for pend in "${PENDING[@]}"; do
            [ "${line%%: includes *}" = "${pend%% *}" ] && [[ "$line" == *": includes ${pend#* } ("* ]] && seen=1
        done
        if [ $seen = 0 ]; then echo "layers: $line"; rc=1; fi
    done <<< "$found"
    for pend in "${PENDING[@]}"; do
        if ! grep -qF -- "${pend%% *}: includes ${pend#* } (" <<< "$found"; then
            echo "layers: '$pend' is in the pending list but no longer occurs: remove it from tests/layers.sh"
            rc=1
        fi
    done
    return $rc
}

if [ "${1:-}" = --self-test ]; then
    PENDING=()
    t=$(mktemp -d)
    trap 'rm -rf "$t"' EXIT
    mkdir -p "$t"/{util,numerics,gen,runtime,cache,jit,tuner,api,cli}
    printf '#include "util/err.h"\n#include "err.h"\n' > "$t/numerics/ok.c"
    printf '#include "gen/gen.h"\n#include "runtime/device.h"\n#include "mxattn.h"\n' > "$t/jit/ok.c"
    printf '#include "mxattn.h"\n#include "cli/cli.h"\n#include "space.h"\n#include <stdio.h>\n' > "$t/cli/ok.c"
    out=$(run "$t")
    [ $? = 0 ] || { echo "self-test: a legal tree was refused:"; echo "$out"; exit 1; }
    printf '#include "mxattn.h"\n' > "$t/util/up.h"                 # util -> public header
    printf '#include "runtime/device.h"\n' > "$t/gen/side.c"         # gen beside runtime
    printf '#include "tuner/tune.h"\n' > "$t/jit/up.c"               # jit -> tuner (above)
    printf '#include "api/context.h"\n' > "$t/cli/private.c"         # cli -> private header
    printf '  #  include "numerics/numerics.h"\n' > "$t/cli/spaced.c" # spacing does not hide it
    out=$(run "$t")
    for want in "util/up.h: includes mxattn.h" "gen/side.c: includes runtime/device.h" \
                "jit/up.c: includes tuner/tune.h" "cli/private.c: includes api/context.h" \
                "cli/spaced.c: includes numerics/numerics.h"; do
        grep -qF "$want" <<< "$out" || { echo "self-test: missed '$want' in:"; echo "$out"; exit 1; }
    done
    [ "$(grep -c . <<< "$out")" = 5 ] || { echo "self-test: expected 5 crossings:"; echo "$out"; exit 1; }
    PENDING=("cli/gone.c api/context.h")
    out=$(run "$t")
    grep -q "no longer occurs" <<< "$out" || { echo "self-test: a stale pending entry was not reported"; exit 1; }
    echo "self-test: ok"
    exit 0
fi

run "${1:?usage: layers.sh SOURCE_DIR | --self-test}" && echo "layers: ok"
