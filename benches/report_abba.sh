#!/usr/bin/env bash
# report and compare of one run file by two framelab binaries, alternately (base, this,
# this, base: ABBA), each timed (wall, user and system CPU, peak RSS: benches/timed.py), and
# every pair's output compared byte for byte (the HTML page names no binary; the file name
# is the same for both).
#
#   bash benches/report_abba.sh BASE_FRAMELAB THIS_FRAMELAB RUN_FILE [OUT_DIR]
#
# Prints one line a command and binary, then whether the two wrote the same bytes.
set -euo pipefail
base=$1 this=$2 run=$3 out=${4:-$(mktemp -d)}
mkdir -p "$out"

# name|arguments (RUN is the run file, OUT the file written)
commands=(
  "text|report RUN"
  "json|report --format json RUN"
  "markdown|report --format markdown RUN"
  "html|report --format html -o OUT RUN"
  "compare2|compare --variant a=RUN --variant b=RUN"
  "compare4|compare --variant a=RUN --variant b=RUN --variant c=RUN --variant d=RUN"
)

here=$(dirname "$(realpath "$0")")
# timed FILE CMD...: CMD's stdout to FILE, its stderr discarded; prints its wall time, user
# and system CPU and peak RSS (benches/timed.py).
timed() { local out=$1; shift; python3 "$here/timed.py" --out "$out" --quiet "$@"; }

one() { # binary label name args...
  local bin=$1 label=$2 name=$3
  shift 3
  local file="$out/$name.$label.out" args=()
  for a in "$@"; do
    a=${a//RUN/$run}
    args+=("${a//OUT/$file}")
  done
  timed "$out/$name.$label.stdout" "$name $label" "$bin" "${args[@]}"
}

for entry in "${commands[@]}"; do
  name=${entry%%|*}
  read -r -a args <<< "${entry#*|}"
  one "$base" base "$name" "${args[@]}"
  one "$this" this "$name" "${args[@]}"
  one "$this" this "$name" "${args[@]}"
  one "$base" base "$name" "${args[@]}"
  for kind in stdout out; do
    a="$out/$name.base.$kind" b="$out/$name.this.$kind"
    if [[ -e $a || -e $b ]]; then
      if cmp -s "$a" "$b"; then echo "$name $kind: same bytes"; else echo "$name $kind: DIFFERENT"; fi
    fi
  done
done
