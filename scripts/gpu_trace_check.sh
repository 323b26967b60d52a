#!/usr/bin/env bash
# Check profile capture + XProf summaries with device-side numbers on a machine with an NVIDIA GPU.
#
#   bash scripts/gpu_trace_check.sh            # ~1-2 min; prints PASS/FAIL lines, exit 1 on a failure
#
# Uses TensorFlow when it sees a GPU, else Keras's JAX backend. Python packages that are missing
# (keras, pydantic, xprof, ...) are installed from wheels in .whl/ and .whl-trace/ when those
# folders exist (for machines without network access; see docs/traces.md for how to fetch them),
# else from the package index. $OUT, when set, receives the log and XProf's raw outputs.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SITE=${ADVISOR_CHECK_SITE:-/tmp/advisor-check-site}

echo "== GPU"
nvidia-smi -L 2>/dev/null || echo "nvidia-smi not found"

missing=$($PY - <<'EOF'
import importlib.util
need = {"keras": "keras", "pydantic": "pydantic", "xprof": "xprof", "click": "click", "gviz_api": "gviz-api",
        "optree": "optree", "namex": "namex", "six": "six", "psutil": "psutil"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))
EOF
)
if [ -n "$missing" ]; then
  echo "== missing Python packages: $missing"
  wheels=$(ls .whl/*.whl .whl-trace/*.whl 2>/dev/null)
  if [ -n "$wheels" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" $wheels \
      || { echo "[FAIL] could not install the carried wheels"; exit 1; }
  else
    $PY -m pip install -q --target "$SITE" $missing || { echo "[FAIL] could not install: $missing"; exit 1; }
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
# XProf's generated protobuf code needs a recent protobuf runtime.
$PY -c "from xprof.convert import raw_to_tool_data" 2>/dev/null || {
  echo "== xprof does not import with this protobuf; using the carried one"
  ls .whl-trace/protobuf-*.whl >/dev/null 2>&1 && \
    $PY -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE-pb" .whl-trace/protobuf-*.whl && \
    export PYTHONPATH="$SITE-pb:$PYTHONPATH"
}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TF_CPP_MIN_LOG_LEVEL=3 PYTHONUNBUFFERED=1

echo "== capture and summarise"
timeout 170 $PY scripts/gpu_trace_check.py
status=$?
[ $status -eq 124 ] && echo "[FAIL] the check ran past 170 s and was stopped"
exit $status
