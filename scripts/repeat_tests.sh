#!/usr/bin/env bash
# Run the given pytest node ids N times in a row, from a copy of the repository on PYTHONPATH
# (not the installed checkout) and, with BUSY=K, beside K CPU-burning processes.
#   scripts/repeat_tests.sh 30 'tests/integration/test_score_gate.py::test_x[y]' ...
# Prints one line per run and a closing "N passed, M failed".
set -uo pipefail
n=$1; shift
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$repo/.venv/bin/python}
copy=$(mktemp -d /tmp/perfbench-copy.XXXXXX)
git -C "$repo" ls-files -z --cached --others --exclude-standard | (cd "$repo" && xargs -0 cp --parents -t "$copy")
burners=()
for _ in $(seq 1 "${BUSY:-0}"); do (while :; do :; done) & burners+=($!); done
trap 'kill "${burners[@]}" 2>/dev/null; rm -rf "$copy"' EXIT
passed=0; failed=0
for i in $(seq 1 "$n"); do
  if (cd "$copy" && PYTHONPATH="$copy" "$py" -m pytest -q -p no:cacheprovider "$@" >"$copy/run.log" 2>&1); then
    passed=$((passed + 1)); echo "run $i: ok"
  else
    failed=$((failed + 1)); echo "run $i: FAILED"; tail -20 "$copy/run.log"
  fi
done
echo "$passed passed, $failed failed"
