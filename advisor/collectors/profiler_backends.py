"""The profiler backends: how each Keras backend starts, stops and marks steps in a profile.

:class:`~advisor.collectors.profiler.ProfilerCollector` picks one by the model's backend from
:data:`BACKENDS`; each imports its framework when made, at train begin.
"""

from __future__ import annotations

import os
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol


class ProfilerBackend(Protocol):
    """How one framework starts, stops and marks steps in a profile (xplane.pb output)."""

    name: str

    def start(self, logdir: str) -> None: ...

    def stop(self) -> None: ...

    def marker(self, step: int) -> AbstractContextManager[Any]: ...

    def already_running(self, exc: BaseException) -> bool: ...


class TensorFlowProfiler:
    name = "tensorflow"

    def __init__(self) -> None:
        import tensorflow as tf

        self._tf = tf

    def start(self, logdir: str) -> None:
        self._tf.profiler.experimental.start(logdir)

    def stop(self) -> None:
        self._tf.profiler.experimental.stop()

    def marker(self, step: int) -> AbstractContextManager[Any]:
        return self._tf.profiler.experimental.Trace("train", step_num=step, _r=1)  # type: ignore[no-any-return]

    def already_running(self, exc: BaseException) -> bool:
        return type(exc).__name__ == "AlreadyExistsError" or "already" in str(exc).lower()


class JaxProfiler:
    name = "jax"

    def __init__(self) -> None:
        import jax

        self._jax = jax

    def start(self, logdir: str) -> None:
        # JAX traces every Python call by default: that costs more than the steps themselves and
        # would show up as "all others" time. TF's profiler leaves Python tracing off too.
        options_cls = getattr(self._jax.profiler, "ProfileOptions", None)
        if options_cls is None:
            self._jax.profiler.start_trace(logdir)
            return
        options = options_cls()
        options.python_tracer_level = 0
        self._jax.profiler.start_trace(logdir, profiler_options=options)

    def stop(self) -> None:
        self._jax.profiler.stop_trace()

    def marker(self, step: int) -> AbstractContextManager[Any]:
        return self._jax.profiler.StepTraceAnnotation("train", step_num=step)  # type: ignore[no-any-return]

    def already_running(self, exc: BaseException) -> bool:
        return "already" in str(exc).lower()


class TorchProfiler:
    """``torch.profiler`` (Kineto): CPU activity, and CUDA where a GPU is present.

    Writes Kineto's chrome trace as ``<logdir>/plugins/profile/<session>/<host>.pt.trace.json``
    (the folder layout of TensorFlow profiles, so runs look alike). Steps are
    ``record_function("ProfilerStep#N")`` ranges, the name torch's own ``profiler.step()`` gives
    them, so TensorBoard's torch plugin and HTA read our traces too.
    """

    name = "torch"
    trace_suffix = ".pt.trace.json"

    def __init__(self) -> None:
        import torch
        import torch.profiler

        self._torch = torch
        self._profile: Any = None
        self._logdir = ""

    def start(self, logdir: str) -> None:
        profiler = self._torch.profiler
        activities = [profiler.ProfilerActivity.CPU]
        if self._torch.cuda.is_available():
            activities.append(profiler.ProfilerActivity.CUDA)
        prof = profiler.profile(activities=activities, record_shapes=False, with_stack=False)
        prof.start()
        self._profile, self._logdir = prof, logdir

    def stop(self) -> None:
        import socket

        prof, self._profile = self._profile, None
        if prof is None:
            return
        prof.stop()
        session = Path(self._logdir) / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
        session.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(
            str(session / f"{socket.gethostname()}.{os.getpid()}{self.trace_suffix}")
        )

    def marker(self, step: int) -> AbstractContextManager[Any]:
        return self._torch.profiler.record_function(f"ProfilerStep#{step}")  # type: ignore[no-any-return]

    def already_running(self, exc: BaseException) -> bool:
        text = str(exc).lower()
        return "already" in text and "profil" in text


# Keras backend name → profiler backend factory.
BACKENDS: dict[str, Any] = {
    "tensorflow": TensorFlowProfiler,
    "jax": JaxProfiler,
    "torch": TorchProfiler,
}
