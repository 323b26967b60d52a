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

# Op families, by GraphDef op name.
MAP_OPS = {"MapDataset", "ParallelMapDataset", "ParallelMapDatasetV2", "MapAndBatchDataset"}
INTERLEAVE_OPS = {
    "InterleaveDataset", "ParallelInterleaveDataset", "ParallelInterleaveDatasetV2",
    "ParallelInterleaveDatasetV3", "ParallelInterleaveDatasetV4", "LegacyParallelInterleaveDatasetV2",
}
BATCH_OPS = {"BatchDataset", "BatchDatasetV2", "ParallelBatchDataset", "PaddedBatchDataset",
             "PaddedBatchDatasetV2", "MapAndBatchDataset"}
FILE_READER_OPS = {
    "TFRecordDataset", "TFRecordDatasetV2", "TextLineDataset", "FixedLengthRecordDataset",
    "FixedLengthRecordDatasetV2", "CSVDataset", "CSVDatasetV2", "ReadFile", "MatchingFiles",
    "LMDBDataset", "SqlDataset", "ExperimentalCSVDataset", "ExperimentalLMDBDataset",
}
PY_OPS = {"EagerPyFunc", "PyFunc", "PyFuncStateless"}
HEAVY_PREFIXES = ("Decode", "Parse", "Resize", "CropAndResize", "ImageProjectiveTransform",
                  "ExtractJpegShape", "StringSplit", "RegexReplace", "Substr", "Unicode")
# Stages that do not change what the pipeline computes; skipped when asking "what is last?".
PASSIVE_OPS = {"OptionsDataset", "ModelDataset", "MaxIntraOpParallelismDataset",
               "PrivateThreadPoolDataset", "AssertCardinalityDataset", "AssertNextDataset",
               "NonSerializableDataset", "OptimizeDataset", "OptimizeDatasetV2"}
KIND_BY_OP = {
    "PrefetchDataset": "prefetch", "CacheDataset": "cache", "CacheDatasetV2": "cache",
    "ShuffleDataset": "shuffle", "ShuffleDatasetV2": "shuffle", "ShuffleDatasetV3": "shuffle",
    "ShuffleAndRepeatDataset": "shuffle", "ShuffleAndRepeatDatasetV2": "shuffle",
    "RepeatDataset": "repeat", "TakeDataset": "take", "SkipDataset": "skip",
    "FilterDataset": "filter", "ParallelFilterDataset": "filter", "FlatMapDataset": "flat_map",
    "UnbatchDataset": "unbatch", "RebatchDataset": "rebatch", "RebatchDatasetV2": "rebatch",
    "ShardDataset": "shard", "ZipDataset": "zip", "ConcatenateDataset": "concatenate",
    "GeneratorDataset": "generator", "SnapshotDatasetV2": "snapshot", "WindowDataset": "window",
}
_FN_PREFIX = re.compile(
    r"^(?:__inference_)?(?:Dataset_)?"
    r"(?:parallel_map|map|interleave|parallel_interleave|flat_map|filter|map_and_batch|scan|"
    r"group_by_window|generator|from_generator|reduce|unbatch)?_?"
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
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise PipelineInspectionError(f"cannot serialize the dataset graph: {type(exc).__name__}: {first[:200]}") from None
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
    analyser = _FunctionAnalyser(functions)
    root = _root(graph, nodes)
    chain: list[Any] = []
    branches = 0
    node = root
    seen: set[str] = set()
    while node is not None and node.name not in seen:
        seen.add(node.name)
        chain.append(node)
        dataset_inputs = [nodes[i] for i in _inputs(node) if i in nodes and _is_dataset(nodes[i])]
        branches += max(0, len(dataset_inputs) - 1)
        node = dataset_inputs[0] if dataset_inputs else None
    chain.reverse()
    stages = [_stage(n, nodes, analyser) for n in chain]
    _number(stages)
    options = _options(n for n in chain if n.op == "OptionsDataset")
    files, candidates, compression = _files(graph, nodes, functions, stages)
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
            return nodes.get(_clean(n.input[0]))
    datasets = [n for n in graph.node if _is_dataset(n)]
    return datasets[-1] if datasets else None


def _clean(name: str) -> str:
    return name.lstrip("^").split(":")[0]


def _inputs(node: Any) -> list[str]:
    return [_clean(i) for i in node.input if not i.startswith("^")]


def _is_dataset(node: Any) -> bool:
    return "Dataset" in node.op


def _const(nodes: dict[str, Any], name: str | None) -> Any:
    """The Python value of a Const node (scalar or list), or None when it is not a constant."""
    if name is None:
        return None
    node = nodes.get(name)
    while node is not None and node.op == "Identity" and node.input:
        node = nodes.get(_clean(node.input[0]))
    if node is None or node.op != "Const":
        return None
    return tensor_value(node.attr["value"].tensor)


def tensor_value(tensor: Any) -> Any:
    """Decode a TensorProto of ints, floats, bools or strings without TF's numpy helpers."""
    size = 1
    for dim in tensor.tensor_shape.dim:
        size *= dim.size
    scalar = len(tensor.tensor_shape.dim) == 0
    if tensor.string_val:
        values: list[Any] = [v.decode("utf-8", "replace") for v in tensor.string_val]
    elif tensor.dtype == 7 and tensor.tensor_content:  # DT_STRING packed: varint lengths, then bytes
        values = _decode_packed_strings(tensor.tensor_content, size)
    elif tensor.int64_val:
        values = list(tensor.int64_val)
    elif tensor.int_val:
        values = list(tensor.int_val)
    elif tensor.bool_val:
        values = list(tensor.bool_val)
    elif tensor.float_val:
        values = list(tensor.float_val)
    elif tensor.tensor_content and tensor.dtype in (3, 9):  # int32, int64
        import struct

        fmt = f"<{size}i" if tensor.dtype == 3 else f"<{size}q"
        values = list(struct.unpack(fmt, tensor.tensor_content))
    else:
        return None
    if scalar:
        return values[0] if values else None
    if len(values) == 1 and size > 1:  # a splat constant
        values = values * size
    return values


def _decode_packed_strings(content: bytes, count: int) -> list[str]:
    lengths: list[int] = []
    pos = 0
    for _ in range(count):
        shift = value = 0
        while True:
            byte = content[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        lengths.append(value)
    out = []
    for length in lengths:
        out.append(content[pos:pos + length].decode("utf-8", "replace"))
        pos += length
    return out


def _fn_names(node: Any) -> list[str]:
    names = []
    for key in sorted(node.attr):
        attr = node.attr[key]
        if attr.HasField("func") and attr.func.name:
            names.append(attr.func.name)
        elif attr.HasField("list"):
            names.extend(f.name for f in attr.list.func if f.name)
    return names


def fn_label(function_name: str) -> str:
    """``__inference_Dataset_map_decode_16`` → ``decode``."""
    label = _FN_PREFIX.sub("", function_name, count=1)
    label = re.sub(r"_\d+$", "", label)
    return label or function_name


class _FunctionAnalyser:
    """What a library function (and the functions it calls) contains; memoised."""

    def __init__(self, functions: dict[str, Any]) -> None:
        self.functions = functions
        self._memo: dict[str, dict[str, Any]] = {}

    def ops(self, name: str, stack: frozenset[str] = frozenset()) -> dict[str, Any]:
        if name in self._memo:
            return self._memo[name]
        fn = self.functions.get(name)
        result: dict[str, Any] = {"ops": 0, "py": False, "random": False, "reads": False, "heavy": False,
                                  "reader": None, "generator": False}
        if fn is None or name in stack:
            return result
        for nd in fn.node_def:
            op = nd.op
            if op not in ("Const", "Identity", "NoOp", "IdentityN"):
                result["ops"] += 1
            result["py"] |= op in PY_OPS
            result["random"] |= _is_random(op)
            result["reads"] |= op in FILE_READER_OPS
            result["heavy"] |= op.startswith(HEAVY_PREFIXES)
            result["generator"] |= op == "GeneratorDataset"
            if op in FILE_READER_OPS and result["reader"] is None:
                result["reader"] = op
            callees = _fn_names(nd) + ([op] if op in self.functions else [])
            for callee in callees:
                sub = self.ops(callee, stack | {name})
                result["ops"] += sub["ops"]
                for key in ("py", "random", "reads", "heavy", "generator"):
                    result[key] |= sub[key]
                result["reader"] = result["reader"] or sub["reader"]
        self._memo[name] = result
        return result


def _is_random(op: str) -> bool:
    return (
        op.startswith(("Random", "StatelessRandom", "StatefulRandom", "StatefulUniform",
                       "StatefulStandardNormal", "StatefulTruncatedNormal", "StatelessTruncatedNormal",
                       "StatelessMultinomial", "SampleDistortedBoundingBox", "RngReadAndSkip",
                       "RngBitGenerator", "StatelessParameterizedTruncatedNormal"))
        or op in ("TruncatedNormal", "Multinomial", "ParameterizedTruncatedNormal")
    )


def _stage(node: Any, nodes: dict[str, Any], analyser: _FunctionAnalyser) -> dict[str, Any]:
    op = node.op
    inputs = _inputs(node)
    stage: dict[str, Any] = {"op": op, "kind": _kind(op, node, inputs, nodes), "node": node.name}
    fns = _fn_names(node)
    if fns:
        stage["fn"] = fn_label(fns[0])
        info: dict[str, Any] = {"ops": 0, "py": False, "random": False, "reads": False, "heavy": False,
                                "reader": None, "generator": False}
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
        stage["buffer_size"] = _const(nodes, inputs[1] if len(inputs) > 1 else None)
    npc = _parallel_calls(node, nodes, inputs)
    if stage["kind"] in ("map", "interleave", "batch", "filter") or npc is not None:
        stage["num_parallel_calls"] = npc
        stage["parallel"] = npc is not None and npc != 1
    if stage["kind"] == "flat_map":
        stage["parallel"] = False
    if stage["kind"] == "prefetch":
        stage["buffer_size"] = _const(nodes, inputs[1] if len(inputs) > 1 else None)
    if stage["kind"] == "batch":
        position = 1 if op != "MapAndBatchDataset" else len(inputs) - 3
        stage["batch_size"] = _const(nodes, inputs[position] if len(inputs) > position else None)
    if stage["kind"] == "cache":
        filename = _const(nodes, inputs[1] if len(inputs) > 1 else None)
        stage["to_file"] = bool(filename)
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
    if not any(i in nodes and _is_dataset(nodes[i]) for i in inputs):
        return "source"
    return "other"


def _parallel_calls(node: Any, nodes: dict[str, Any], inputs: list[str]) -> int | None:
    """num_parallel_calls of a parallel op (-1 = AUTOTUNE); 1 for sequential maps/interleaves."""
    op = node.op
    if op in ("MapDataset", "InterleaveDataset", "FilterDataset", "BatchDataset", "BatchDatasetV2",
              "PaddedBatchDataset", "PaddedBatchDatasetV2"):
        return 1
    if op in ("ParallelMapDataset", "ParallelMapDatasetV2", "ParallelFilterDataset") or op.startswith(
        "ParallelInterleaveDataset"
    ):
        value = _const(nodes, inputs[-1] if inputs else None)
        return int(value) if isinstance(value, int) else None
    if op == "ParallelBatchDataset":
        value = _const(nodes, inputs[2] if len(inputs) > 2 else None)
        return int(value) if isinstance(value, int) else None
    if op == "MapAndBatchDataset":
        value = _const(nodes, inputs[-2] if len(inputs) > 1 else None)
        return int(value) if isinstance(value, int) else None
    if op == "LegacyParallelInterleaveDatasetV2":
        value = _const(nodes, inputs[3] if len(inputs) > 3 else None)  # cycle_length
        return int(value) if isinstance(value, int) else None
    return None


def _number(stages: list[dict[str, Any]]) -> None:
    """Give maps and interleaves a 1-based ordinal (source first) for advice like "map #2"."""
    counters: dict[str, int] = {}
    for index, stage in enumerate(stages):
        stage["index"] = index
        kind = stage["kind"]
        if kind in ("map", "interleave", "flat_map", "batch", "filter", "cache", "prefetch", "shuffle"):
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
    for field in ("map_parallelization", "parallel_batch", "inject_prefetch", "apply_default_optimizations"):
        try:
            if opt.HasField(field):
                out[field] = bool(getattr(opt, field))
        except ValueError:  # field unknown to this TF version
            continue
    if merged.HasField("deterministic"):
        out["deterministic"] = bool(merged.deterministic)
    return out


def _files(graph: Any, nodes: dict[str, Any], functions: dict[str, Any],
           stages: list[dict[str, Any]]) -> tuple[list[str], list[str], str | None]:
    """Files of a file-reading pipeline and the compression declared to a TFRecord reader.

    ``declared`` are string constants fed to a reader or a file list (``is_files``);
    ``candidates`` are other path-like string constants (e.g. paths mapped through
    ``tf.io.read_file``), which only count when they exist.
    """
    reads = any(s.get("reads_files") or s.get("is_files") for s in stages)
    compression: str | None = None
    for fn in functions.values():
        for nd in fn.node_def:
            if nd.op in ("TFRecordDataset", "TFRecordDatasetV2") and len(nd.input) > 1:
                comp = _fn_const(fn, nd.input[1])
                if isinstance(comp, str) and comp:
                    compression = comp.upper()
    for node in graph.node:
        if node.op in ("TFRecordDataset", "TFRecordDatasetV2") and len(node.input) > 1:
            comp = _const(nodes, _clean(node.input[1]))
            if isinstance(comp, str) and comp:
                compression = comp.upper()
    if not reads:
        return [], [], compression
    declared: list[str] = []
    candidates: list[str] = []
    feeding = {
        _clean(i)
        for node in graph.node
        if node.op in FILE_READER_OPS or (node.op == "TensorSliceDataset" and node.attr["is_files"].b)
        for i in node.input
    }
    for node in graph.node:
        if node.op != "Const" or node.attr["dtype"].type != 7:
            continue
        value = tensor_value(node.attr["value"].tensor)
        values = value if isinstance(value, list) else [value]
        target = declared if node.name in feeding else candidates
        target.extend(v for v in values if isinstance(v, str) and _looks_like_path(v))
    return list(dict.fromkeys(declared)), list(dict.fromkeys(candidates)), compression


def _fn_const(fn: Any, ref: str) -> Any:
    name = ref.split(":")[0]
    for nd in fn.node_def:
        if nd.name == name and nd.op == "Const":
            return tensor_value(nd.attr["value"].tensor)
    return None


def _looks_like_path(value: str) -> bool:
    if not value or len(value) > 4096 or "\n" in value:
        return False
    return "/" in value or "\\" in value or "://" in value or "." in value
