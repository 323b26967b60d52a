"""Inspection that runs inside training and returns plain values: the tf.data graph, the files it
reads, FLOPs, the instance, the framework, rank and world size. No derivation, no rules."""
