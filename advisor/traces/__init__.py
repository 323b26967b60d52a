"""Profiler captures summarised: the XProf worker, chrome-trace events (TensorFlow, JAX, torch,
Horovod timelines), torch traces, attaching an outside profile to a run."""
