"""Pipeline collector: inspect the training input once, at train begin, and record what it is.

For tf.data it stores the summary of the dataset's serialized graph (stages, parallelism, cache,
options, files; ``advisor.probes.tfdata``) and facts about the files it reads
(``advisor.probes.storage``; ``s3://`` paths are sized with ``advisor.cloud.s3data`` when boto3
is installed, within a few seconds). For a PyDataset and a torch DataLoader it records the worker
settings. For every input it records how the data reaches the job (``advisor.probes.sagemaker``:
the SageMaker channel's input mode, or "Stream" for a pipeline that reads ``s3://`` itself). The
analysis side
turns the record into ``pipeline.*`` and ``storage.*`` facts and the advice text.

Cost: one graph serialization (in-memory datasets built with ``from_tensor_slices`` carry their
data in the graph, so huge arrays make it slower); switch it off with ``pipeline=False``.
"""

from __future__ import annotations

import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option

OPTIONS = (
    Option(
        "pipeline",
        "bool",
        True,
        "inspect the tf.data pipeline and its files at train begin.",
    ),
)


class PipelineCollector(Collector):
    name = "pipeline"
    _shapes: Any = None  # BatchShapes while the first batches' shapes are being read

    def on_train_begin(self) -> None:
        from advisor.store.schema import PipelineRecord

        s = self.session
        if s.rank != 0:  # every worker reads the same pipeline
            return
        values = describe_input(s.data)
        if not values:
            return
        s.writer.write(PipelineRecord(t=time.time(), values=values))
        s.notes.pipeline = values
        if reads_shapes(values):
            from advisor.probes.batch_shapes import BatchShapes

            self._shapes = BatchShapes(s.data.dataset).start()
        for problem in (values.get("storage") or {}).get("missing", []) + (
            values.get("storage") or {}
        ).get("unreadable", []):
            s.event("pipeline", f"data file problem: {problem}", level="warning")
        if values.get("error"):
            s.event("pipeline", f"pipeline not inspected: {values['error']}", level="warning")
        if (values.get("storage") or {}).get("remote_error"):
            s.event(
                "pipeline",
                f"s3 data not sized: {values['storage']['remote_error']}",
                level="warning",
            )

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None:
        if self._shapes is not None and self._shapes.done:
            self._record_shapes()

    def on_train_end(self) -> None:
        if self._shapes is not None and self._shapes.wait(SHAPES_WAIT_S):
            self._record_shapes()
        self._shapes = None

    def _record_shapes(self) -> None:
        """The pipeline record again, with the shapes of the first batches read."""
        from advisor.store.schema import PipelineRecord

        shapes, self._shapes = self._shapes, None
        if not shapes.shapes:
            return
        s = self.session
        s.notes.pipeline = {**s.notes.pipeline, "shapes_seen": shapes.shapes}
        s.writer.write(PipelineRecord(t=time.time(), values=s.notes.pipeline))


SHAPES_WAIT_S = 2.0  # at train end, for the first batches' shapes still being read


def reads_shapes(values: dict[str, Any]) -> bool:
    """Read the first batches' shapes: a tf.data spec with open dimensions, whose source is no
    Python generator (a generator's function would run a second time)."""
    stages = (values.get("summary") or {}).get("stages") or []
    return (
        values.get("input_kind") == "tf.data"
        and bool(values.get("dynamic_dims"))
        and bool(stages)
        and not any(stage.get("python_source") for stage in stages)
    )


def describe_input(data: Any) -> dict[str, Any]:
    """The ``values`` of a pipeline record for ``session.data`` (empty when nothing is known)."""
    from advisor.probes.sagemaker import input_mode

    kind = data.kind
    if not kind:
        return {}
    values: dict[str, Any] = {"input_kind": kind}
    paths: list[str] = []
    if kind == "tf.data":
        values.update(describe_dataset(data.dataset))
        summary = values.get("summary") or {}
        paths = list(summary.get("files") or []) + list(summary.get("file_candidates") or [])
        dims = dynamic_dims(getattr(data.dataset, "element_spec", None))
        if dims is not None:
            values["dynamic_dims"] = dims
    elif kind == "numpy":
        values["dynamic_dims"] = 0  # arrays: every batch has the same shape
    elif kind == "pydataset":
        py = getattr(data.adapter, "py_dataset", None) or getattr(
            data.adapter, "_keras_sequence", None
        )
        if py is not None:
            values["pydataset"] = {
                "workers": _int(getattr(py, "workers", None)),
                "use_multiprocessing": bool(getattr(py, "use_multiprocessing", False)),
                "max_queue_size": _int(getattr(py, "max_queue_size", None)),
            }
    elif kind == "torch":
        loader = getattr(data.adapter, "_dataloader", None)
        if loader is not None:
            values["dataloader"] = {
                "num_workers": _int(getattr(loader, "num_workers", None)),
                "prefetch_factor": _int(getattr(loader, "prefetch_factor", None)),
                "pin_memory": bool(getattr(loader, "pin_memory", False)),
            }
    mode = input_mode(paths)
    if mode is not None:
        values["cloud"] = {"input_mode": mode[0], "input_mode_source": mode[1]}
    return values


def describe_dataset(dataset: Any) -> dict[str, Any]:
    """Summary and storage facts of a tf.data dataset; ``{"error": ...}`` when it cannot be read."""
    from advisor.probes.storage import file_facts
    from advisor.probes.tfdata import PipelineInspectionError, inspect_dataset

    if dataset is None:
        return {"error": "the dataset object is not reachable"}
    t0 = time.perf_counter()
    try:
        summary = inspect_dataset(dataset)
    except PipelineInspectionError as exc:
        return {"error": str(exc)}
    values: dict[str, Any] = {"summary": summary, "inspect_seconds": time.perf_counter() - t0}
    if summary.get("files") or summary.get("file_candidates"):
        values["storage"] = file_facts(
            summary.get("files", []), summary.get("file_candidates", []), summary.get("compression")
        )
        remote = [
            p
            for p in list(summary.get("files", [])) + list(summary.get("file_candidates", []))
            if p.startswith("s3://")
        ]
        if remote and not values["storage"].get("files"):
            values["storage"].update(size_s3(remote, summary.get("compression")))
    return values


S3_SIZING_S = 10.0  # listing budget at train begin: a huge prefix is sized from what was listed


def size_s3(paths: list[str], declared_compression: str | None = None) -> dict[str, Any]:
    """Storage values of the ``s3://`` objects a pipeline reads (``error`` when they cannot be
    sized)."""
    from advisor.errors import AdvisorError

    try:
        from advisor.cloud.s3data import size_paths

        found = size_paths(paths, seconds=S3_SIZING_S)
    except AdvisorError as exc:
        return {"remote_error": str(exc)}
    out: dict[str, Any] = {"location": found.location}
    if found.objects:
        out.update(
            files=found.objects,
            total_bytes=found.total_bytes,
            bytes_p10=found.bytes_p10,
            bytes_p50=found.bytes_p50,
            bytes_p90=found.bytes_p90,
        )
    compression = declared_compression.lower() if declared_compression else found.compression
    if compression:
        out["compression"] = compression
    if found.format:
        out["format"] = found.format
    if found.truncated:
        out["truncated"] = True
    if found.unreadable:
        out["unreadable"] = found.unreadable[:5]
    return out


def dynamic_dims(spec: Any) -> int | None:
    """Unknown dimensions beyond the batch axis in a dataset's element spec (variable-length
    sequences, images of any size), ragged and sparse components counted once each; None when
    the spec cannot be read."""
    if spec is None:
        return None
    try:
        import tensorflow as tf

        count = 0
        for part in tf.nest.flatten(spec):
            if isinstance(part, (tf.RaggedTensorSpec, tf.SparseTensorSpec)):
                count += 1
                continue
            shape = getattr(part, "shape", None)
            if shape is None or shape.rank is None:
                count += 1
                continue
            count += sum(1 for d in list(shape)[1:] if d is None)
        return count
    except Exception:  # noqa: BLE001 — an unusual spec: unknown, not an error
        return None


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
