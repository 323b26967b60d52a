"""The microbenchmark itself, on this host with TensorFlow: figures for each dtype, within its
time, and a dtype whose kernel fails is said, not raised."""

from __future__ import annotations

import pytest

from advisor.probes import speed_of_light

pytestmark = pytest.mark.slow
pytest.importorskip("tensorflow")


def test_it_measures_each_dtype_and_the_bandwidth():
    result = speed_of_light.measure("tensorflow", "cpu", max_seconds=2.0)
    assert set(result.tflops) == set(speed_of_light.DTYPES)  # each dtype's smallest size, always
    assert result.tflops["float32"] > 0
    assert result.bandwidth_gbs is not None and result.bandwidth_gbs > 0
    assert speed_of_light.SpeedOfLight.from_dict(result.to_dict()) == result


def test_a_dtype_that_fails_is_recorded_with_why(monkeypatch):
    # a real TensorFlow kernel for float32 and bfloat16; float16 raises as a device without it
    matmul, copy = speed_of_light._tensorflow("cpu")

    def without_float16(dtype, n):
        if dtype == "float16":
            raise TypeError("float16 matmul is not supported here")
        return matmul(dtype, n)

    monkeypatch.setitem(speed_of_light.KERNELS, "tensorflow", lambda d: (without_float16, copy))
    result = speed_of_light.measure("tensorflow", "cpu", max_seconds=2.0)
    assert result.failed == {"float16": "TypeError: float16 matmul is not supported here"}
    assert result.tflops["float32"] > 0


def test_an_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="no speed-of-light kernels"):
        speed_of_light.measure("mxnet", "cpu")
