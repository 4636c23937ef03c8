#!/bin/bash
# `mxattn db keygen`, `db export --with-kernels --sign` and `db import
# --with-kernels --trust`: kernels enter only signed by a trusted key; tuning
# rows with impossible values are refused and counted.  Kernels and rows are
# planted with Python's sqlite3 module (compiling needs NVRTC).
# Usage: bash tests/cli_db_sign.sh /path/to/mxattn.  Exit 0 pass, 1 fail, 77 skip.
set -u
MX=${1:?usage: cli_db_sign.sh /path/to/mxattn}
T=$(mktemp -d /tmp/mxattn-cli-sign-XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
python3 -c 'import sqlite3, hashlib' 2>/dev/null || { echo "skip: no python3 sqlite3 module to plant rows"; exit 77; }

# py DB SCRIPT: runs Python with `c`, a connection to DB, and commits.
py() { python3 -c 'import sqlite3, hashlib, sys
c = sqlite3.connect(sys.argv[1])
exec(sys.argv[2])
c.commit()' "$1" "$2"; }

# run EXPECTED_RC NAME CMD...: output in $T/out and $T/err.
run() {
    local want=$1 name=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"; local rc=$?
    [ $rc -eq "$want" ] || fail "$name: exit $rc, wanted $want: $(cat "$T/out" "$T/err")"
}
has() { grep -qE -- "$2" "$T/$1" || fail "$3: $1 lacks /$2/: $(cat "$T/$1")"; }

SRC="$T/src.db"; DST="$T/dst.db"
run 0 "create source" "$MX" db vacuum --db "$SRC"
run 0 "create target" "$MX" db vacuum --db "$DST"
KEY_COLS="gpu_name, sm_count, compute_capability, driver_version, nvrtc_version, mxattn_version, template_hash, family, head_dim, dtype, out_dtype, causal, gqa, layout, seq_bucket, q_bucket"
py "$SRC" "
for i, ms in enumerate([1.0, 1e-300]):
    c.execute('INSERT INTO tune_results($KEY_COLS, config, median_ms, tops, default_ms, tuned_at) VALUES'
              '(\'NVIDIA H200\', 132, 90, 12040, 12040, \'0.1.0\', \'abc\', \'f16\', 64, \'f16\', \'f16\', 0, 1,'
              ' \'bhnd\', ?, ?, \'block_m=64\', ?, 400, 2, 1700000000)', (1024 << i, 1024 << i, ms))
for i in range(2):
    blob = bytes((j * 7 + i) & 255 for j in range(3000))
    c.execute('INSERT INTO kernels(key, arch, nvrtc_version, kernel_names, cubin, cubin_sha256, compile_ms,'
              ' registers, shared_bytes, spill_bytes, created_at) VALUES(?, \'sm_90a\', 12040, \'mxattn_f16_fwd\','
              ' ?, ?, 1.0, 96, 0, 0, 1700000000)',
              (hashlib.sha256(b'k%d' % i).hexdigest(), blob, hashlib.sha256(blob).hexdigest()))"

# ---- keys ---------------------------------------------------------------------
run 0 "keygen" "$MX" db keygen --out "$T/signer.key"
PUB=$(cat "$T/out")
[[ "$PUB" =~ ^[0-9a-f]{64}$ ]] || fail "keygen printed '$PUB', not a public key"
[ "$(cat "$T/signer.key.pub")" = "$PUB" ] || fail "signer.key.pub differs from the printed key"
[ "$(stat -c %a "$T/signer.key")" = 600 ] || fail "secret key mode $(stat -c %a "$T/signer.key")"
run 1 "keygen never overwrites" "$MX" db keygen --out "$T/signer.key"
run 0 "a second key" "$MX" db keygen --out "$T/other.key"
run 2 "keygen needs --out" "$MX" db keygen

# ---- export and import --------------------------------------------------------
run 0 "signed export" "$MX" db export "$T/signed.mxdb" --with-kernels --sign "$T/signer.key" --db "$SRC"
has out "signed kernels" "signed export"
run 0 "unsigned export" "$MX" db export "$T/unsigned.mxdb" --with-kernels --db "$SRC"
run 2 "--sign without --with-kernels" "$MX" db export "$T/x.mxdb" --sign "$T/signer.key" --db "$SRC"
run 2 "--with-kernels needs --trust" "$MX" db import "$T/signed.mxdb" --with-kernels --db "$DST"

# By default: the tuning rows, never kernels; the 1e-300 row is refused.
run 0 "default import" "$MX" db import "$T/signed.mxdb" --db "$DST"
has out "2 tuning results read, 1 taken, 0 kept \(ours faster\), 1 refused; 0 kernels read" "default import"
has err "refused 1 row: .*median_ms 1e-300" "default import"

run 1 "untrusted signer" "$MX" db import "$T/signed.mxdb" --with-kernels --trust "$T/other.key.pub" --db "$DST"
has err "UNTRUSTED|not a trusted key" "untrusted signer"
run 1 "unsigned file" "$MX" db import "$T/unsigned.mxdb" --with-kernels --trust "$PUB" --db "$DST"
has err "unsigned" "unsigned file"
cp "$T/signed.mxdb" "$T/forged.mxdb"
py "$T/forged.mxdb" "
blob = bytes(3000)
c.execute('UPDATE kernels SET cubin = ?, cubin_sha256 = ? WHERE rowid = 1', (blob, hashlib.sha256(blob).hexdigest()))"
run 1 "tampered cubin with its hash updated" "$MX" db import "$T/forged.mxdb" --with-kernels --trust "$PUB" --db "$DST"
has err "does not cover" "forged"
run 0 "count after refusals" "$MX" db check --db "$DST"
has out "kernels: +0 checked" "nothing entered"

run 0 "trusted import" "$MX" db import "$T/signed.mxdb" --with-kernels --trust "$T/other.key.pub" --trust "$PUB" --db "$DST"
has out "2 kernels read, 2 taken" "trusted import"

[ $failures -eq 0 ] && echo "ok"
[ $failures -eq 0 ]
