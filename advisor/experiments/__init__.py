"""Experiments: what trains the user's model for a measurement — the cached-input baseline and
the what-if.

Each one works on the user's live model and input, so each obeys the same safety rules, kept here
in one place: the model's training state is restored bit for bit (``model_state``), the global
random generators are put back (``random_state``), and the iterators, threads and worker pools a
measurement made are torn down before it returns (``cleanup``). Measuring is shared too: timed
segments (``segments``) in interleaved rounds (``rounds``) over input feeds (``feeds/``).
Collectors reach an experiment through its package only (``experiments.baseline``,
``experiments.backends``, ``experiments.whatif``); nothing here imports the callback or the
collector registry.
"""
