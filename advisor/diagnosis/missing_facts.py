"""What to switch on to measure a missing fact, by the fact's source (see the facts registry)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from advisor.analysis.registry import FactRegistry

HINTS: dict[str, str] = {
    "throughput": "train with advisor.AdvisorCallback (its throughput collector is on by default)",
    "epochs": "train with advisor.AdvisorCallback (its epoch collector is on by default)",
    "context": "train with advisor.AdvisorCallback (its context collector is on by default)",
    "guard": "train with advisor.AdvisorCallback",
    "store": "train with advisor.AdvisorCallback",
    "prices": (
        'give the price: AdvisorCallback(instance_type="g5.xlarge") or price_per_hour=..., '
        "or set ADVISOR_INSTANCE_TYPE"
    ),
    "nvml": (
        "train on a host with an NVIDIA GPU and nvidia-ml-py installed (telemetry is on by "
        "default; telemetry=False turns it off)"
    ),
    "psutil": "keep telemetry on (the default; AdvisorCallback(telemetry=False) turns it off)",
    "baseline": (
        'measure the cached-input ceiling: keep AdvisorCallback(baseline="auto") (the default; '
        'it skips fits shorter than about 10 s), pass baseline="end", or call '
        "advisor.measure_input(model, data)"
    ),
    "pipeline": "feed fit() a tf.data.Dataset: the advisor inspects its graph at train begin",
    "storage": (
        "read training data from files through tf.data (file sources are inspected), or "
        "`advisor data PATH --into RUN`"
    ),
    "trace": (
        'capture a profile: AdvisorCallback(profile_steps="auto") (or (10, 34)) with '
        "keras-advisor[profile] installed, or `advisor trace PROFILE_DIR --into RUN`"
    ),
    "scaling": "run a sweep: `advisor scale --workers 1,2,4 -- python train.py`",
    "instance": (
        "name the cloud instance: AdvisorCallback(instance_type=...) or ADVISOR_INSTANCE_TYPE"
    ),
    "hardware": "train on a known accelerator (see the hardware table) and keep telemetry on",
    "cloud": (
        "`advisor data s3://BUCKET/PREFIX --into RUN` or `advisor import sagemaker JOB` "
        "(keras-advisor[cloud]); inside a SageMaker job the input mode is read at train begin"
    ),
    "derived": "measure the facts it is derived from",
    "goodput": (
        "train with advisor.AdvisorCallback (goodput=True, the default) to record where the "
        "fit's time went"
    ),
    "compile": (
        "train with advisor.AdvisorCallback (goodput=True, the default) to record the backend's "
        "compile events (TensorFlow, JAX or torch.compile)"
    ),
    "memory": (
        "train with advisor.AdvisorCallback (memory=True, the default) for at least seven "
        "epochs: memory is read at every epoch"
    ),
    "batch_memory": (
        "measure the largest batch that fits: AdvisorCallback(batch_memory=True) (a few steps at "
        "2× and 4× the batch after the last epoch)"
    ),
    "speed_of_light": (
        "`AdvisorCallback()` measures it at train end (`speed_of_light=True`, the default); the "
        "fraction also needs the model's FLOPs, which a Keras model on TensorFlow, JAX or torch "
        "gives"
    ),
}

# The same, for a custom loop recorded with advisor.track: what its markers and options give, and
# what only a Keras fit can measure (said, so that nobody looks for a switch that is not there).
TRACK_HINTS: dict[str, str] = {
    "throughput": "call run.step(batch_size) after every training step inside advisor.track",
    "epochs": "call run.epoch() at every epoch's end inside advisor.track",
    "context": (
        "a custom loop's model settings are not read: advisor.track sees only its markers (a Keras "
        "fit's are read when it begins)"
    ),
    "guard": "record the loop with advisor.track",
    "compile": (
        "record the loop with advisor.track, with TensorFlow, JAX or torch imported before it: "
        "it records their compile events"
    ),
    "store": "record the loop with advisor.track",
    "prices": (
        'give the price: advisor.track(instance_type="g5.xlarge") or price_per_hour=..., '
        "or set ADVISOR_INSTANCE_TYPE"
    ),
    "psutil": "keep telemetry on (the default; advisor.track(telemetry=False) turns it off)",
    "baseline": (
        "the cached-input ceiling replays a Keras fit's input and is not measured in a custom "
        "loop: time a few hundred steps on one batch held in memory and compare with the loop's "
        "samples/s"
    ),
    "pipeline": (
        "the input pipeline is inspected only when a Keras fit is given a tf.data.Dataset, a "
        "PyDataset or a torch DataLoader; advisor.track does not see the loop's loader"
    ),
    "trace": (
        "profile some steps with the backend's profiler (torch.profiler or jax.profiler.trace) and "
        "attach it: `advisor trace PROFILE_DIR --into RUN` (keras-advisor[profile])"
    ),
    "instance": (
        "name the cloud instance: advisor.track(instance_type=...) or ADVISOR_INSTANCE_TYPE"
    ),
    "goodput": "record the loop with advisor.track (its markers give the time budget)",
    "storage": "`advisor data PATH --into RUN` inspects the files the loop reads",
    "memory": "call run.epoch() at every epoch's end inside advisor.track (seven epochs at least)",
    "batch_memory": "the memory what-if trains a Keras model's compiled step: a Keras fit only",
    "speed_of_light": (
        "give the loop's FLOPs: advisor.track(model=..., sample=...) with a Keras model, a torch "
        "nn.Module (sample= one input batch) or a jax.jit step (sample= its arguments), or "
        "advisor.track(flops_per_sample=...)"
    ),
}
TRACK_FACT_HINTS: dict[str, str] = {
    "context.graph_retraces": (
        "a custom loop's retraces are counted from its compile events (advisor.track records "
        "them while TensorFlow, JAX or torch is loaded; runs written before it have none)"
    ),
    "time.epoch_start_fraction": (
        "a custom loop's epoch start is part of its first step (advisor.track has no "
        "epoch-begin marker); step outliers (M150) show long ones"
    ),
}

# Facts whose measurement depends on more than switching a collector on.
FACT_HINTS: dict[str, str] = {
    "context.graph_retraces": (
        "retracing is counted on the TensorFlow and JAX backends (torch compiles no train "
        "function to count)"
    ),
}


# What to enable to decide an unknown rule, by the source of the first fact it misses:
# (label, how). The coverage line groups the unknown rules by label.
ENABLERS: dict[str, tuple[str, str]] = {
    "baseline": (
        "baseline",
        (
            'keep AdvisorCallback(baseline="auto") (the default; it skips fits shorter than '
            'about 10 s) or pass baseline="end"'
        ),
    ),
    "trace": (
        "profile_steps",
        'AdvisorCallback(profile_steps="auto") with keras-advisor[profile] installed',
    ),
    "nvml": ("a GPU", "train on an NVIDIA GPU (telemetry on, the default)"),
    "hardware": (
        "a GPU",
        "train on a known accelerator (see the hardware table) with telemetry on",
    ),
    "instance": (
        "instance_type",
        'AdvisorCallback(instance_type="g5.xlarge") or ADVISOR_INSTANCE_TYPE',
    ),
    "prices": ("instance_type", "AdvisorCallback(instance_type=...) or price_per_hour=..."),
    "scaling": ("a sweep", "`advisor scale --workers 1,2,4 -- python train.py`"),
    "cloud": (
        "cloud facts",
        "train on SageMaker, or attach them: `advisor data s3://… --into RUN` "
        "(keras-advisor[cloud])",
    ),
    "storage": (
        "data files",
        "read the training data from files through tf.data (their sizes are inspected)",
    ),
    "pipeline": ("a tf.data input", "feed fit() a tf.data.Dataset (its graph is inspected)"),
    "psutil": ("telemetry", "keep telemetry on (the default)"),
    "context": (
        "AdvisorCallback",
        "train with advisor.AdvisorCallback (its context collector is on by default)",
    ),
    "throughput": (
        "AdvisorCallback",
        "train with advisor.AdvisorCallback (its throughput collector is on by default)",
    ),
    "epochs": (
        "AdvisorCallback",
        "train with advisor.AdvisorCallback (its epoch collector is on by default)",
    ),
    "backends": (
        "the backend what-if",
        'AdvisorCallback(whatif=["backends"]), advisor.whatif(model, data, '
        'candidates=["backends"]) or `advisor backends MODEL.keras --data XY.npz`',
    ),
    "goodput": (
        "the time budget",
        "train with advisor.AdvisorCallback(goodput=True) (the default; runs written "
        "before goodput was recorded have none)",
    ),
    "compile": (
        "compile events",
        "train with advisor.AdvisorCallback(goodput=True) (the default) with TensorFlow, JAX or "
        "torch loaded when training begins; runs written before compile events have none",
    ),
    "memory": ("memory", "AdvisorCallback(memory=True) (the default), seven epochs or more"),
    "batch_memory": ("batch_memory", "AdvisorCallback(batch_memory=True)"),
}
TRACK_ENABLERS: dict[str, tuple[str, str]] = {
    "baseline": ("a Keras fit", "the cached-input ceiling is measured only in a Keras fit"),
    "trace": (
        "a profile",
        "`advisor trace PROFILE_DIR --into RUN` with a torch.profiler or jax.profiler trace",
    ),
    "instance": (
        "instance_type",
        'advisor.track(instance_type="g5.xlarge") or ADVISOR_INSTANCE_TYPE',
    ),
    "prices": ("instance_type", "advisor.track(instance_type=...) or price_per_hour=..."),
    "pipeline": (
        "a Keras fit",
        "the input pipeline is inspected in a Keras fit (tf.data, PyDataset, DataLoader)",
    ),
    "context": ("a Keras fit", "model settings are read only in a Keras fit"),
    "throughput": ("run.step()", "call run.step() after every step inside advisor.track"),
    "epochs": ("run.epoch()", "call run.epoch() at every epoch's end inside advisor.track"),
    "goodput": ("the time budget", "record the loop with advisor.track"),
    "compile": (
        "compile events",
        "record the loop with advisor.track, with TensorFlow, JAX or torch imported before it",
    ),
    "storage": ("data files", "`advisor data PATH --into RUN`"),
    "memory": ("run.epoch()", "call run.epoch() at every epoch's end inside advisor.track"),
    "batch_memory": ("a Keras fit", "the memory what-if runs in a Keras fit"),
    "speed_of_light": (
        "the loop's FLOPs",
        "advisor.track(model=..., sample=...) or advisor.track(flops_per_sample=...)",
    ),
}
HUMAN = ("a human decision", "advice rules list the evidence; the decision is yours")
OTHER = ("a measurement", "see each rule's `measure` hint")


def enabler(
    missing: Sequence[str], facts: FactRegistry, advice: bool = False, track: bool = False
) -> tuple[str, str]:
    """(label, how) of what would decide a rule that misses ``missing``; ``track``: in the words of
    a custom loop recorded with advisor.track."""
    if advice:
        return HUMAN
    for name in missing:
        if track and name in TRACK_FACT_HINTS:
            return ("a Keras fit", TRACK_FACT_HINTS[name])
        fact = facts.get(name)
        for source in (fact.source if fact else "derived").split("+"):
            found = (TRACK_ENABLERS.get(source.strip()) if track else None) or ENABLERS.get(
                source.strip()
            )
            if found:
                return found
    return OTHER


def hints_for(missing: Iterable[str], facts: FactRegistry, track: bool = False) -> str:
    """One sentence per distinct way to measure the ``missing`` facts; ``track``: in the words of a
    custom loop recorded with advisor.track."""
    seen: dict[str, None] = {}
    for name in missing:
        special = (TRACK_FACT_HINTS.get(name) if track else None) or FACT_HINTS.get(name)
        if special:
            seen.setdefault(special, None)
            continue
        fact = facts.get(name)
        sources = (fact.source if fact else "derived").split("+")
        for source in sources:
            hint = (TRACK_HINTS.get(source.strip()) if track else None) or HINTS.get(source.strip())
            if hint:
                seen.setdefault(hint, None)
    return "; ".join(seen) if seen else "not measurable by the advisor yet"


def withheld_reasons(missing: Iterable[str], facts: Mapping[str, Any]) -> str:
    """Why measured facts were left out (e.g. a profile with too few steps): the
    ``<area>.withheld`` facts of the missing facts' areas, joined; empty when none applies."""
    seen: dict[str, None] = {}
    for name in missing:
        reason = facts.get(f"{name.split('.', 1)[0]}.withheld")
        if isinstance(reason, str) and reason:
            seen.setdefault(reason, None)
    return "; ".join(seen)
