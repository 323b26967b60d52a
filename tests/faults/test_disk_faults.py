"""A full disk and a store made read-only in the middle of a real training process.

Each case trains a small Keras model in a subprocess (the two write-hook cases one after the other
in the same one); after epoch 1 the store starts failing: through the writer's fault-injection
point (``advisor.store.files._write`` raising the errno the kernel would: a file system gone
read-only under the job), for real on a 4 MiB tmpfs that is filled up (when this machine lets the test
mount one), or for real by taking write permission away from the run directory (then the open
record file still takes records, but the manifest can no longer be replaced). Linux refuses to
remount a file system read-only while a file on it is open for writing, so that case exists only
through the hook. Each asserts what is kept, the status shown and the exit code of ``advisor
check``."""

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
    import advisor.store.files as files

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
        except OSError:
            pass
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
                if epoch == 3 and mode.endswith("enospc"):  # space comes back (the read-only store does not)
                    print("FAULT ENDS", file=sys.stderr, flush=True)
                    files._write = real_write
                    if mode == "tmpfs-enospc":
                        os.unlink(os.path.join(mount, "ballast"))

        x = np.random.rand(1600, 8).astype("float32"); y = np.random.rand(1600, 1).astype("float32")
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        # Short windows: a full tmpfs still takes small appends into a file's last, partly used
        # page (up to 4 KiB), so the fault must outlast that to be seen.
        cb = advisor.AdvisorCallback(runs_dir=store, window_s=0.01, warmup_steps=2, log_every_s=None)
        model.fit(x, y, batch_size=16, epochs=EPOCHS, callbacks=[cb, Fault()], verbose=0)

    for pair in sys.argv[2:]:
        mode, store = pair.split("=", 1)
        print(f"MODE {mode}", flush=True)
        print(f"MODE {mode}", file=sys.stderr, flush=True)
        train(mode, store)
        print("TRAINING DONE", flush=True)
""").replace("EPOCHS", str(EPOCHS))


@pytest.fixture
def tmpfs(tmp_path):
    """A 4 MiB tmpfs, or a skip where this machine does not allow mounting one."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", f"advisor-{uuid.uuid4().hex[:6]}",
                           str(mount)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not permitted'}); "
                    "the write-hook variant covers the same path")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def _train(mode: str, store: Path, mount: Path) -> subprocess.CompletedProcess[str]:
    return _train_each({mode: store}, mount)[mode]


def _train_each(stores: dict[str, Path], mount: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Train each mode into its store, one after the other in one process (TensorFlow is
    imported once); each mode's part of the output, as if it had had the process to itself."""
    pairs = [f"{mode}={store}" for mode, store in stores.items()]
    unprivileged = _unprivileged("chmod") if "chmod" in stores else []
    done = subprocess.run([*unprivileged, sys.executable, "-c", SCRIPT, str(mount), *pairs],
                          capture_output=True, text=True, timeout=300, check=False)
    out, err = _by_mode(done.stdout), _by_mode(done.stderr)
    return {mode: subprocess.CompletedProcess(done.args, done.returncode, out.get(mode, ""),
                                              err.get(mode, "") or done.stderr)
            for mode in stores}


def _by_mode(text: str) -> dict[str, str]:
    """The text after each ``MODE name`` line up to the next (what comes before goes to the first)."""
    parts: dict[str, list[str]] = {}
    preamble: list[str] = []
    current = preamble
    for line in text.splitlines(keepends=True):
        if line.startswith("MODE "):
            current = parts.setdefault(line.split()[1], [*preamble] if not parts else [])
        else:
            current.append(line)
    return {mode: "".join(lines) for mode, lines in parts.items()}


@pytest.fixture(scope="module")
def hook_faults(tmp_path_factory):
    """The two write-hook cases, trained one after the other in one process: the full disk
    (which ends at epoch 3) first, then the read-only store (which lasts until the process ends)."""
    base = tmp_path_factory.mktemp("hook-faults")
    stores = {"hook-enospc": base / "enospc" / "runs", "hook-erofs": base / "erofs" / "runs"}
    return stores, _train_each(stores, base)


def _unprivileged(mode: str) -> list[str]:
    """Root ignores file permissions: for the permission case, train without that power."""
    if mode != "chmod" or os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be taken away here")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"]


def _lines_all_parse(run_dir: Path) -> None:
    for line in (run_dir / "worker-0.jsonl").read_bytes().splitlines():
        json.loads(line)  # no torn line, no half record anywhere


def _assert_disk_full_outcome(done: subprocess.CompletedProcess[str], store: Path, exact: bool) -> None:
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


def _assert_read_only_outcome(done: subprocess.CompletedProcess[str], store: Path, reason: str) -> None:
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


def test_disk_full_mid_run_through_the_write_hook(hook_faults):
    stores, done = hook_faults
    _assert_disk_full_outcome(done["hook-enospc"], stores["hook-enospc"], exact=True)


def test_disk_full_mid_run_on_a_real_tmpfs(tmpfs):
    store = tmpfs / "runs"
    _assert_disk_full_outcome(_train("tmpfs-enospc", store, tmpfs), store, exact=False)


def test_store_read_only_mid_run_through_the_write_hook(hook_faults):
    stores, done = hook_faults
    _assert_read_only_outcome(done["hook-erofs"], stores["hook-erofs"], "Read-only file system")


def test_run_directory_made_read_only_mid_run(tmp_path):
    """Real permissions (without CAP_DAC_OVERRIDE when the tests run as root, who ignores them):
    the manifest cannot be replaced at the end, the records — end record included — are all
    written, so the run reads as finished whatever its manifest says, and nothing is lost."""
    store = tmp_path / "runs"
    try:
        done = _train("chmod", store, tmp_path)
        assert done.returncode == 0 and "TRAINING DONE" in done.stdout, done.stderr[-3000:]
        warnings = [line for line in done.stderr.splitlines() if "cannot write" in line]
        assert len(warnings) == 1 and "the manifest" in warnings[0] and "Permission denied" in warnings[0]
        (run_dir,) = list_run_dirs(store)
        run = RunReader(run_dir).read()
        assert run.manifest.status == "running"  # could not be marked finished…
        assert run.status == "finished"  # …but the end record says it finished
        assert sorted(e.epoch for e in run.of_type(EpochRecord)) == list(range(EPOCHS))
        (end,) = run.of_type(EndRecord)
        assert end.dropped_records is None and run.problems == []
        assert cli("check", str(run_dir)).exit_code in (0, 1)  # complete: it can be judged
    finally:
        for folder in store.rglob("*"):
            if folder.is_dir():
                os.chmod(folder, 0o755)
