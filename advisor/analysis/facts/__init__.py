"""Fact declarations and derivations, one module per area (see ``advisor.analysis.registry``);
the larger areas' helpers beside them (``telemetry_gpu``, ``telemetry_host``...)."""
