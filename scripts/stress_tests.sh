#!/usr/bin/env bash
# Run the README's test command (`python -m pytest -q`, extra arguments passed through) while
# other processes keep CPU cores busy, as on a shared CI machine; print the wall time.
#
#   scripts/stress_tests.sh                      # the whole suite, one core kept busy
#   scripts/stress_tests.sh -m "not slow" -x     # any pytest arguments
#   STRESS_BUSY_CORES=2 PYTHON=.venv/bin/python scripts/stress_tests.sh
#
# The busy loops are killed when this script exits (normally, on error or on Ctrl-C); each loop
# also stops by itself when its parent shell is gone, so none outlives a killed run.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin="${PYTHON:-python}"
# A PYTHON given as a path (a virtualenv's python that is not activated) also goes first on PATH:
# tests that start `python train.py` (the real scaling sweeps) must find the same interpreter.
if [[ "$python_bin" == */* ]]; then
  PATH="$(cd "$(dirname "$python_bin")" && pwd):$PATH"
  export PATH
fi
busy_cores="${STRESS_BUSY_CORES:-1}"
busy_pids=()

stop_busy_loops() {
  for pid in "${busy_pids[@]+"${busy_pids[@]}"}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${busy_pids[@]+"${busy_pids[@]}"}"; do
    wait "$pid" 2>/dev/null || true
  done
  busy_pids=()
}
trap stop_busy_loops EXIT
trap 'stop_busy_loops; exit 130' INT
trap 'stop_busy_loops; exit 143' TERM

# A pure-Python spin that checks every ~0.1 s whether the shell that started it still exists.
busy_loop='
import os, sys, time
parent = int(sys.argv[1])
while True:
    deadline = time.monotonic() + 0.1
    while time.monotonic() < deadline:
        pass
    try:
        os.kill(parent, 0)
    except OSError:
        break
'
for _ in $(seq 1 "$busy_cores"); do
  "$python_bin" -c "$busy_loop" "$$" &
  busy_pids+=("$!")
done

echo "stress_tests: ${busy_cores} busy core(s) (pids ${busy_pids[*]}); running: ${python_bin} -m pytest -q $*"
start=$(date +%s)
status=0
"$python_bin" -m pytest -q "$@" || status=$?
elapsed=$(( $(date +%s) - start ))
stop_busy_loops
printf 'stress_tests: wall time %dm%02ds (%d s) with %s busy core(s); pytest exit %d\n' \
  $((elapsed / 60)) $((elapsed % 60)) "$elapsed" "$busy_cores" "$status"
exit "$status"
