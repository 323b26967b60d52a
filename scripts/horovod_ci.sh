#!/usr/bin/env bash
# Horovod for real: build Horovod 0.28.1 with Gloo in its own constrained virtualenv, run a 1- and
# 2-worker `advisor scale --strategy horovod` sweep over loopback with Horovod's timeline, and
# check the report (scripts/horovod_ci_check.py). `.ci/run` runs this when its files changed or
# with ADVISOR_CI_HOROVOD=1; run it by hand any time:
#
#   scripts/horovod_ci.sh                # needs python3.11, cmake, g++; ~8 min the first time
#   scripts/horovod_ci.sh --if-changed   # skip when the files it tests are unchanged since the last pass
#
# A pass writes the fingerprint of the files it covers to scripts/horovod-ci.passed; commit that
# file with the change, and CI skips the step until one of those files changes again (a clean CI
# machine has no state of its own, so the record lives in the repository).
#
# The environment is built once per constraints file and kept in
# ${ADVISOR_HOROVOD_VENV:-~/.cache/advisor/horovod-<hash of scripts/horovod-constraints.txt>}
# (TensorFlow 2.13.1 CPU, Horovod with Gloo, no MPI); every install in it goes through
# scripts/horovod-constraints.txt. The advisor is installed without its Keras 3 dependency
# (Keras 3 would replace TensorFlow 2.13's tf.keras), then its other dependencies.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONSTRAINTS="$ROOT/scripts/horovod-constraints.txt"
PY=${PYTHON:-python3.11}
KEY=$(sha256sum "$CONSTRAINTS" | cut -c1-12)
VENV=${ADVISOR_HOROVOD_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/advisor/horovod-$KEY}
START=$(date +%s)
export PIP_DISABLE_PIP_VERSION_CHECK=1 TF_CPP_MIN_LOG_LEVEL=3

# What this check covers: a change to any of these files runs it again under --if-changed.
WATCHED=(scripts/horovod_ci.sh scripts/horovod-constraints.txt scripts/horovod_ci_check.py
         examples/scaling/train.py advisor/launch advisor/traces/horovod_timeline.py advisor/traces/attach.py
         advisor/collectors/context.py advisor/collectors/callback.py pyproject.toml)
PASSED="$ROOT/scripts/horovod-ci.passed"
FINGERPRINT=$(cd "$ROOT" && find "${WATCHED[@]}" -type f ! -path '*__pycache__*' -print0 | sort -z \
  | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [ "${1:-}" = "--if-changed" ] && [ -f "$PASSED" ] && [ "$(head -c 16 "$PASSED")" = "$FINGERPRINT" ]; then
  echo "horovod-ci: skipped: its files are unchanged since it last passed ($PASSED); ADVISOR_CI_HOROVOD=1 runs it"
  exit 0
fi

pipc() { python -m pip install -q -c "$CONSTRAINTS" "$@"; }

if [ ! -f "$VENV/.built" ]; then
  echo "horovod-ci: building the environment in $VENV"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  # shellcheck disable=SC1091
  . "$VENV/bin/activate"
  pipc --upgrade pip "wheel" "setuptools<70" "cmake<4"
  pipc "tensorflow-cpu==2.13.1" "numpy<1.25"
  # Horovod's sdist imports TensorFlow while it builds: no build isolation, no [tensorflow] extra
  # (the extra pulls a second, newer TensorFlow beside tensorflow-cpu).
  HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
  HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
    pipc --no-build-isolation --no-cache-dir "horovod==0.28.1"
  touch "$VENV/.built"
  echo "horovod-ci: environment built in $(( $(date +%s) - START )) s"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
# The advisor from this checkout, and its dependencies but Keras 3 (read from pyproject.toml).
pipc --no-deps -e "$ROOT"
mapfile -t DEPS < <(python - "$ROOT/pyproject.toml" <<'PY'
import sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
print("\n".join(d for d in deps if not d.replace(" ", "").startswith("keras")))
PY
)
pipc "${DEPS[@]}" "matplotlib<3.9"

BUILD=$(horovodrun --check-build)
echo "$BUILD"
grep -q '\[X\] Gloo' <<<"$BUILD" || { echo "horovod-ci: Horovod was built without Gloo" >&2; exit 1; }
python -c "import tensorflow as tf, horovod, numpy; print('horovod-ci: horovod', horovod.__version__, '| tensorflow', tf.__version__, '| numpy', numpy.__version__)"

RUNS=$(mktemp -d "${TMPDIR:-/tmp}/advisor-horovod-ci.XXXXXX")
SWEEP=horovod-ci
advisor --runs-dir "$RUNS" scale --workers 1,2 --strategy horovod --timeout 600 --sweep-id "$SWEEP" \
  -- python "$ROOT/examples/scaling/train.py" --epochs 2 --samples 4096 --compression fp16
advisor --runs-dir "$RUNS" report "$SWEEP" --format json > "$RUNS/report.json"
python "$ROOT/scripts/horovod_ci_check.py" "$RUNS" "$SWEEP" "$RUNS/report.json" --compression fp16
echo "$FINGERPRINT passed $(date -u +%FT%TZ)" > "$PASSED"
echo "horovod-ci: passed in $(( $(date +%s) - START )) s (runs kept in $RUNS); commit $PASSED to skip it until its files change"
