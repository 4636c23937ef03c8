#!/usr/bin/env bash
# Makes a template folder per git revision inside a build folder, for
# scripts/device.sh --ab:  scripts/ab_templates.sh BUILD REV [REV ...]
# writes BUILD/tpl/<rev>/templates (the revision's templates/, via git archive)
# and prints the AB_TEMPLATES value that names them ("-" for the build's own
# templates can be added to it by hand).  Run it here, before the build folder
# is carried to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { echo "usage: scripts/ab_templates.sh BUILD REV [REV ...]" >&2; exit 2; }
build=$1; shift
dirs=()
for rev in "$@"; do
  git rev-parse --verify --quiet "$rev^{commit}" > /dev/null || { echo "ab_templates: no revision '$rev'" >&2; exit 2; }
  name=$(printf '%s' "$rev" | tr -c 'A-Za-z0-9._-' '_')
  rm -rf "$build/tpl/$name" && mkdir -p "$build/tpl/$name"
  git archive "$rev" templates | tar -x -C "$build/tpl/$name"
  dirs+=("$build/tpl/$name/templates")
done
echo "${dirs[*]}"
