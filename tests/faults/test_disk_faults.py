"""A full disk and a store made read-only in the middle of a real training process.

Every case trains a small Keras model, all of them one after the other in one subprocess (each
TensorFlow start costs several seconds on a 2-core machine; each fit has a store of its own and
the output is split by case); after epoch 1 the store starts failing: through the writer's
fault-injection point (``advisor.store.atomic_writes._write`` raising the errno the kernel would: a
file system gone read-only under the job), for real on a 4 MiB tmpfs that is filled up (when this
machine lets the test mount one), or for real by taking write permission away from the run directory
(then the open record file still takes records, but the manifest can no longer be replaced). Linux
refuses to remount a file system read-only while a file on it is open for writing, so that case
exists only through the hook. Each asserts what is kept, the status shown and the exit code of
``advisor check``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from fault_helpers import cli

from advisor.store.reader import RunReader, list_run_dirs
from advisor.store.schema import EndRecord, EpochRecord, EventRecord, WindowRecord

pytestmark = pytest.mark.slow

EPOCHS = 6
# argv: the mount point, then MODE=STORE pairs trained one after the other in this process.
SCRIPT = textwrap.dedent("""
    import errno, os, subprocess, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, keras, advisor
    import advisor.store.atomic_writes as files

    mount = sys.argv[1]
    real_write = files._write

    def failing(code):
        def write(fd, data):
            raise OSError(code, os.strerror(code))
        return write

    def fill(folder):  # take every free block of the file system
        fd = os.open(os.path.join(folder, "ballast"), os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\\0" * 65536)
        except OSError as exc:  # full, as meant; any other failure is not the fault under test
            if exc.errno != errno.ENOSPC:
                raise
        finally:
            os.close(fd)

    def train(mode, store):
        class Fault(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):  # runs after the advisor wrote this epoch
                if epoch == 1:
                    print("FAULT STARTS", file=sys.stderr, flush=True)
                    if mode == "hook-enospc":
                        files._write = failing(errno.ENOSPC)
                    elif mode == "hook-erofs":
                        files._write = failing(errno.EROFS)
                    elif mode == "tmpfs-enospc":
                        fill(mount)
                    elif mode == "chmod":
                        os.chmod(cb.run_path, 0o555)
                # space comes back (the read-only store does not)
                if epoch == 3 and mode.endswith("enospc"):
                    print("FAULT ENDS", file=sys.stderr, flush=True)
                    files._write = real_write
                    if mode == "tmpfs-enospc":
                        os.unlink(os.path.join(mount, "ballast"))

        x = np.random.rand(1600, 8).astype("float32"); y = np.random.rand(1600, 1).astype("float32")
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        # Short windows: a full tmpfs still takes small appends into a file's last, partly used
        # page (up to 4 KiB), so the fault must outlast that to be seen.
        cb = advisor.AdvisorCallback(
            runs_dir=store, window_seconds=0.01, warmup_steps=2, log_every_seconds=None
        )
        model.fit(x, y, batch_size=16, epochs=EPOCHS, callbacks=[cb, Fault()], verbose=0)

    for pair in sys.argv[2:]:
        mode, store = pair.split("=", 1)
        print(f"MODE {mode}", flush=True)
        print(f"MODE {mode}", file=sys.stderr, flush=True)
        train(mode, store)
        print("TRAINING DONE", flush=True)
""").replace("EPOCHS", str(EPOCHS))


# The order the cases train in, in one process: the write-hook read-only store last, because it
# lasts until the process ends (the hook's full disk gives the real write function back at epoch 3).
ORDER = ["hook-enospc", "tmpfs-enospc", "chmod", "hook-erofs"]


def _mount_tmpfs(mount: Path) -> str | None:
    """Mount a 4 MiB tmpfs on ``mount``; the reason it cannot be mounted here, or None."""
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", f"advisor-{uuid.uuid4().hex[:6]}", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return (
            f"cannot mount a tmpfs here ({done.stderr.strip() or 'not permitted'}); "
            "the write-hook variant covers the same path"
        )
    return None


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """Every case that this machine allows, trained one after the other in one process: {mode:
    (store, the process's output for that mode)}; {mode: reason} for the cases it does not allow."""
    base = tmp_path_factory.mktemp("disk-faults")
    mount = base / "tmpfs"
    skipped: dict[str, str] = {}
    unprivileged = _unprivileged()
    if unprivileged is None:
        skipped["chmod"] = "running as root without setpriv: permissions cannot be taken away here"
    reason = _mount_tmpfs(mount)
    if reason is not None:
        skipped["tmpfs-enospc"] = reason
    stores = {
        mode: (mount if mode == "tmpfs-enospc" else base / mode) / "runs"
        for mode in ORDER
        if mode not in skipped
    }
    try:
        done = _train_each(stores, mount, unprivileged or [])
        yield {mode: (stores[mode], done[mode]) for mode in stores}, skipped
    finally:
        if "chmod" in stores:  # give the run directory its permissions back for the cleanup
            for folder in stores["chmod"].rglob("*"):
                if folder.is_dir():
                    os.chmod(folder, 0o755)
        if reason is None:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def _case(faults, mode: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    cases, skipped = faults
    if mode in skipped:
        pytest.skip(skipped[mode])
    return cases[mode]


def _train_each(
    stores: dict[str, Path], mount: Path, prefix: list[str]
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Train each mode into its store, one after the other in one process (TensorFlow is
    imported once), the process started behind ``prefix``; each mode's part of the output, as if
    it had had the process to itself."""
    pairs = [f"{mode}={store}" for mode, store in stores.items()]
    done = subprocess.run(
        [*prefix, sys.executable, "-c", SCRIPT, str(mount), *pairs],
        capture_output=True,
        text=True,
        timeout=120 + 60 * len(pairs),
        check=False,
    )
    out, err = _by_mode(done.stdout), _by_mode(done.stderr)
    return {
        mode: subprocess.CompletedProcess(
            done.args, done.returncode, out.get(mode, ""), err.get(mode, "") or done.stderr
        )
        for mode in stores
    }


def _by_mode(text: str) -> dict[str, str]:
    """The text after each ``MODE name`` line up to the next; what precedes goes to the first."""
    parts: dict[str, list[str]] = {}
    preamble: list[str] = []
    current = preamble
    for line in text.splitlines(keepends=True):
        if line.startswith("MODE "):
            current = parts.setdefault(line.split()[1], [*preamble] if not parts else [])
        else:
            current.append(line)
    return {mode: "".join(lines) for mode, lines in parts.items()}


def _unprivileged() -> list[str] | None:
    """Root ignores file permissions: the command prefix that trains without that power (for the
    permission case; the other cases only write into folders of their own owner, so it changes
    nothing for them), [] when not root, None when root without setpriv."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"]


def _lines_all_parse(run_dir: Path) -> None:
    for line in (run_dir / "worker-0.jsonl").read_bytes().splitlines():
        json.loads(line)  # no torn line, no half record anywhere


def _assert_disk_full_outcome(
    done: subprocess.CompletedProcess[str], store: Path, exact: bool
) -> None:
    assert done.returncode == 0 and "TRAINING DONE" in done.stdout, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if "cannot write" in line]
    assert len(warnings) == 1 and "No space left on device" in warnings[0], done.stderr[-3000:]
    (run_dir,) = list_run_dirs(store)
    _lines_all_parse(run_dir)
    run = RunReader(run_dir).read()
    # Kept: everything before the fault and after space returned, the end record above all.
    assert run.status == "finished" and run.problems == [] and run.torn_lines == 0
    epochs = sorted(e.epoch for e in run.of_type(EpochRecord))
    (end,) = run.of_type(EndRecord)
    if exact:  # every write failed from the end of epoch 1 to the end of epoch 3
        assert epochs == [0, 1, 4, 5] and end.dropped_records and end.dropped_records >= 2
    else:  # a real full disk: the last partly used page still took a few records
        assert {0, 1, 4, 5} <= set(epochs) and end.dropped_records and end.dropped_records >= 1
    assert {w.epoch for w in run.of_type(WindowRecord)} >= {0, 1, 4, 5}
    # The full disk switched no collector off (the writer absorbed it, once).
    assert [e for e in run.of_type(EventRecord) if e.level == "error"] == []
    # Not judged as if complete: exit 3 with the reason, unless --allow-incomplete.
    result = cli("check", str(run_dir))
    assert result.exit_code == 3, result.output
    assert "records were lost to write errors" in " ".join(result.output.split())
    assert cli("check", str(run_dir), "--allow-incomplete").exit_code in (0, 1)
    listed = json.loads(cli("--runs-dir", str(store), "runs", "--format", "json").stdout)
    assert [r["status"] for r in listed] == ["finished"]


def _assert_read_only_outcome(
    done: subprocess.CompletedProcess[str], store: Path, reason: str
) -> None:
    assert done.returncode == 0 and "TRAINING DONE" in done.stdout, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if "cannot write" in line]
    assert len(warnings) == 1 and reason in warnings[0], done.stderr[-3000:]
    (run_dir,) = list_run_dirs(store)
    _lines_all_parse(run_dir)
    run = RunReader(run_dir).read()
    # Kept: every record written before the store turned read-only; the end could not be.
    assert sorted(e.epoch for e in run.of_type(EpochRecord)) == [0, 1]
    assert run.of_type(EndRecord) == [] and run.problems == [] and run.torn_lines == 0
    assert run.status == "killed"  # the writer is gone without an end record: not "running"
    result = cli("check", str(run_dir))
    assert result.exit_code == 3 and "was killed" in result.output
    listed = json.loads(cli("--runs-dir", str(store), "runs", "--format", "json").stdout)
    assert [r["status"] for r in listed] == ["killed"]


def test_disk_full_mid_run_through_the_write_hook(faults):
    store, done = _case(faults, "hook-enospc")
    _assert_disk_full_outcome(done, store, exact=True)


def test_disk_full_mid_run_on_a_real_tmpfs(faults):
    store, done = _case(faults, "tmpfs-enospc")
    _assert_disk_full_outcome(done, store, exact=False)


def test_store_read_only_mid_run_through_the_write_hook(faults):
    store, done = _case(faults, "hook-erofs")
    _assert_read_only_outcome(done, store, "Read-only file system")


def test_run_directory_made_read_only_mid_run(faults):
    """Real permissions (without CAP_DAC_OVERRIDE when the tests run as root, who ignores them):
    the manifest cannot be replaced at the end, the records — end record included — are all
    written, so the run reads as finished whatever its manifest says, and nothing is lost."""
    store, done = _case(faults, "chmod")
    assert done.returncode == 0 and "TRAINING DONE" in done.stdout, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if "cannot write" in line]
    assert (
        len(warnings) == 1 and "the manifest" in warnings[0] and "Permission denied" in warnings[0]
    )
    (run_dir,) = list_run_dirs(store)
    run = RunReader(run_dir).read()
    assert run.manifest.status == "running"  # could not be marked finished…
    assert run.status == "finished"  # …but the end record says it finished
    assert sorted(e.epoch for e in run.of_type(EpochRecord)) == list(range(EPOCHS))
    (end,) = run.of_type(EndRecord)
    assert end.dropped_records is None and run.problems == []
    assert cli("check", str(run_dir)).exit_code in (0, 1)  # complete: it can be judged
