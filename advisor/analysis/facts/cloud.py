"""Facts from cloud APIs and data checks: S3 object sizes, formats, the SageMaker input mode.

Three producers, all recorded in the run before analysis: the pipeline collector (a tf.data
pipeline reading ``s3://`` paths is sized at train begin, and the input mode is read from the
SageMaker job's channel configuration or from the paths), ``advisor data PATH --into RUN`` and
``advisor import sagemaker`` (``facts`` records). A facts record names what it measured
explicitly, so it wins over what the pipeline inspection inferred.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact(
        "cloud.input_mode",
        "",
        "how training data reaches the job: SageMaker File, FastFile or Pipe, or Stream (the "
        "pipeline reads s3:// itself)",
        "cloud",
        "str",
    ),
    Fact(
        "cloud.input_mode_source",
        "",
        "where the input mode was read: sagemaker-job, sagemaker-config or pipeline-paths",
        "cloud",
        "str",
    ),
    Fact(
        "cloud.data_object_bytes.p50",
        "bytes",
        "median size of the training data objects in object storage",
        "cloud",
    ),
    Fact("cloud.data_objects", "", "training data objects in object storage", "cloud"),
    Fact("cloud.data_location", "", "the object-storage prefix that was sized", "cloud", "str"),
    Fact(
        "storage.format",
        "",
        "the most common data file format (tfrecord, parquet, jpeg, tar, ...)",
        "storage",
        "str",
    ),
)

# facts records whose values are passed through (registered names only)
SOURCES = ("cloud", "data", "sagemaker")


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.analysis.registry import registry
    from advisor.store.schema import FactsRecord, PipelineRecord

    out: dict[str, Any] = {}
    pipelines = run.chief_of_type(PipelineRecord)
    if pipelines:
        values = pipelines[-1].values
        cloud = values.get("cloud") or {}
        for key in ("input_mode", "input_mode_source"):
            if cloud.get(key):
                out[f"cloud.{key}"] = cloud[key]
        storage = values.get("storage") or {}
        if storage.get("format"):
            out["storage.format"] = storage["format"]
        if storage.get("location", "").startswith("s3://") and storage.get("bytes_p50") is not None:
            out["cloud.data_object_bytes.p50"] = storage["bytes_p50"]
            out["cloud.data_objects"] = storage.get("files")
            out["cloud.data_location"] = storage["location"]
    known = registry()
    for record in run.of_type(FactsRecord):
        if record.source in SOURCES:
            out.update({k: v for k, v in record.values.items() if k in known and v is not None})
    return out
