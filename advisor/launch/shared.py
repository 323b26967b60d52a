"""Is the runs directory one the cluster's nodes can write to? Checked before a sweep is submitted.

Every worker writes its own records into the runs directory, on its own node. Where that directory
is local to the submitting host, a worker on another node writes into a directory of the same name
on *its* disk, and the run here shows rank 0's share as the whole. Whether a path is shared cannot
be proved from one host, so only the evident cases are judged, and only when some node of the
cluster is another host:

- memory file systems (tmpfs, ramfs) and the usual node-local folders (/tmp, /var/tmp, /dev/shm,
  /run) are never shared: an error;
- a local disk file system (ext4, xfs, btrfs, overlay…) may still be exported to the nodes: a
  warning;
- network and cluster file systems (nfs, lustre, gpfs, beegfs, cephfs, …) and anything unknown pass.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

LOCAL_ONLY_FS = frozenset({"tmpfs", "ramfs", "devtmpfs"})
LOCAL_DISK_FS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "overlay", "f2fs", "vfat", "zfs"}
)
NODE_LOCAL_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run")


@dataclass(frozen=True)
class Verdict:
    error: bool  # True: refuse the sweep; False: warn and go on
    message: str


def mount_of(path: Path, mounts_text: str | None = None) -> tuple[str, str] | None:
    """(mount point, file system type) that holds ``path`` (created or not: the longest mount point
    that prefixes it), from /proc/self/mounts; None where that cannot be read (not Linux)."""
    if mounts_text is None:
        try:
            mounts_text = Path("/proc/self/mounts").read_text(encoding="utf-8")
        except OSError:
            return None
    target = path.resolve()
    best: tuple[str, str] | None = None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = str(target) == point or str(target).startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, parts[2])
    return best


def local_addresses() -> set[str]:
    """Addresses of this host: its interfaces' (psutil), its names' and loopback."""
    import psutil

    found = {"localhost", socket.gethostname(), socket.getfqdn()}
    for addrs in psutil.net_if_addrs().values():
        found |= {
            a.address.split("%")[0] for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)
        }
    for name in (socket.gethostname(), "localhost"):
        try:
            found |= {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
        except OSError:
            continue
    return found


def is_local(address: str, mine: set[str]) -> bool:
    return address in mine or address.startswith("127.") or address == "::1"


def remote_nodes(addresses: Iterable[str], mine: set[str] | None = None) -> list[str]:
    """The addresses that are not this host."""
    here = local_addresses() if mine is None else mine
    return [a for a in addresses if a and not is_local(a, here)]


def check_runs_dir(
    runs_dir: Path, node_addresses: Iterable[str], warn: Callable[[str], None]
) -> None:
    """Refuse (``UsageError``) or warn about a runs directory the cluster's nodes evidently cannot
    write to."""
    from advisor.errors import UsageError

    verdict = runs_dir_verdict(runs_dir, remote_nodes(node_addresses))
    if verdict is not None and verdict.error:
        raise UsageError(verdict.message)
    if verdict is not None:
        warn(f"warning: {verdict.message}")


def runs_dir_verdict(
    runs_dir: Path, remote: list[str], mounts_text: str | None = None
) -> Verdict | None:
    """What to say about ``runs_dir`` for a sweep with workers on the ``remote`` hosts (see the
    module docstring); None when there is nothing evident to say."""
    if not remote:
        return None
    mount = mount_of(runs_dir, mounts_text)
    resolved = str(runs_dir.resolve())
    nodes = ", ".join(remote[:3]) + (" …" if len(remote) > 3 else "")
    under = next(
        (d for d in NODE_LOCAL_DIRS if resolved == d or resolved.startswith(d + "/")), None
    )
    if (mount and mount[1] in LOCAL_ONLY_FS) or under:
        where = f"{mount[1]} at {mount[0]}" if mount and mount[1] in LOCAL_ONLY_FS else under
        return Verdict(
            True,
            f"the runs directory {resolved} is on this host only ({where}), but workers "
            f"run on other hosts ({nodes}): their records would stay there. Give a "
            "--runs-dir on a file system every node mounts",
        )
    if mount and mount[1] in LOCAL_DISK_FS:
        return Verdict(
            False,
            f"the runs directory {resolved} is on a local disk ({mount[1]} at {mount[0]}) "
            f"and workers run on other hosts ({nodes}): unless it is exported to them, "
            "their records stay on their nodes and their configurations fail",
        )
    return None
