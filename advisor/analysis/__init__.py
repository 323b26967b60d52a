"""Offline fact derivation: pure functions from a run (and the context its caller gives) to facts.

Nothing here opens a file or imports the training side; :mod:`advisor.service` reads runs and
passes them in. Every fact is registered in :mod:`advisor.analysis.registry` with its unit.
"""
