#!/usr/bin/env bash
# GPU check for the telemetry collector: on a machine with an NVIDIA GPU, trains a small model with
# AdvisorCallback and prints the NVML series summary, energy and MFU (see scripts/gpu_check.py).
#
#   scripts/gpu_check.sh [--backend tensorflow|jax] [--seconds 25] [--json out.json]
#
# Needs: an NVIDIA driver, Python with keras>=3.15, pydantic>=2.6, psutil, nvidia-ml-py, and
# TensorFlow with CUDA or JAX with CUDA. Whatever is missing is named, with the pip command.
# ADVISOR_GPU_SITE=DIR puts pre-installed packages (e.g. wheels unpacked with pip --target) on the path.
# The whole check is bounded by GPU_CHECK_TIMEOUT_S (default 300 s: two fits, the memory what-if
# and a fresh interpreter per installed backend reading its memory counters).
set -u
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD${ADVISOR_GPU_SITE:+:$ADVISOR_GPU_SITE}${PYTHONPATH:+:$PYTHONPATH}"
export TF_CPP_MIN_LOG_LEVEL=3
if command -v nvidia-smi >/dev/null 2>&1; then
  timeout 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit --format=csv,noheader || true
else
  echo "nvidia-smi: not found (no NVIDIA driver on PATH)"
fi
timeout --kill-after=10 "${GPU_CHECK_TIMEOUT_S:-300}" "$PY" scripts/gpu_check.py "$@"
rc=$?
[ "$rc" -eq 124 ] && echo "GPU CHECK TIMED OUT after ${GPU_CHECK_TIMEOUT_S:-300} s"
exit "$rc"
