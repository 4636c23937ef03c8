# The CLI tests' common start, sourced by them: the program in MX (their first
# argument), a failure count, a scratch directory T removed at exit, and the
# cache database in it.
set -u
MX=${1:?usage: $(basename "$0") path/to/mxattn}
fails=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export MXATTN_CACHE="$T/db.sqlite"
