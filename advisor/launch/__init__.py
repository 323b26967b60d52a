"""Scaling sweeps: run one training script at several worker counts and strategies.

``advisor.launch.setup_devices()`` is the worker's side (its role from the environment); the
sweep runner and the launchers behind ``advisor scale`` live in the submodules and import only
what they need.
"""

from __future__ import annotations

from advisor.launch.role import STRATEGIES, Role, role, setup_devices

__all__ = ["STRATEGIES", "Role", "role", "setup_devices"]
