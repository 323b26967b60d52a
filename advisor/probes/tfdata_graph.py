"""Reading a tf.data GraphDef: op families, constants, library functions and the files a pipeline
reads.

Helpers of :mod:`advisor.probes.tfdata`; plain protobuf walking, no TensorFlow import.
"""

from __future__ import annotations

import re
from typing import Any

# Op families, by GraphDef op name.
MAP_OPS = {"MapDataset", "ParallelMapDataset", "ParallelMapDatasetV2", "MapAndBatchDataset"}
INTERLEAVE_OPS = {
    "InterleaveDataset",
    "ParallelInterleaveDataset",
    "ParallelInterleaveDatasetV2",
    "ParallelInterleaveDatasetV3",
    "ParallelInterleaveDatasetV4",
    "LegacyParallelInterleaveDatasetV2",
}
BATCH_OPS = {
    "BatchDataset",
    "BatchDatasetV2",
    "ParallelBatchDataset",
    "PaddedBatchDataset",
    "PaddedBatchDatasetV2",
    "MapAndBatchDataset",
}
FILE_READER_OPS = {
    "TFRecordDataset",
    "TFRecordDatasetV2",
    "TextLineDataset",
    "FixedLengthRecordDataset",
    "FixedLengthRecordDatasetV2",
    "CSVDataset",
    "CSVDatasetV2",
    "ReadFile",
    "MatchingFiles",
    "LMDBDataset",
    "SqlDataset",
    "ExperimentalCSVDataset",
    "ExperimentalLMDBDataset",
}
PY_OPS = {"EagerPyFunc", "PyFunc", "PyFuncStateless"}
HEAVY_PREFIXES = (
    "Decode",
    "Parse",
    "Resize",
    "CropAndResize",
    "ImageProjectiveTransform",
    "ExtractJpegShape",
    "StringSplit",
    "RegexReplace",
    "Substr",
    "Unicode",
)
# Stages that do not change what the pipeline computes; skipped when asking "what is last?".
PASSIVE_OPS = {
    "OptionsDataset",
    "ModelDataset",
    "MaxIntraOpParallelismDataset",
    "PrivateThreadPoolDataset",
    "AssertCardinalityDataset",
    "AssertNextDataset",
    "NonSerializableDataset",
    "OptimizeDataset",
    "OptimizeDatasetV2",
}
KIND_BY_OP = {
    "PrefetchDataset": "prefetch",
    "CacheDataset": "cache",
    "CacheDatasetV2": "cache",
    "ShuffleDataset": "shuffle",
    "ShuffleDatasetV2": "shuffle",
    "ShuffleDatasetV3": "shuffle",
    "ShuffleAndRepeatDataset": "shuffle",
    "ShuffleAndRepeatDatasetV2": "shuffle",
    "RepeatDataset": "repeat",
    "TakeDataset": "take",
    "SkipDataset": "skip",
    "FilterDataset": "filter",
    "ParallelFilterDataset": "filter",
    "FlatMapDataset": "flat_map",
    "UnbatchDataset": "unbatch",
    "RebatchDataset": "rebatch",
    "RebatchDatasetV2": "rebatch",
    "ShardDataset": "shard",
    "ZipDataset": "zip",
    "ConcatenateDataset": "concatenate",
    "GeneratorDataset": "generator",
    "SnapshotDatasetV2": "snapshot",
    "WindowDataset": "window",
}


_FN_PREFIX = re.compile(
    r"^(?:__inference_)?(?:Dataset_)?"
    r"(?:parallel_map|map|interleave|parallel_interleave|flat_map|filter|map_and_batch|scan|"
    r"group_by_window|generator|from_generator|reduce|unbatch)?_?"
)


def clean(name: str) -> str:
    return name.lstrip("^").split(":")[0]


def inputs_of(node: Any) -> list[str]:
    return [clean(i) for i in node.input if not i.startswith("^")]


def is_dataset(node: Any) -> bool:
    return "Dataset" in node.op


def const(nodes: dict[str, Any], name: str | None) -> Any:
    """The Python value of a Const node (scalar or list), or None when it is not a constant."""
    if name is None:
        return None
    node = nodes.get(name)
    while node is not None and node.op == "Identity" and node.input:
        node = nodes.get(clean(node.input[0]))
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
    elif (
        tensor.dtype == 7 and tensor.tensor_content
    ):  # DT_STRING packed: varint lengths, then bytes
        values = decode_packed_strings(tensor.tensor_content, size)
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


def decode_packed_strings(content: bytes, count: int) -> list[str]:
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
        out.append(content[pos : pos + length].decode("utf-8", "replace"))
        pos += length
    return out


def fn_names(node: Any) -> list[str]:
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


class FunctionAnalyser:
    """What a library function (and the functions it calls) contains; memoised."""

    def __init__(self, functions: dict[str, Any]) -> None:
        self.functions = functions
        self._memo: dict[str, dict[str, Any]] = {}

    def ops(self, name: str, stack: frozenset[str] = frozenset()) -> dict[str, Any]:
        if name in self._memo:
            return self._memo[name]
        fn = self.functions.get(name)
        result: dict[str, Any] = {
            "ops": 0,
            "py": False,
            "random": False,
            "reads": False,
            "heavy": False,
            "reader": None,
            "generator": False,
        }
        if fn is None or name in stack:
            return result
        for nd in fn.node_def:
            op = nd.op
            if op not in ("Const", "Identity", "NoOp", "IdentityN"):
                result["ops"] += 1
            result["py"] |= op in PY_OPS
            result["random"] |= is_random(op)
            result["reads"] |= op in FILE_READER_OPS
            result["heavy"] |= op.startswith(HEAVY_PREFIXES)
            result["generator"] |= op == "GeneratorDataset"
            if op in FILE_READER_OPS and result["reader"] is None:
                result["reader"] = op
            callees = fn_names(nd) + ([op] if op in self.functions else [])
            for callee in callees:
                sub = self.ops(callee, stack | {name})
                result["ops"] += sub["ops"]
                for key in ("py", "random", "reads", "heavy", "generator"):
                    result[key] |= sub[key]
                result["reader"] = result["reader"] or sub["reader"]
        self._memo[name] = result
        return result


def is_random(op: str) -> bool:
    return op.startswith(
        (
            "Random",
            "StatelessRandom",
            "StatefulRandom",
            "StatefulUniform",
            "StatefulStandardNormal",
            "StatefulTruncatedNormal",
            "StatelessTruncatedNormal",
            "StatelessMultinomial",
            "SampleDistortedBoundingBox",
            "RngReadAndSkip",
            "RngBitGenerator",
            "StatelessParameterizedTruncatedNormal",
        )
    ) or op in ("TruncatedNormal", "Multinomial", "ParameterizedTruncatedNormal")


def files_of(
    graph: Any, nodes: dict[str, Any], functions: dict[str, Any], stages: list[dict[str, Any]]
) -> tuple[list[str], list[str], str | None]:
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
                comp = fn_const(fn, nd.input[1])
                if isinstance(comp, str) and comp:
                    compression = comp.upper()
    for node in graph.node:
        if node.op in ("TFRecordDataset", "TFRecordDatasetV2") and len(node.input) > 1:
            comp = const(nodes, clean(node.input[1]))
            if isinstance(comp, str) and comp:
                compression = comp.upper()
    if not reads:  # a custom reader (py_function, generator) may still name object-store URLs
        urls = [
            v
            for node in graph.node
            if node.op == "Const" and node.attr["dtype"].type == 7
            for v in _strings(node)
            if v.startswith(OBJECT_STORE_SCHEMES)
        ]
        return [], list(dict.fromkeys(urls)), compression
    declared: list[str] = []
    candidates: list[str] = []
    feeding = {
        clean(i)
        for node in graph.node
        if node.op in FILE_READER_OPS
        or (node.op == "TensorSliceDataset" and node.attr["is_files"].b)
        for i in node.input
    }
    for node in graph.node:
        if node.op != "Const" or node.attr["dtype"].type != 7:
            continue
        value = tensor_value(node.attr["value"].tensor)
        values = value if isinstance(value, list) else [value]
        target = declared if node.name in feeding else candidates
        target.extend(v for v in values if isinstance(v, str) and looks_like_path(v))
    return list(dict.fromkeys(declared)), list(dict.fromkeys(candidates)), compression


OBJECT_STORE_SCHEMES = ("s3://", "gs://")


def _strings(node: Any) -> list[str]:
    value = tensor_value(node.attr["value"].tensor)
    return [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]


def fn_const(fn: Any, ref: str) -> Any:
    name = ref.split(":")[0]
    for nd in fn.node_def:
        if nd.name == name and nd.op == "Const":
            return tensor_value(nd.attr["value"].tensor)
    return None


def looks_like_path(value: str) -> bool:
    if not value or len(value) > 4096 or "\n" in value:
        return False
    return "/" in value or "\\" in value or "://" in value or "." in value
