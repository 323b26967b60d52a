"""The entry points of custom-loop tracking: ``advisor.track`` and ``@advisor.tracked``."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, overload

from advisor.collectors.options import Pricing
from advisor.tracking.run import TrackedRun

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")


def _signature_of(source: Callable[P, Any]) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Give the decorated function ``source``'s parameters, for type checkers (``ParamSpec``) and
    for ``inspect.signature``: one written signature, ``TrackedRun``'s, serves ``track`` too."""

    def apply(fn: Callable[..., R]) -> Callable[P, R]:
        returns = inspect.signature(fn).return_annotation
        signature = inspect.signature(source).replace(return_annotation=returns)
        fn.__signature__ = signature  # type: ignore[attr-defined]
        return fn

    return apply


@_signature_of(TrackedRun)
def track(*args: Any, **kwargs: Any) -> TrackedRun:
    """Record a custom training loop: ``with advisor.track(batch_size=64) as run: ... run.step()``.

    The first parameter is ``batch_size``, what only the loop can tell (``fit`` tells the
    callback); the second is ``runs_dir``, the store, which every other entry point takes first
    (``AdvisorCallback``, ``advisor.RunService``, the frames). ``backend``: ``jax``, ``torch``
    or ``tensorflow`` (found from the imported modules otherwise); the other options mean what
    they mean for ``AdvisorCallback``, environment variables included (an argument wins over
    them). ``model``: what the loop trains (a Keras model, a torch ``nn.Module`` or a
    ``jax.jit``-ed step), with ``sample`` one batch of its inputs (the step's arguments for JAX),
    or ``flops_per_sample`` outright: the FLOPs of the loop's speed of light, counted at its end
    (docs/speed-of-light.md). The old ``window_s``, ``log_every_s`` and ``telemetry_interval_s``
    still work, with a DeprecationWarning. The parameters are :class:`TrackedRun`'s.
    """
    return TrackedRun(*args, **kwargs)


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
    speed_of_light: bool = True,
    model: Any = None,
    sample: Any = None,
    flops_per_sample: float | None = None,
) -> Callable[[F], F]: ...


def tracked(func: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
    """Decorate a ``train()`` function or method so that each call is one tracked run; the
    options are :func:`track`'s.

    ``@advisor.tracked(batch_size=64)``; inside, ``advisor.current_run()`` is the run, and a
    ``run`` parameter of the function (when it has one and the caller gave none) receives it.
    """
    TrackedRun(**options)  # check the options now, at decoration, not at the first call

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


def _keyword_signature(fn: Callable[..., Any]) -> inspect.Signature:
    """``fn``'s own first parameter (the function it decorates, positional), then ``track``'s
    parameters as keywords: what ``help(advisor.tracked)`` shows."""
    func = next(iter(inspect.signature(fn).parameters.values()))
    options = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(TrackedRun).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    return inspect.Signature([func, *options], return_annotation="F | Callable[[F], F]")


tracked.__signature__ = _keyword_signature(tracked)  # type: ignore[attr-defined]
