#!/usr/bin/env bash
# Every benchmark, one after the other, on a quiet machine; the output is what RESULTS.md quotes.
#   bash benchmarks/run_all.sh 2>&1 | tee /tmp/bench.log
set -u
cd "$(dirname "$0")/.."
export TF_CPP_MIN_LOG_LEVEL=3 PYTHONUNBUFFERED=1
run() { echo; echo "### $*"; uptime; "$@" 2>&1 | grep -v -E '^(I0000|W0000|WARNING: All log)'; }
run python benchmarks/overhead.py --pairs 7
for backend in jax torch tf_keras; do run python benchmarks/overhead.py --pairs 7 --backend "$backend"; done
run python benchmarks/check_speed.py --repeats 7 --hours 1
run python benchmarks/long_run.py --repeats 5
run python benchmarks/trace_speed.py --repeats 5 --pairs 7
run python benchmarks/telemetry_overhead.py --pairs 7
run python benchmarks/memory.py --pairs 7
run python benchmarks/memory_overhead.py --fits 5
run python benchmarks/tfdata_guide.py
run python benchmarks/baseline_noise.py --repeats 3
run python benchmarks/track_overhead.py --framework torch --pairs 9 --steps 6000
run python benchmarks/track_overhead.py --framework jax --pairs 9 --steps 3000 --width 1024
run python benchmarks/track_epoch_end.py --epochs 2000
run python benchmarks/tui_load.py --repeats 5
run python benchmarks/store_scan.py --repeats 5
run python benchmarks/diagnosis.py --markdown
run python benchmarks/whatif.py --scenario all
run python benchmarks/fast_step_spread.py --fits 8
run python benchmarks/after_idle.py --rounds 6
run python benchmarks/regression_gate.py
