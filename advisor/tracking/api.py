"""The entry points of custom-loop tracking: ``advisor.track`` and ``@advisor.tracked``."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, TypeVar, overload

from advisor.collectors.options import Pricing
from advisor.tracking.run import TrackedRun

F = TypeVar("F", bound=Callable[..., Any])


def track(
    batch_size: int | None = None,
    runs_dir: str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    tags: dict[str, str] | None = None,
    backend: str | None = None,
    instance_type: str | None = None,
    price_per_hour: float | None = None,
    window_seconds: float = 10.0,
    warmup_steps: int = 5,
    log_every_seconds: float | None = 60.0,
    telemetry: bool = True,
    telemetry_interval_seconds: float = 1.0,
    mlflow: bool = False,
    pricing: Pricing | None = None,
    **deprecated: Any,
) -> TrackedRun:
    """Record a custom training loop: ``with advisor.track(batch_size=64) as run: ... run.step()``.

    The first parameter is ``batch_size``, what only the loop can tell (``fit`` tells the
    callback); the second is ``runs_dir``, the store, which every other entry point takes first
    (``AdvisorCallback``, ``advisor.RunService``, the frames). ``backend``: ``jax``/``torch``/``tensorflow``
    (found from the imported modules otherwise); the other options mean what they mean for
    ``AdvisorCallback``, environment variables included (an argument wins over them). The old
    ``window_s``, ``log_every_s`` and ``telemetry_interval_s`` still work, with a DeprecationWarning.
    """
    return TrackedRun(
        batch_size,
        runs_dir,
        name=name,
        tags=tags,
        backend=backend,
        instance_type=instance_type,
        price_per_hour=price_per_hour,
        window_seconds=window_seconds,
        warmup_steps=warmup_steps,
        log_every_seconds=log_every_seconds,
        telemetry=telemetry,
        telemetry_interval_seconds=telemetry_interval_seconds,
        mlflow=mlflow,
        pricing=pricing,
        **deprecated,
    )


@overload
def tracked(func: F, /) -> F: ...


@overload
def tracked(
    func: None = None,
    /,
    *,
    batch_size: int | None = None,
    runs_dir: str | os.PathLike[str] | None = None,
    name: str | None = None,
    tags: dict[str, str] | None = None,
    backend: str | None = None,
    instance_type: str | None = None,
    price_per_hour: float | None = None,
    window_seconds: float = 10.0,
    warmup_steps: int = 5,
    log_every_seconds: float | None = 60.0,
    telemetry: bool = True,
    telemetry_interval_seconds: float = 1.0,
    mlflow: bool = False,
    pricing: Pricing | None = None,
) -> Callable[[F], F]: ...


def tracked(
    func: F | None = None,
    /,
    *,
    batch_size: int | None = None,
    runs_dir: str | os.PathLike[str] | None = None,
    name: str | None = None,
    tags: dict[str, str] | None = None,
    backend: str | None = None,
    instance_type: str | None = None,
    price_per_hour: float | None = None,
    window_seconds: float = 10.0,
    warmup_steps: int = 5,
    log_every_seconds: float | None = 60.0,
    telemetry: bool = True,
    telemetry_interval_seconds: float = 1.0,
    mlflow: bool = False,
    pricing: Pricing | None = None,
    **deprecated: Any,
) -> F | Callable[[F], F]:
    """Decorate a ``train()`` function or method so that each call is one tracked run; the
    options are :func:`track`'s.

    ``@advisor.tracked(batch_size=64)``; inside, ``advisor.current_run()`` is the run, and a
    ``run`` parameter of the function (when it has one and the caller gave none) receives it.
    """
    options: dict[str, Any] = dict(
        batch_size=batch_size,
        runs_dir=runs_dir,
        name=name,
        tags=tags,
        backend=backend,
        instance_type=instance_type,
        price_per_hour=price_per_hour,
        window_seconds=window_seconds,
        warmup_steps=warmup_steps,
        log_every_seconds=log_every_seconds,
        telemetry=telemetry,
        telemetry_interval_seconds=telemetry_interval_seconds,
        mlflow=mlflow,
        pricing=pricing,
    )
    TrackedRun(
        **options, **deprecated
    )  # check the options now, at decoration, not at the first call
    options.update(deprecated)

    def decorate(fn: F) -> F:
        wants_run = "run" in inspect.signature(fn).parameters

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with TrackedRun(**options) as run:
                if wants_run and "run" not in kwargs:
                    kwargs["run"] = run
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate(func) if func is not None else decorate
