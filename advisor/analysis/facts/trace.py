"""Profiler trace summaries (XProf, torch.profiler). Derivations: issue 5 (traces)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("trace.present", "", "a profile was captured and summarised", "trace", "bool"),
    Fact("trace.steps", "", "steps found in the profile", "trace"),
    Fact("trace.steps_marked", "", "steps were marked in the capture (False with steps_per_execution > 1)", "trace", "bool"),
    Fact("trace.step_time_ms.mean", "ms", "mean step time in the profile", "trace"),
    Fact("trace.step_time_ms.std", "ms", "standard deviation of step time in the profile", "trace"),
    Fact("trace.input_percent", "%", "share of step time waiting for input", "trace"),
    Fact("trace.input_classification", "", "XProf's own verdict on the input (e.g. HOST, DEVICE, BOTH)", "trace", "str"),
    Fact("trace.host_compute_percent", "%", "host compute share of step time", "trace"),
    Fact("trace.kernel_launch_percent", "%", "kernel-launch share of step time", "trace"),
    Fact("trace.all_others_percent", "%", "'all others' share of step time (Python, host overhead)", "trace"),
    Fact("trace.device_compute_percent", "%", "device compute share of step time", "trace"),
    Fact("trace.device_idle_percent", "%", "device idle share of step time", "trace"),
    Fact("trace.h2d_percent", "%", "host-to-device copy share of step time", "trace"),
    Fact("trace.d2h_percent", "%", "device-to-host copy share of step time", "trace"),
    Fact("trace.compute_16bit_percent", "%", "share of compute time in 16-bit ops", "trace"),
    Fact("trace.eager_percent", "%", "share of op time executed eagerly", "trace"),
    Fact("trace.top_ops", "", "the ten ops with the most self time", "trace", "list"),
    Fact("trace.top_ops_host", "", "host-side ops among the top ten (on an accelerator run)", "trace"),
    Fact("trace.py_func", "", "PyFunc / EagerPyFunc ops ran during the steps", "trace", "bool"),
    Fact("trace.communication_percent", "%", "collective / communication op share of step time", "trace"),
    Fact("trace.communication_overlap", "fraction", "share of communication time overlapped with compute", "trace"),
    Fact("trace.communication_at_end", "", "communication is bunched at the end of the step", "trace", "bool"),
)


def derive(run: Run, facts: dict[str, Any]) -> dict[str, Any]:
    return {}
