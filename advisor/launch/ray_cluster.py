"""Ray: each configuration's workers as Ray actors in one placement group, one after the other.

One bundle of one CPU per process, spread across nodes (``SPREAD``). Each actor tells its node's
address and a free port on it; from those the role variables are made as for local workers
(``TF_CONFIG``, the JAX coordinator, rank and world size), and each actor starts its worker as a
subprocess in a process group of its own, logging to the sweep's log folder (the runs directory
must be shared with every node, as under Slurm). The driver polls the actors: the first worker
that exits non-zero, or whose actor dies (killed, or its node lost), fails the configuration at
once; so does the timeout, and a group the live nodes can never hold (too few CPUs: what is
missing is said). Whatever happens, the workers are stopped, the actors killed and the
placement group removed before the next configuration starts.

Ctrl-C stops the sweep the same way, then the Ray session, within ``ray_stop.STOP_DEADLINE_S``
(35 s) whatever Ray does: each Ray call on the way has a timeout, and the processes of a Ray
instance the sweep started are killed when Ray has not ended them (``ray_stop``).

Ray is an optional extra (``keras-advisor[ray]``), imported only here and only when used.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from advisor.errors import UsageError
from advisor.launch.local import TAIL_LINES, Outcome, describe_exit, kill_group, log_tail
from advisor.launch.plan import Config, Plan, ProcessSpec, free_ports, merged_env
from advisor.launch.ray_stop import (
    ACTORS_STOP_S,
    ERROR_EXIT,
    INTERRUPTED_EXIT,
    OwnProcesses,
    bounded,
    counting_interrupts,
    exit_now,
    stop_session,
)

EXTRA_HINT = "pip install 'keras-advisor[ray]'"
# Waiting for a placement group to be placed before the configuration is failed (the cluster has
# the CPUs, busy: placement_shortfall fails a group it can never hold at once).
PLACEMENT_TIMEOUT_S = 120.0
ACTOR_CALL_TIMEOUT_S = 60.0
_PR_SET_PDEATHSIG = 1
log = logging.getLogger("advisor")


def require_ray() -> Any:
    """The ``ray`` module, or a one-line usage error naming the extra."""
    try:
        import ray
    except ImportError:
        raise UsageError(
            f"--launcher ray needs Ray, which is not installed: {EXTRA_HINT}"
        ) from None
    return ray


def check_ray_plan(plan: Plan) -> None:
    """Fail before the sweep when Ray is missing or a strategy cannot run under it."""
    require_ray()
    if any(c.strategy == "horovod" for c in plan.configs):
        raise UsageError(
            "strategy horovod runs through horovodrun, not Ray actors: use --launcher "
            "local or slurm for it"
        )


@dataclass
class RaySession:
    """The ``ray`` module, connected; ``wedged`` after the session when Ray did not shut down
    (the process must then end by ``ray_stop.exit_now``)."""

    ray: Any
    wedged: bool = False


@contextmanager
def ray_session(address: str | None, num_cpus: int) -> Iterator[RaySession]:
    """Connect to the cluster at ``address``, or start a local one of ``num_cpus`` CPUs for the
    sweep; a cluster started here is shut down after (a connection is closed), within a deadline
    and with its processes killed when Ray does not answer (``ray_stop``). Interrupted with Ray
    wedged, the process ends here with 130 (2 for an error)."""
    ray = require_ray()
    session = RaySession(ray)
    started_here = not ray.is_initialized()
    own = OwnProcesses() if started_here and not address else None
    options: dict[str, Any] = {
        "log_to_driver": False,
        "logging_level": "WARNING",
        "configure_logging": True,
    }
    failure: BaseException | None = None
    with counting_interrupts() as interrupts:
        try:
            if own is not None:
                # "local": a new instance even where RAY_ADDRESS names a cluster (--address auto
                # uses it)
                ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **options)
                own.note()
            elif started_here:
                ray.init(address=address, **options)
            yield session
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if started_here:
                session.wedged = not stop_session(ray, own, interrupts)
                if session.wedged and failure is not None:
                    _exit_for(failure)


def _exit_for(failure: BaseException) -> NoReturn:
    """End the process as the CLI would for ``failure``, by ``exit_now`` (Ray is wedged)."""
    if isinstance(failure, KeyboardInterrupt):
        exit_now(INTERRUPTED_EXIT)
    if isinstance(failure, SystemExit) and isinstance(failure.code, int):
        exit_now(failure.code)
    log.error("%s", _first_line(failure))
    exit_now(ERROR_EXIT)


def node_addresses(ray: Any) -> list[str]:
    """The addresses of the cluster's live nodes."""
    return sorted(
        {
            str(n.get("NodeManagerAddress"))
            for n in ray.nodes()
            if n.get("Alive") and n.get("NodeManagerAddress")
        }
    )


class Worker:
    """One worker process of a configuration, on the node Ray placed this actor on."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: Path | None = None
        self.redacted: Any = None  # the log's RedactedLog, once started

    def where(self, taken: list[int]) -> tuple[str, str, int, str]:
        """(node address, node id, a free port on it not in ``taken``, this actor's id)."""
        import ray

        host = ray.util.get_node_ip_address()
        port = next(p for p in free_ports(len(taken) + 1, host) if p not in taken)
        context = ray.get_runtime_context()
        return host, context.get_node_id(), port, context.get_actor_id() or ""

    def start(self, argv: list[str], env: dict[str, str], log: str) -> None:
        from advisor.launch.logpipe import RedactedLog

        self.log = Path(log)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        full_env = merged_env(env)
        self.redacted = RedactedLog(self.log, argv, full_env)
        self.proc = subprocess.Popen(
            argv,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_own_group_dying_with_parent,
        )
        self.redacted.follow(self.proc.stdout)  # type: ignore[arg-type]

    def poll(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def tail(self) -> str:
        if self.redacted is not None and self.poll() is not None:
            self.redacted.close()  # its pipe drained: the tail holds the last lines
        return log_tail(self.log, TAIL_LINES) if self.log else ""

    def stop(self) -> None:
        if self.proc is not None:
            kill_group(self.proc.pid, [self.proc])
        if self.redacted is not None:
            self.redacted.close()


def _own_group_dying_with_parent() -> None:
    """In the worker, before exec: a process group of its own (stopped as one), SIGKILLed when its
    actor dies (Linux), so that an actor killed by Ray, or by hand, leaves no worker behind."""
    os.setpgid(0, 0)
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def cluster_cpus(processes: int) -> int:
    """CPUs of the local cluster started for a sweep: this host's, or the largest configuration."""
    return max(os.cpu_count() or 1, processes)


def ray_runner(ray: Any, poll_s: float = 0.5) -> Callable[..., Outcome]:
    """A ``run_sweep`` runner that places each configuration on the Ray cluster of ``ray``."""

    def run(
        config: Config,
        specs: Callable[..., list[ProcessSpec]],
        log_dir: Path,
        timeout_s: float | None,
        on_tick: Callable[[float], None] | None,
    ) -> Outcome:
        return run_on_ray(ray, config, specs, log_dir, timeout_s, on_tick, poll_s)

    return run


def placement_shortfall(nodes: list[dict[str, Any]], workers: int) -> str | None:
    """What the cluster lacks to ever place ``workers`` actors of one CPU each (``ray.nodes()``:
    its live nodes' CPUs); None when it has enough, even if they are busy now (waited for)."""
    alive = [n for n in nodes if n.get("Alive")]
    cpus = sum(float(n.get("Resources", {}).get("CPU", 0)) for n in alive)
    if cpus >= workers:
        return None
    return (
        f"Ray cannot place {workers} worker(s) of one CPU each: the cluster has {cpus:g} CPU(s) "
        f"on {len(alive)} live node(s), {workers - cpus:g} missing; add nodes (or start them "
        "before the sweep, on an autoscaling cluster) or sweep fewer --workers"
    )


def processes_of(config: Config) -> int:
    return 1 if config.strategy in ("mirrored", "single") else config.workers


def run_on_ray(
    ray: Any,
    config: Config,
    specs: Callable[..., list[ProcessSpec]],
    log_dir: Path,
    timeout_s: float | None,
    on_tick: Callable[[float], None] | None = None,
    poll_s: float = 0.5,
) -> Outcome:
    """Run one configuration in a placement group; never raises for a failure of the job itself
    (only ``KeyboardInterrupt`` passes, after the cleanup)."""
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    n = processes_of(config)
    t0 = time.monotonic()
    missing = placement_shortfall(ray.nodes(), n)
    if missing is not None:
        return Outcome("failed", 0.0, missing)
    pg = placement_group([{"CPU": 1}] * n, strategy="SPREAD")
    actors: list[Any] = []
    try:
        ready, _ = ray.wait([pg.ready()], timeout=PLACEMENT_TIMEOUT_S)
        if not ready:
            cpus = ray.cluster_resources().get("CPU", 0)
            return Outcome(
                "failed",
                time.monotonic() - t0,
                f"Ray could not place {n} worker(s) of one CPU each within "
                f"{PLACEMENT_TIMEOUT_S:g} s (the cluster has {cpus:g} CPUs)",
            )
        remote = ray.remote(num_cpus=1, max_restarts=0)(Worker)
        actors = [
            remote.options(
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=pg, placement_group_bundle_index=i
                )
            ).remote()
            for i in range(n)
        ]
        hosts: list[str] = []
        nodes: list[str] = []
        ports: list[int] = []
        ids: list[str] = []
        for actor in actors:  # one after the other: two simulated nodes of one host share its ports
            host, node, port, actor_id = ray.get(
                actor.where.remote(ports), timeout=ACTOR_CALL_TIMEOUT_S
            )
            hosts.append(host)
            nodes.append(f"{host} ({node[:8]})")
            ports.append(port)
            ids.append(actor_id)
        job_id = ray.get_runtime_context().get_job_id()
        procs = specs(hosts=hosts, ports=ports)
        for spec, node in zip(procs, nodes):  # what the run records: the Ray job, nodes and actors
            spec.env.update(
                {
                    "ADVISOR_RAY_JOB_ID": job_id,
                    "ADVISOR_RAY_NODES": ",".join(nodes),
                    "ADVISOR_RAY_ACTORS": ",".join(ids),
                    "ADVISOR_NODE": node,
                }
            )
        logs = [str(log_dir / spec.log_name) for spec in procs]
        ray.get(
            [a.start.remote(s.argv, s.env, log) for a, s, log in zip(actors, procs, logs)],
            timeout=ACTOR_CALL_TIMEOUT_S,
        )
        outcome = _wait(ray, actors, timeout_s, on_tick, poll_s, t0)
        outcome.logs, outcome.nodes, outcome.job_id, outcome.actors = logs, nodes, job_id, ids
        return outcome
    except ray.exceptions.RayError as exc:
        return Outcome("failed", time.monotonic() - t0, f"Ray: {_first_line(exc)}")
    finally:
        _clean_up(ray, actors, pg, remove_placement_group)


def _wait(
    ray: Any,
    actors: list[Any],
    timeout_s: float | None,
    on_tick: Callable[[float], None] | None,
    poll_s: float,
    t0: float,
) -> Outcome:
    codes: dict[int, int | None] = dict.fromkeys(range(len(actors)))
    while True:
        for rank, actor in enumerate(actors):
            if codes[rank] is not None:
                continue
            try:
                codes[rank] = ray.get(actor.poll.remote(), timeout=ACTOR_CALL_TIMEOUT_S)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
                return Outcome(
                    "failed",
                    time.monotonic() - t0,
                    f"worker {rank}'s Ray actor died: {_first_line(exc)}",
                    _tail(ray, actors[0]),
                    codes,
                )
            code = codes[rank]
            if code not in (None, 0):
                return Outcome(
                    "failed",
                    time.monotonic() - t0,
                    describe_exit(rank, code),
                    _tail(ray, actor),
                    codes,
                )
        elapsed = time.monotonic() - t0
        if all(code == 0 for code in codes.values()):
            return Outcome("finished", elapsed, returncodes=codes)
        if timeout_s is not None and elapsed > timeout_s:
            waiting = [rank for rank, code in codes.items() if code is None]
            return Outcome(
                "failed",
                elapsed,
                f"timed out after {timeout_s:g} s (workers still running: {waiting})",
                _tail(ray, actors[0]),
                codes,
                timed_out=True,
            )
        if on_tick is not None:
            on_tick(elapsed)
        time.sleep(poll_s)


def _tail(ray: Any, actor: Any) -> str:
    """The worker's log tail, read on its node (the runs directory may not be shared)."""
    try:
        return str(ray.get(actor.tail.remote(), timeout=10))
    except ray.exceptions.RayError:
        return ""


def _clean_up(ray: Any, actors: list[Any], pg: Any, remove: Callable[[Any], None]) -> None:
    """Stop the workers (TERM, then KILL), kill the actors, remove the placement group: within
    ``ACTORS_STOP_S`` in all, whatever the cluster does (then the session's stop goes on)."""

    def clean_up() -> None:
        stops = [actor.stop.remote() for actor in actors]
        if stops:
            ray.wait(stops, num_returns=len(stops), timeout=10)
        for actor in actors:
            ray.kill(actor, no_restart=True)
        remove(pg)

    bounded(clean_up, ACTORS_STOP_S, "the configuration's Ray cleanup")


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__
