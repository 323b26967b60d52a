"""Rebuilding a user's tf.data pipeline with one change, from its GraphDef.

The what-if and the baseline try a change on the user's own pipeline without asking for the code
that built it: the dataset is serialized (the GraphDef tf.data service uses), one edit is made
to the graph — a sequential map made parallel, a sequential interleave made parallel, a cache
inserted after a stage — and a new dataset is made from the edited graph with the user's
options. The user's dataset object is never touched. Functions inside the graph, Python ones
(``py_function``, ``from_generator``) included, keep working: they run in this same process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.errors import one_line

AUTOTUNE = -1

# GraphDef edits: (graph, nodes by name) → True when something changed.
Edit = Callable[[Any, dict[str, Any]], bool]


class RewriteError(Exception):
    """The pipeline cannot be rebuilt with this change (one line, for the what-if's reason)."""


def rebuild(dataset: Any, edit: Edit) -> Any | None:
    """``dataset`` rebuilt after ``edit`` changed its graph (None: the edit found nothing to do).

    The rebuilt dataset gets the user's options again: they are applied when an iterator is
    made from the Python object, which a dataset made from a graph would not have.
    """
    import tensorflow as tf

    from advisor.probes.tfdata import PipelineInspectionError, serialized_graph

    try:
        graph = serialized_graph(dataset)
    except PipelineInspectionError as exc:
        raise RewriteError(str(exc)) from None
    nodes = {n.name: n for n in graph.node}
    if not edit(graph, nodes):
        return None
    try:
        variant = tf.raw_ops.DatasetFromGraph(graph_def=graph.SerializeToString())
        rebuilt = tf.data.experimental.from_variant(variant, dataset.element_spec)
        return rebuilt.with_options(dataset.options())
    except Exception as exc:  # noqa: BLE001 — an op TF refuses in this graph: say which
        raise RewriteError(
            f"TensorFlow refused the rebuilt pipeline: {one_line(exc, 200)}"
        ) from None


def _data_inputs(node: Any) -> list[str]:
    return [i for i in node.input if not i.startswith("^")]


def _control_inputs(node: Any) -> list[str]:
    return [i for i in node.input if i.startswith("^")]


def _add_const(graph: Any, name: str, value: Any, dtype: Any) -> str:
    import tensorflow as tf

    node = graph.node.add()
    node.name, node.op = name, "Const"
    node.attr["dtype"].type = dtype.as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
    return name


def _set_inputs(node: Any, data: list[str]) -> None:
    controls = _control_inputs(node)
    del node.input[:]
    node.input.extend(data + controls)


def parallel_maps(names: set[str]) -> Edit:
    """Every ``MapDataset`` node named in ``names`` (or ``ParallelMapDatasetV2`` with one call)
    becomes ``ParallelMapDatasetV2`` with ``num_parallel_calls=AUTOTUNE`` (order kept:
    ``deterministic`` stays the options' default)."""

    def edit(graph: Any, nodes: dict[str, Any]) -> bool:
        import tensorflow as tf

        changed = False
        for name in sorted(names):
            node = nodes.get(name)
            if node is None or node.op not in ("MapDataset", "ParallelMapDatasetV2"):
                continue
            calls = _add_const(
                graph, f"advisor/parallel_calls/{len(graph.node)}", AUTOTUNE, tf.int64
            )
            inputs = _data_inputs(node)
            if node.op == "ParallelMapDatasetV2":  # num_parallel_calls=1: its last input is the 1
                inputs = inputs[:-1]
            node.op = "ParallelMapDatasetV2"
            _set_inputs(node, inputs + [calls])
            if "force_synchronous" in node.attr:
                del node.attr["force_synchronous"]
            node.attr["deterministic"].s = b"default"
            changed = True
        return changed

    return edit


def parallel_interleaves(names: set[str]) -> Edit:
    """Every sequential ``InterleaveDataset`` named in ``names`` becomes
    ``ParallelInterleaveDatasetV4`` with ``num_parallel_calls=AUTOTUNE``, as
    ``interleave(..., num_parallel_calls=tf.data.AUTOTUNE)`` builds it."""

    def edit(graph: Any, nodes: dict[str, Any]) -> bool:
        import tensorflow as tf

        changed = False
        for name in sorted(names):
            node = nodes.get(name)
            if node is None or node.op not in ("InterleaveDataset", "ParallelInterleaveDatasetV4"):
                continue
            base = f"advisor/interleave/{len(graph.node)}"
            calls = _add_const(graph, f"{base}/num_parallel_calls", AUTOTUNE, tf.int64)
            if node.op == "ParallelInterleaveDatasetV4":  # num_parallel_calls=1: replace the 1
                _set_inputs(node, _data_inputs(node)[:-1] + [calls])
            else:
                extra = [
                    _add_const(graph, f"{base}/buffer_output_elements", AUTOTUNE, tf.int64),
                    _add_const(graph, f"{base}/prefetch_input_elements", AUTOTUNE, tf.int64),
                    calls,
                ]
                node.op = "ParallelInterleaveDatasetV4"
                _set_inputs(node, _data_inputs(node) + extra)
            node.attr["deterministic"].s = b"default"
            changed = True
        return changed

    return edit


def cache_after(name: str, elements: int | None) -> Edit:
    """An in-memory cache right after node ``name``: ``.cache()`` when ``elements`` is None (the
    whole epoch, filled by the first pass), else ``take(elements).cache().repeat()`` (a bounded
    cache of an endless or very long pipeline, repeated)."""

    def edit(graph: Any, nodes: dict[str, Any]) -> bool:
        import tensorflow as tf

        source = nodes.get(name)
        if source is None:
            return False
        types, shapes = source.attr.get("output_types"), source.attr.get("output_shapes")
        if types is None or not types.list.type:
            return False

        def dataset_node(node_name: str, op: str, inputs: list[str]) -> str:
            node = graph.node.add()
            node.name, node.op = node_name, op
            node.input.extend(inputs)
            node.attr["output_types"].CopyFrom(types)
            node.attr["output_shapes"].CopyFrom(shapes)
            return node_name

        consumers = [
            n for n in graph.node if source.name in [i.lstrip("^").split(":")[0] for i in n.input]
        ]
        head = source.name
        if elements is not None:
            head = dataset_node(
                "advisor/take",
                "TakeDataset",
                [head, _add_const(graph, "advisor/take_n", elements, tf.int64)],
            )
        memory = graph.node.add()
        memory.name, memory.op = "advisor/memory_cache", "DummyMemoryCache"
        head = dataset_node(
            "advisor/cache",
            "CacheDatasetV2",
            [head, _add_const(graph, "advisor/cache_file", "", tf.string), memory.name],
        )
        if elements is not None:
            head = dataset_node(
                "advisor/repeat",
                "RepeatDataset",
                [head, _add_const(graph, "advisor/repeat_n", -1, tf.int64)],
            )
        for consumer in consumers:
            for i, ref in enumerate(consumer.input):
                if not ref.startswith("^") and ref.split(":")[0] == source.name:
                    consumer.input[i] = head
        return True

    return edit
