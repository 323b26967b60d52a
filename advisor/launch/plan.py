"""What a sweep runs: its configurations, and the processes (argv + environment) of each.

Pure functions, no process is started here, so the command construction of every strategy is
testable on any machine — Horovod and Slurm included.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import UsageError
from advisor.launch.role import STRATEGIES, tf_config

RUN_ID_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")
# Variables the launcher owns: never inherited from the shell that runs `advisor scale`.
OWNED_ENV = (
    "TF_CONFIG",
    "ADVISOR_RANK",
    "ADVISOR_WORLD_SIZE",
    "ADVISOR_RUN_ID",
    "ADVISOR_SWEEP_ID",
    "ADVISOR_SCALE_STRATEGY",
    "ADVISOR_SCALE_WORKERS",
    "ADVISOR_LOGICAL_DEVICES",
    "ADVISOR_COORDINATOR",
    "TF_USE_LEGACY_KERAS",
    "KERAS_BACKEND",
)
# Strategies the launcher can run, and what each needs installed.
NEEDS = {
    "multiworker": "tf_keras",
    "mirrored": "tensorflow",
    "jax": "jax",
    "horovod": "horovod",
    "single": None,
}


@dataclass(frozen=True)
class Config:
    """One point of a sweep: a strategy at a worker count, one repeat."""

    strategy: str
    workers: int
    repeat: int = 0

    @property
    def label(self) -> str:
        return f"{self.strategy}-n{self.workers}-r{self.repeat}"

    def run_id(self, sweep_id: str) -> str:
        return f"{sweep_id}-{self.label}"


@dataclass
class ProcessSpec:
    """One process to start: its command line, extra environment and rank."""

    argv: list[str]
    env: dict[str, str]
    rank: int = 0
    log_name: str = "worker-0.log"


@dataclass
class Plan:
    """Everything ``advisor scale`` will run, in order."""

    sweep_id: str
    command: list[str]
    configs: list[Config] = field(default_factory=list)


def new_sweep_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    return f"sweep-{stamp}-{secrets.token_hex(2)}"


def parse_workers(text: str) -> list[int]:
    """``"1,2,4"`` → [1, 2, 4] (sorted, unique); a clear error for anything else."""
    try:
        counts = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UsageError(
            f"--workers {text!r}: expected comma-separated integers such as 1,2,4"
        ) from None
    if not counts or counts[0] < 1:
        raise UsageError(f"--workers {text!r}: worker counts must be 1 or more")
    return counts


def make_plan(
    command: Sequence[str],
    workers: Sequence[int],
    strategies: Sequence[str],
    repeat: int = 1,
    sweep_id: str | None = None,
) -> Plan:
    """Configurations in run order: repeats outermost (drift spreads over all points), then
    strategies, then worker counts ascending."""
    if not command:
        raise UsageError(
            "no training command: put it after `--`, e.g. `advisor scale -- python train.py`"
        )
    for s in strategies:
        if s not in STRATEGIES:
            raise UsageError(f"unknown strategy {s!r}; choose from {', '.join(STRATEGIES)}")
    if repeat < 1:
        raise UsageError("--repeat must be 1 or more")
    configs = [Config(s, n, r) for r in range(repeat) for s in strategies for n in workers]
    return Plan(sweep_id or new_sweep_id(), list(command), configs)


LOWEST_PORT = 20_000  # the ports a sweep's workers listen on are drawn from here up to ...
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")  # ... the OS's own range


def _listen_range() -> tuple[int, int]:
    """Ports below the range the OS hands out to outgoing connections and to ``bind(0)``: a port
    found free there and bound by a worker seconds later is not taken meanwhile by some process's
    outgoing connection (two sweeps and a test suite side by side: a worker could not start its
    gRPC server)."""
    try:
        low = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32_768  # Linux's default
    return LOWEST_PORT, max(LOWEST_PORT + 1_000, low)


def _bound(host: str, port: int) -> socket.socket | None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
    except OSError:
        s.close()
        return None
    return s


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Ports free right now on ``host``, drawn at random below the OS's ephemeral range (held open
    together so that they differ; the OS's choice of ``bind(0)`` where none is found)."""
    import random

    low, high = _listen_range()
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            found = None
            for port in random.sample(range(low, high), min(64, high - low)):
                found = _bound(host, port)
                if found is not None:
                    break
            found = found or _bound(host, 0)
            if found is None:
                raise OSError(f"no free port on {host}")
            socks.append(found)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def base_env(config: Config, sweep_id: str, runs_dir: Path) -> dict[str, str]:
    env = {
        "ADVISOR_SWEEP_ID": sweep_id,
        "ADVISOR_RUN_ID": config.run_id(sweep_id),
        "ADVISOR_RUNS_DIR": str(runs_dir),
        "ADVISOR_SCALE_STRATEGY": config.strategy,
        "ADVISOR_SCALE_WORKERS": str(config.workers),
        "KERAS_BACKEND": "jax" if config.strategy == "jax" else "tensorflow",
    }
    if config.strategy in ("multiworker", "horovod"):
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def local_processes(
    config: Config,
    command: Sequence[str],
    sweep_id: str,
    runs_dir: Path,
    gpus: int = 0,
    ports: Sequence[int] | None = None,
    hosts: Sequence[str] | None = None,
) -> list[ProcessSpec]:
    """The processes of one configuration (``ports``: for tests, or a launcher's own; else free
    ones on this host; ``hosts``: each rank's address, loopback when None)."""
    env = base_env(config, sweep_id, runs_dir)
    n = config.workers
    argv = list(command)
    if config.strategy in ("mirrored", "single"):
        env.update(ADVISOR_RANK="0", ADVISOR_WORLD_SIZE="1")
        if config.strategy == "mirrored":
            env["ADVISOR_LOGICAL_DEVICES"] = str(n)
            if gpus:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(min(n, gpus)))
        return [ProcessSpec(argv, env)]
    if config.strategy == "horovod":
        from advisor.launch.horovod import horovodrun_argv

        env.pop("ADVISOR_RANK", None)
        timeline = str(horovod_timeline_path(runs_dir, sweep_id, config))
        return [
            ProcessSpec(horovodrun_argv(n, argv, timeline=timeline), env, log_name="horovodrun.log")
        ]
    ports = (
        list(ports)
        if ports is not None
        else free_ports(n if config.strategy == "multiworker" else 1)
    )
    addresses = [f"{hosts[i] if hosts else '127.0.0.1'}:{p}" for i, p in enumerate(ports)]
    specs = []
    for rank in range(n):
        mine = dict(env, ADVISOR_RANK=str(rank), ADVISOR_WORLD_SIZE=str(n))
        if config.strategy == "multiworker":
            mine["TF_CONFIG"] = tf_config(rank, addresses[:n])
        else:  # jax
            mine["ADVISOR_COORDINATOR"] = addresses[0]
        if gpus:
            mine["CUDA_VISIBLE_DEVICES"] = str(rank % gpus)
        specs.append(ProcessSpec(argv, mine, rank, f"worker-{rank}.log"))
    return specs


def horovod_timeline_path(runs_dir: Path, sweep_id: str, config: Config) -> Path:
    """Where ``horovodrun --timeline-filename`` writes a configuration's timeline (in the sweep
    folder)."""
    from advisor.store.sweep import sweep_dir

    return sweep_dir(runs_dir, sweep_id) / "timelines" / f"{config.label}.json"


def merged_env(extra: Mapping[str, str], parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent environment without the launcher-owned variables, plus ``extra``."""
    env = {
        k: v for k, v in (os.environ if parent is None else parent).items() if k not in OWNED_ENV
    }
    env.update(extra)
    return env


def check_available(strategies: Sequence[str], launcher: str = "local") -> None:
    """Fail before the sweep starts when a strategy cannot run here, saying what to install."""
    import importlib.util

    if launcher != "local":
        return
    for s in strategies:
        need = NEEDS.get(s)
        if s == "horovod":
            if shutil.which("horovodrun") is None:
                raise UsageError(
                    "strategy horovod: `horovodrun` is not on PATH. Install Horovod built for your "
                    "TensorFlow (see docs/scaling.md, 'Horovod') or sweep another strategy"
                )
        elif need and importlib.util.find_spec(need) is None:
            hint = {
                "tf_keras": "pip install tf_keras (multi-worker training uses tf_keras: Keras 3 "
                "cannot fit under MultiWorkerMirroredStrategy)",
                "jax": "pip install jax",
            }.get(need, f"pip install {need}")
            raise UsageError(f"strategy {s}: {need} is not installed; {hint}")


def local_gpu_count() -> int:
    """GPUs on this host, by NVML; 0 without a driver (never raises)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0
