"""What the input candidates share: how a stage is named, when a tf.data change applies, and a
trial on a rebuilt copy of the user's pipeline."""

from __future__ import annotations

from typing import Any

from advisor.experiments.whatif.trials import NotApplicable, Situation, Trial


def stage_label(stage: dict[str, Any]) -> str:
    """``map #1 ('decode')``: how the advice names a stage."""
    name = str(stage.get("kind", "stage")).replace("_", " ")
    if "ordinal" in stage:
        name = f"{name} #{stage['ordinal']}"
    return f"{name} ('{stage['fn']}')" if stage.get("fn") else name


def need_tfdata(s: Situation) -> str | None:
    if s.kind != "tf.data" or s.dataset is None:
        return f"the input is {s.kind}, not a tf.data pipeline"
    if s.summary is None:
        return "the tf.data graph was not inspected (pipeline=True inspects it)"
    return None


def input_reason(s: Situation) -> str | None:
    """Why an input change is left out of "auto" although it applies: no input cost measured."""
    if s.input_free:
        return (
            "the baseline measured no input cost beyond its noise band: an input change cannot gain"
        )
    return None


def variant(s: Situation, name: str, label: str, dataset: Any, **extra: Any) -> Trial:
    base = s.unchanged
    return Trial(
        name,
        label,
        s.model,
        {**base.kwargs, "x": dataset},
        finite=base.finite,
        batch_size=base.batch_size,
        epoch_steps=base.epoch_steps,
        spe=base.spe,
        epoch_length=base.epoch_length,
        **extra,
    )


def rebuilt(s: Situation, edit: Any) -> Any:
    from advisor.experiments.feeds.rewrite import RewriteError, rebuild

    try:
        dataset = rebuild(s.dataset, edit)
    except RewriteError as exc:
        raise NotApplicable(str(exc)) from None
    if dataset is None:
        raise NotApplicable("the pipeline graph has no stage to change")
    return dataset
