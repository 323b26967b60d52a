"""Inside ``fit()``: the Keras callback and its collectors (one measurement per module).

They only record — timestamps, counters, samples, introspection — into the run store; they never
analyse, never block training and never raise into ``fit()``. Heavy imports happen on use.
"""
