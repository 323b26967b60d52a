"""Static inspection of a tf.data pipeline from its serialized graph.

``inspect_dataset(ds)`` serializes the dataset (``Dataset._as_serialized_graph``, the same GraphDef
that tf.data service and distribution use) and ``summarize_graph`` walks it from the output back to
the source. The result is a plain JSON-able summary — stages, options, files — that the pipeline
collector stores in the run; ``advisor.analysis.pipeline_advice`` turns it into facts and advice.
Nothing here reads private Python attributes of datasets, so the summary also works for datasets
restored from a graph.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.errors import one_line
from advisor.probes.tfdata_graph import (
    BATCH_OPS,
    FILE_READER_OPS,
    INTERLEAVE_OPS,
    KIND_BY_OP,
    MAP_OPS,
    PASSIVE_OPS,
    FunctionAnalyser,
    clean,
    const,
    files_of,
    fn_label,
    fn_names,
    inputs_of,
    is_dataset,
)


class PipelineInspectionError(Exception):
    """The dataset's graph could not be serialized or read."""


def inspect_dataset(dataset: Any) -> dict[str, Any]:
    """Summary of a tf.data dataset (see ``summarize_graph``); raises PipelineInspectionError."""
    graph = serialized_graph(dataset)
    return summarize_graph(graph)


def serialized_graph(dataset: Any) -> Any:
    """The dataset's GraphDef (a protobuf message)."""
    import tensorflow as tf

    if not isinstance(dataset, tf.data.Dataset):
        raise PipelineInspectionError(f"not a tf.data.Dataset: {type(dataset).__name__}")
    try:
        policy = tf.data.experimental.ExternalStatePolicy.WARN
        raw = dataset._as_serialized_graph(external_state_policy=policy)
        graph = tf.compat.v1.GraphDef()
        graph.ParseFromString(raw.numpy())
    except Exception as exc:  # serialization fails for a few exotic stateful sources
        raise PipelineInspectionError(
            f"cannot serialize the dataset graph: {one_line(exc, 200)}"
        ) from None
    return graph


# ---------------------------------------------------------------------------------------------
# GraphDef → summary


def summarize_graph(graph: Any) -> dict[str, Any]:
    """Walk the main chain (first dataset input of each node) from the source to the output.

    Returns ``{"stages": [...], "options": {...}, "files": [...], "compression": str|None,
    "branches": int, "nodes": int}``; each stage is a dict with ``op``, ``kind``, ``fn`` (user
    function label), ``parallel``, ``num_parallel_calls`` (-1 = AUTOTUNE), ``py_function``,
    ``random``, ``reads_files``, ``heavy`` and a few op-specific values.
    """
    nodes = {n.name: n for n in graph.node}
    functions = {f.signature.name: f for f in graph.library.function}
    analyser = FunctionAnalyser(functions)
    root = _root(graph, nodes)
    chain: list[Any] = []
    branches = 0
    node = root
    seen: set[str] = set()
    while node is not None and node.name not in seen:
        seen.add(node.name)
        chain.append(node)
        dataset_inputs = [nodes[i] for i in inputs_of(node) if i in nodes and is_dataset(nodes[i])]
        branches += max(0, len(dataset_inputs) - 1)
        node = dataset_inputs[0] if dataset_inputs else None
    chain.reverse()
    stages = [_stage(n, nodes, analyser) for n in chain]
    _number(stages)
    options = _options(n for n in chain if n.op == "OptionsDataset")
    files, candidates, compression = files_of(graph, nodes, functions, stages)
    return {
        "stages": stages,
        "options": options,
        "files": files,
        "file_candidates": candidates,
        "compression": compression,
        "branches": branches,
        "nodes": len(graph.node),
    }


def _root(graph: Any, nodes: dict[str, Any]) -> Any:
    for n in graph.node:
        if n.op == "_Retval" and n.input:
            return nodes.get(clean(n.input[0]))
    datasets = [n for n in graph.node if is_dataset(n)]
    return datasets[-1] if datasets else None


def _stage(node: Any, nodes: dict[str, Any], analyser: FunctionAnalyser) -> dict[str, Any]:
    op = node.op
    inputs = inputs_of(node)
    stage: dict[str, Any] = {"op": op, "kind": _kind(op, node, inputs, nodes), "node": node.name}
    fns = fn_names(node)
    if fns:
        stage["fn"] = fn_label(fns[0])
        info: dict[str, Any] = {
            "ops": 0,
            "py": False,
            "random": False,
            "reads": False,
            "heavy": False,
            "reader": None,
            "generator": False,
        }
        for name in fns:
            sub = analyser.ops(name)
            info["ops"] += sub["ops"]
            for key in ("py", "random", "reads", "heavy", "generator"):
                info[key] |= sub[key]
            info["reader"] = info["reader"] or sub["reader"]
        if not re.fullmatch(r"[A-Za-z0-9_]+", stage["fn"]):  # e.g. a class passed as the function
            stage["fn"] = info["reader"] or "function"
        if info["generator"]:
            stage["python_source"] = True  # Dataset.from_generator: Python runs per element
            if stage["kind"] == "flat_map":
                stage["kind"] = "generator"
        if info["reader"]:
            stage["reader"] = info["reader"]
        stage["fn_ops"] = info["ops"]
        stage["py_function"] = info["py"]
        stage["random"] = info["random"]
        stage["reads_files"] = info["reads"]
        stage["heavy"] = info["heavy"]
    if op in FILE_READER_OPS:
        stage["reads_files"] = True
        stage["reader"] = op
    if op == "GeneratorDataset":
        stage["py_function"] = True
    if stage["kind"] == "shuffle":
        stage["random"] = True
        stage["buffer_size"] = const(nodes, inputs[1] if len(inputs) > 1 else None)
    npc = _parallel_calls(node, nodes, inputs)
    if stage["kind"] in ("map", "interleave", "batch", "filter") or npc is not None:
        stage["num_parallel_calls"] = npc
        stage["parallel"] = npc is not None and npc != 1
    if stage["kind"] == "flat_map":
        stage["parallel"] = False
    if stage["kind"] == "prefetch":
        stage["buffer_size"] = const(nodes, inputs[1] if len(inputs) > 1 else None)
    if stage["kind"] == "batch":
        position = 1 if op != "MapAndBatchDataset" else len(inputs) - 3
        stage["batch_size"] = const(nodes, inputs[position] if len(inputs) > position else None)
    if stage["kind"] == "cache":
        filename = const(nodes, inputs[1] if len(inputs) > 1 else None)
        stage["to_file"] = bool(filename)
    if stage["kind"] == "repeat":  # -1: for ever
        stage["count"] = const(nodes, inputs[1] if len(inputs) > 1 else None)
    if op == "TensorSliceDataset" and node.attr["is_files"].b:
        stage["is_files"] = True
    return stage


def _kind(op: str, node: Any, inputs: list[str], nodes: dict[str, Any]) -> str:
    if op in MAP_OPS:
        return "map"
    if op in INTERLEAVE_OPS:
        return "interleave"
    if op in BATCH_OPS:
        return "batch"
    if op in KIND_BY_OP:
        return KIND_BY_OP[op]
    if op in PASSIVE_OPS:
        return "options" if op == "OptionsDataset" else "passive"
    if not any(i in nodes and is_dataset(nodes[i]) for i in inputs):
        return "source"
    return "other"


def _parallel_calls(node: Any, nodes: dict[str, Any], inputs: list[str]) -> int | None:
    """num_parallel_calls of a parallel op (-1 = AUTOTUNE); 1 for sequential maps/interleaves."""
    op = node.op
    if op in (
        "MapDataset",
        "InterleaveDataset",
        "FilterDataset",
        "BatchDataset",
        "BatchDatasetV2",
        "PaddedBatchDataset",
        "PaddedBatchDatasetV2",
    ):
        return 1
    if op in (
        "ParallelMapDataset",
        "ParallelMapDatasetV2",
        "ParallelFilterDataset",
    ) or op.startswith("ParallelInterleaveDataset"):
        value = const(nodes, inputs[-1] if inputs else None)
        return int(value) if isinstance(value, int) else None
    if op == "ParallelBatchDataset":
        value = const(nodes, inputs[2] if len(inputs) > 2 else None)
        return int(value) if isinstance(value, int) else None
    if op == "MapAndBatchDataset":
        value = const(nodes, inputs[-2] if len(inputs) > 1 else None)
        return int(value) if isinstance(value, int) else None
    if op == "LegacyParallelInterleaveDatasetV2":
        value = const(nodes, inputs[3] if len(inputs) > 3 else None)  # cycle_length
        return int(value) if isinstance(value, int) else None
    return None


def _number(stages: list[dict[str, Any]]) -> None:
    """Give maps and interleaves a 1-based ordinal (source first) for advice like "map #2"."""
    counters: dict[str, int] = {}
    for index, stage in enumerate(stages):
        stage["index"] = index
        kind = stage["kind"]
        if kind in (
            "map",
            "interleave",
            "flat_map",
            "batch",
            "filter",
            "cache",
            "prefetch",
            "shuffle",
        ):
            counters[kind] = counters.get(kind, 0) + 1
            stage["ordinal"] = counters[kind]


def _options(option_nodes: Any) -> dict[str, Any]:
    """Effective dataset options (later ``with_options`` calls override earlier ones)."""
    try:
        from tensorflow.core.framework import dataset_options_pb2
    except Exception:
        return {}
    merged = dataset_options_pb2.Options()
    found = False
    for node in option_nodes:
        proto = dataset_options_pb2.Options()
        try:
            proto.ParseFromString(node.attr["serialized_options"].s)
        except Exception:
            continue
        merged.MergeFrom(proto)
        found = True
    if not found:
        return {}
    out: dict[str, Any] = {}
    auto = merged.autotune_options
    if auto.HasField("enabled"):
        out["autotune"] = bool(auto.enabled)
    threading = merged.threading_options
    if threading.HasField("max_intra_op_parallelism"):
        out["max_intra_op_parallelism"] = int(threading.max_intra_op_parallelism)
    if threading.HasField("private_threadpool_size"):
        out["private_threadpool_size"] = int(threading.private_threadpool_size)
    opt = merged.optimization_options
    for field in (
        "map_parallelization",
        "parallel_batch",
        "inject_prefetch",
        "apply_default_optimizations",
    ):
        try:
            if opt.HasField(field):
                out[field] = bool(getattr(opt, field))
        except ValueError:  # field unknown to this TF version
            continue
    if merged.HasField("deterministic"):
        out["deterministic"] = bool(merged.deterministic)
    return out
