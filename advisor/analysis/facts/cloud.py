"""Facts from cloud APIs (S3 object sizes, SageMaker input mode). Derivations: the cloud issue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("cloud.input_mode", "", "SageMaker input mode (File, FastFile, Pipe) or streaming reader", "cloud", "str"),
    Fact("cloud.data_object_bytes.p50", "bytes", "median size of the training data objects in object storage", "cloud"),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    """Facts attached with a ``facts`` record (``source`` = cloud) are passed through."""
    from advisor.store.schema import FactsRecord

    names = {f.name for f in FACTS}
    out: dict[str, Any] = {}
    for record in run.of_type(FactsRecord):
        for key, value in record.values.items():
            if key in names:
                out[key] = value
    return out
