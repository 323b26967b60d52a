"""Inside a SageMaker training job: the input mode of each data channel (File, FastFile, Pipe).

SageMaker describes the channels to the container in ``/opt/ml/input/config/inputdataconfig.json``
(and the training toolkit copies it into ``$SM_INPUT_DATA_CONFIG``); each channel's data appears
under ``/opt/ml/input/data/<channel>``. Checklist S302 asks whether the data is streamed
(FastFile, Pipe) or copied whole before training (File).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

CONFIG_DIR = "/opt/ml/input/config"
DATA_DIR = "/opt/ml/input/data"
MODES = ("File", "FastFile", "Pipe")


def channel_modes(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Channel name → input mode, from the job's configuration; empty outside SageMaker."""
    env = os.environ if environ is None else environ
    raw: Any = None
    if env.get("SM_INPUT_DATA_CONFIG"):
        try:
            raw = json.loads(env["SM_INPUT_DATA_CONFIG"])
        except ValueError:
            raw = None
    if raw is None:
        path = os.path.join(env.get("SM_INPUT_CONFIG_DIR", CONFIG_DIR), "inputdataconfig.json")
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except (OSError, ValueError):
            return {}
    if not isinstance(raw, dict):
        return {}
    modes: dict[str, str] = {}
    for channel, spec in raw.items():
        if isinstance(spec, dict):
            mode = spec.get("TrainingInputMode") or spec.get("InputMode")
            if mode in MODES:
                modes[str(channel)] = str(mode)
    return modes


def input_mode(
    paths: Sequence[str] = (), environ: dict[str, str] | None = None
) -> tuple[str, str] | None:
    """(mode, source) for the data the pipeline reads; None when nothing says.

    In a SageMaker job, the mode of the channel the pipeline's files lie in (or the one mode all
    channels share). Outside one, a pipeline that reads ``s3://`` paths itself streams: "Stream".
    """
    modes = channel_modes(environ)
    if modes:
        env = os.environ if environ is None else environ
        data_dir = env.get("SM_INPUT_DIR", os.path.dirname(DATA_DIR)) + "/data/"
        used = {modes[c] for c in modes for p in paths if p.startswith(f"{data_dir}{c}")}
        if len(used) == 1:
            return used.pop(), "sagemaker-config"
        if len(set(modes.values())) == 1:
            return next(iter(modes.values())), "sagemaker-config"
        if "File" in (used or set(modes.values())):
            return "File", "sagemaker-config"  # some channel is copied whole
    if any(p.startswith("s3://") for p in paths):
        return "Stream", "pipeline-paths"
    return None
