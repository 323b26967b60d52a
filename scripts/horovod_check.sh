#!/usr/bin/env bash
# Build Horovod for real in a pinned environment and run a 1- and 2-worker Horovod sweep with the
# scaling report. Horovod is not built in CI or in the main environment: its last release (0.28.1)
# builds unchanged only against TensorFlow <= 2.13 (on 2.21 its XLA ops do not compile), and the
# build takes minutes. Run this where that is acceptable; it changes nothing outside VENV_DIR.
#
#   scripts/horovod_check.sh [VENV_DIR]        # default .venv-horovod; needs python3.11, cmake, g++
#
# Versions that work (measured): Horovod 0.28.1 + TensorFlow(-cpu) 2.13.1 + Gloo, Python 3.11,
# numpy < 2; build ~2.5 min on 2 cores. TensorFlow 2.13 bundles Keras 2 as tf.keras, so the
# advisor is installed without its Keras 3 dependency (Keras 3 would replace tf.keras there).
set -euo pipefail

VENV=${1:-.venv-horovod}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}

"$PY" -m venv "$VENV"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip wheel setuptools
python -m pip install -q "tensorflow-cpu==2.13.1" "numpy<2" "cmake<4"
# Horovod's sdist imports TensorFlow while building: no build isolation.
HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
  python -m pip install --no-build-isolation --no-cache-dir "horovod[tensorflow]==0.28.1"
# The advisor without Keras 3 (see above), then its other dependencies.
python -m pip install -q --no-deps -e "$ROOT"
python -m pip install -q "pydantic>=2.6" "click>=8.1" "rich>=13" "psutil>=5.9" "nvidia-ml-py>=12" \
  "simpleeval>=1.0" "pyyaml>=6" "matplotlib>=3.7"

horovodrun --check-build
python - <<'PY'
import horovod.tensorflow.keras as hvd
hvd.init()
print(f"horovod {hvd.__version__ if hasattr(hvd, '__version__') else ''} rank {hvd.rank()} of {hvd.size()}")
PY

RUNS=$(mktemp -d)
export TF_CPP_MIN_LOG_LEVEL=3
advisor --runs-dir "$RUNS" scale --workers 1,2 --strategy horovod --timeout 300 --sweep-id horovod-check \
  -- python "$ROOT/examples/scaling/train.py" --epochs 2 --samples 2048
advisor --runs-dir "$RUNS" report horovod-check --format md
echo "runs kept in $RUNS"
