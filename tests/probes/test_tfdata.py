"""tf.data inspection from the serialized graph, over a table of real pipelines (no training)."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from advisor.analysis.pipeline_advice import pipeline_facts  # noqa: E402
from advisor.collectors.pipeline import describe_dataset  # noqa: E402
from advisor.diagnosis.phrases import say_changes  # noqa: E402
from advisor.probes.storage import file_facts  # noqa: E402
from advisor.probes.tfdata import fn_label, inspect_dataset  # noqa: E402

AUTOTUNE = tf.data.AUTOTUNE


def _base() -> tf.data.Dataset:
    x = np.arange(64, dtype="float32").reshape(32, 2)
    return tf.data.Dataset.from_tensor_slices((x, np.arange(32)))


def _slow(a, b):
    return a, b


def decode(a, b):
    a2, b2 = tf.py_function(_slow, [a, b], [tf.float32, tf.int64])
    return a2, b2


def decode_np(a, b):
    return tf.numpy_function(lambda u, v: (u, v), [a, b], [tf.float32, tf.int64])


def scale(a, b):
    return a * 2.0, b


def augment(a, b):
    return a + tf.random.uniform(tf.shape(a)), b


def _options(**changes) -> tf.data.Options:
    options = tf.data.Options()
    if "autotune" in changes:
        options.autotune.enabled = changes["autotune"]
    if "intra" in changes:
        options.threading.max_intra_op_parallelism = changes["intra"]
    if "inject_prefetch" in changes:
        options.experimental_optimization.inject_prefetch = changes["inject_prefetch"]
    return options


PIPELINES = {
    "sequential_map_no_prefetch": (
        lambda: _base().map(scale).batch(8),
        {
            "pipeline.sequential_maps": 1,
            "pipeline.prefetch": False,
            "pipeline.prefetch_at_end": False,
            "pipeline.prefetch_injected": True,
            "pipeline.py_function": False,
        },
        ["add num_parallel_calls=tf.data.AUTOTUNE to map #1 ('scale')"],
    ),
    "no_prefetch_and_no_injection": (
        lambda: (
            _base()
            .map(scale, num_parallel_calls=AUTOTUNE)
            .batch(8)
            .with_options(_options(inject_prefetch=False))
        ),
        {"pipeline.prefetch": False, "pipeline.prefetch_injected": False},
        ["add .prefetch(tf.data.AUTOTUNE) at the end"],
    ),
    "parallel_autotune_prefetch": (
        lambda: _base().map(scale, num_parallel_calls=AUTOTUNE).batch(8).prefetch(AUTOTUNE),
        {
            "pipeline.sequential_maps": 0,
            "pipeline.fixed_parallelism": 0,
            "pipeline.prefetch_at_end": True,
            "pipeline.autotune_disabled": False,
        },
        ["no change needed"],
    ),
    "fixed_parallelism": (
        lambda: _base().map(scale, num_parallel_calls=4).batch(8).prefetch(2),
        {
            "pipeline.sequential_maps": 0,
            "pipeline.fixed_parallelism": 1,
            "pipeline.prefetch_at_end": True,
        },
        ["use num_parallel_calls=tf.data.AUTOTUNE instead of 4 on map #1 ('scale')"],
    ),
    "prefetch_not_last": (
        lambda: (
            _base()
            .prefetch(AUTOTUNE)
            .map(scale, num_parallel_calls=AUTOTUNE)
            .batch(8)
            .with_options(_options(inject_prefetch=False))
        ),
        {"pipeline.prefetch": True, "pipeline.prefetch_at_end": False},
        ["move .prefetch(tf.data.AUTOTUNE) to the end"],
    ),
    "py_function": (
        lambda: _base().map(decode).batch(8).prefetch(AUTOTUNE),
        {
            "pipeline.py_function": True,
            "pipeline.sequential_maps": 1,
            "pipeline.uncached_deterministic_map": True,
        },
        [
            "add num_parallel_calls=tf.data.AUTOTUNE to map #1 ('decode')",
            "rewrite map #1 ('decode') in TensorFlow ops",
            "map #1 ('decode') is deterministic and recomputed every epoch",
        ],
    ),
    "numpy_function": (
        lambda: _base().map(decode_np, num_parallel_calls=AUTOTUNE).batch(8).prefetch(AUTOTUNE),
        {"pipeline.py_function": True, "pipeline.sequential_maps": 0},
        ["rewrite map #1 ('decode_np') in TensorFlow ops"],
    ),
    "cache_after_random_map": (
        lambda: (
            _base().map(augment, num_parallel_calls=AUTOTUNE).cache().batch(8).prefetch(AUTOTUNE)
        ),
        {"pipeline.cache": True, "pipeline.cache_after_random": True},
        ["move .cache() before the random map #1 ('augment')"],
    ),
    "cache_before_random_map": (
        lambda: (
            _base()
            .map(decode, num_parallel_calls=AUTOTUNE)
            .cache()
            .map(augment, num_parallel_calls=AUTOTUNE)
            .batch(8)
            .prefetch(AUTOTUNE)
        ),
        {
            "pipeline.cache": True,
            "pipeline.cache_after_random": False,
            "pipeline.uncached_deterministic_map": False,
        },
        [],
    ),
    "cache_after_shuffle": (
        lambda: _base().shuffle(32).cache().batch(8).prefetch(AUTOTUNE),
        {"pipeline.cache_after_random": True},
        ["move .cache() before .shuffle()"],
    ),
    "sequential_interleave": (
        lambda: (
            tf.data.Dataset.range(4)
            .interleave(lambda i: tf.data.Dataset.range(i), cycle_length=2)
            .batch(2)
            .prefetch(AUTOTUNE)
        ),
        {"pipeline.sequential_interleaves": 1},
        ["add num_parallel_calls=tf.data.AUTOTUNE to interleave #1"],
    ),
    "parallel_interleave": (
        lambda: (
            tf.data.Dataset.range(4)
            .interleave(
                lambda i: tf.data.Dataset.range(i), cycle_length=2, num_parallel_calls=AUTOTUNE
            )
            .batch(2)
            .prefetch(AUTOTUNE)
        ),
        {"pipeline.sequential_interleaves": 0},
        ["no change needed"],
    ),
    "options_off": (
        lambda: (
            _base()
            .map(scale, num_parallel_calls=AUTOTUNE)
            .batch(8)
            .prefetch(AUTOTUNE)
            .with_options(_options(autotune=False, intra=1))
        ),
        {"pipeline.autotune_disabled": True},
        [
            "remove options.autotune.enabled = False",
            "remove options.threading.max_intra_op_parallelism = 1",
        ],
    ),
    "options_default": (
        lambda: _base().batch(8).prefetch(AUTOTUNE).with_options(tf.data.Options()),
        {"pipeline.autotune_disabled": False, "pipeline.prefetch_at_end": True},
        [],
    ),
    "generator_source": (
        lambda: (
            tf.data.Dataset.from_generator(
                lambda: iter(range(4)), output_signature=tf.TensorSpec([], tf.int64)
            )
            .batch(2)
            .prefetch(AUTOTUNE)
        ),
        {"pipeline.generator_source": True},
        ["the source is a Python generator"],
    ),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_table(name: str) -> None:
    build, expected, advice_parts = PIPELINES[name]
    facts = pipeline_facts({"input_kind": "tf.data", "summary": inspect_dataset(build())})
    assert facts["pipeline.inspected"] is True
    for key, value in expected.items():
        assert facts[key] == value, (key, facts)
    advice = say_changes(facts["pipeline.advice"])
    for part in advice_parts:
        assert part in advice, advice
    if facts.get("pipeline.prefetch_injected"):
        assert "prefetch" not in advice  # TF adds it: no speed to gain
    assert facts["pipeline.stages"][0]  # source first
    assert all(isinstance(s, str) for s in facts["pipeline.stages"])


def test_stage_order_and_labels() -> None:
    ds = (
        _base()
        .shuffle(32)
        .map(decode)
        .map(augment, num_parallel_calls=3)
        .batch(8)
        .prefetch(AUTOTUNE)
    )
    summary = inspect_dataset(ds)
    kinds = [s["kind"] for s in summary["stages"]]
    assert kinds == ["source", "shuffle", "map", "map", "batch", "prefetch"]
    maps = [s for s in summary["stages"] if s["kind"] == "map"]
    assert [m["fn"] for m in maps] == ["decode", "augment"]
    assert [m["ordinal"] for m in maps] == [1, 2]
    assert maps[0]["parallel"] is False and maps[1]["num_parallel_calls"] == 3
    assert maps[1]["random"] is True and maps[0]["random"] is False
    assert summary["stages"][4]["batch_size"] == 8
    assert summary["stages"][5]["buffer_size"] == -1


def test_a_cache_after_an_endless_repeat_is_told_from_one_before_it() -> None:
    """The memory facts name an in-memory cache() after repeat() as a leak's suspect: its first
    pass never ends (advisor.growth.unbounded_cache)."""
    from advisor.growth import unbounded_cache

    after = inspect_dataset(_base().repeat().cache().batch(8))["stages"]
    assert [(s["kind"], s.get("count")) for s in after[:3]] == [
        ("source", None),
        ("repeat", -1),
        ("cache", None),
    ]
    assert "after repeat()" in unbounded_cache(after)
    assert unbounded_cache(inspect_dataset(_base().cache().repeat().batch(8))["stages"]) is None
    assert unbounded_cache(inspect_dataset(_base().repeat(3).cache().batch(8))["stages"]) is None
    on_disk = inspect_dataset(_base().repeat().cache("/tmp/advisor-cache").batch(8))["stages"]
    assert unbounded_cache(on_disk) is None  # a cache file holds it, not memory


def test_fn_label() -> None:
    assert fn_label("__inference_Dataset_map_decode_16") == "decode"
    assert fn_label("__inference_Dataset_interleave_read_one_file_71") == "read_one_file"
    assert fn_label("__inference_Dataset_map_lambda_83") == "lambda"


@pytest.fixture(scope="module")
def record_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("records")
    plain, zipped = [], []
    for i, size in enumerate((10, 20, 40)):
        path = str(root / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for j in range(size):
                writer.write(f"record-{i}-{j}".encode())
        plain.append(path)
        gz = str(root / f"part-{i}.tfrecord.gz")
        with tf.io.TFRecordWriter(gz, options="GZIP") as writer:
            writer.write(b"x")
        zipped.append(gz)
    return plain, zipped


def test_file_source_sequential_reads(record_files) -> None:
    plain, _ = record_files
    ds = tf.data.TFRecordDataset(plain).map(
        lambda r: tf.strings.length(r), num_parallel_calls=AUTOTUNE
    )
    values = describe_dataset(ds.batch(4).prefetch(AUTOTUNE))
    facts = pipeline_facts({"input_kind": "tf.data", **values})
    assert facts["pipeline.file_source"] is True
    assert facts["pipeline.sequential_interleaves"] == 1
    assert "num_parallel_reads=tf.data.AUTOTUNE" in say_changes(facts["pipeline.advice"])
    assert facts["storage.files"] == 3
    sizes = sorted(os.path.getsize(p) for p in plain)
    assert facts["storage.file_bytes.p50"] == sizes[1]
    assert (
        sizes[0] <= facts["storage.file_bytes.p10"] <= facts["storage.file_bytes.p90"] <= sizes[2]
    )
    assert facts["storage.compression"] == "none"


def test_parallel_reads_and_list_files(record_files) -> None:
    plain, _ = record_files
    pattern = os.path.join(os.path.dirname(plain[0]), "part-*.tfrecord")
    files = tf.data.Dataset.list_files(pattern, shuffle=False)
    ds = (
        files.interleave(tf.data.TFRecordDataset, num_parallel_calls=AUTOTUNE)
        .batch(4)
        .prefetch(AUTOTUNE)
    )
    facts = pipeline_facts({"input_kind": "tf.data", **describe_dataset(ds)})
    assert facts["pipeline.sequential_interleaves"] == 0
    assert facts["storage.files"] == 3
    parallel = (
        tf.data.TFRecordDataset(plain, num_parallel_reads=AUTOTUNE).batch(4).prefetch(AUTOTUNE)
    )
    facts = pipeline_facts({"input_kind": "tf.data", **describe_dataset(parallel)})
    assert facts["pipeline.sequential_interleaves"] == 0


def test_declared_gzip_compression(record_files) -> None:
    _, zipped = record_files
    ds = tf.data.TFRecordDataset(zipped, compression_type="GZIP").batch(2)
    facts = pipeline_facts({"input_kind": "tf.data", **describe_dataset(ds)})
    assert facts["storage.compression"] == "gzip"


def test_sniffed_compression_and_missing_files(tmp_path) -> None:
    zst = tmp_path / "shard.bin"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 100)
    gz = tmp_path / "shard2.bin"
    gz.write_bytes(gzip.compress(b"hello"))
    facts = file_facts([str(zst), str(tmp_path / "gone.tfrecord")])
    assert facts["files"] == 1 and facts["compression"] == "zstd"
    assert facts["missing"] == [f"{tmp_path / 'gone.tfrecord'}: no such file"]
    assert file_facts([str(gz)])["compression"] == "gzip"
    glob_facts = file_facts([str(tmp_path / "shard*.bin")])
    assert glob_facts["files"] == 2


def test_unreadable_files_become_facts_not_errors(tmp_path) -> None:
    missing = str(tmp_path / "nope.tfrecord")
    values = describe_dataset(tf.data.TFRecordDataset([missing]).batch(2))
    facts = pipeline_facts({"input_kind": "tf.data", **values})
    assert facts["storage.unreadable"] == [f"{missing}: no such file"]
    assert "storage.files" not in facts  # nothing measured: absent, not zero


def test_read_file_candidates(record_files) -> None:
    plain, _ = record_files
    ds = (
        tf.data.Dataset.from_tensor_slices(plain + ["not/a/file.txt"]).map(tf.io.read_file).batch(2)
    )
    facts = pipeline_facts({"input_kind": "tf.data", **describe_dataset(ds)})
    assert facts["pipeline.file_source"] is True
    assert facts["storage.files"] == 3  # path-like strings that do not exist are ignored


def test_non_tfdata_inputs() -> None:
    facts = pipeline_facts(
        {"input_kind": "pydataset", "pydataset": {"workers": 1, "use_multiprocessing": False}}
    )
    assert "workers=N" in say_changes(facts["pipeline.advice"])
    assert "pipeline.inspected" not in facts and "pipeline.prefetch" not in facts
    assert facts["pipeline.workers"] == 1
    facts = pipeline_facts({"input_kind": "torch", "dataloader": {"num_workers": 0}})
    assert facts["pipeline.workers"] == 0 and "num_workers=N" in say_changes(
        facts["pipeline.advice"]
    )
    facts = pipeline_facts({"input_kind": "numpy", "dynamic_dims": 0})
    # Arrays in memory: no files read, fixed shapes.
    assert facts == {
        "pipeline.input_kind": "numpy",
        "pipeline.file_source": False,
        "pipeline.dynamic_dims": 0,
    }
    facts = pipeline_facts({"input_kind": "tf.data", "error": "cannot serialize"})
    assert "pipeline.inspected" not in facts


def test_not_a_dataset() -> None:
    values = describe_dataset(object())
    assert "not a tf.data.Dataset" in values["error"]
