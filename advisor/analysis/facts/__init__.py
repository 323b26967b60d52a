"""Fact declarations and derivations, one module per area (see ``advisor.analysis.registry``)."""
