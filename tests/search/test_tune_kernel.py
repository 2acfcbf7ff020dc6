"""``autotune.tune_kernel`` without a GPU: the kernel file it writes reads back (through the one
reader) into the model its document gives, with the user's arrays as the inputs of every
measurement (``init`` = their ``.npy``) and the answer as the reference; a search runs on it (the
fake benchmark) and stores its trials; bad arguments are one clear error."""

from __future__ import annotations

import contextlib
import tomllib

import numpy as np
import pytest

import autotune
from autotune.errors import InvalidInputError
from autotune.kernel.loader import kernel_from_dict, load_kernel
from autotune.measure.buffers import host_values
from autotune.measure.reference import python_reference
from autotune.search.tune_kernel import kernel_document, to_toml
from autotune.store.opening import open_results

from fakes import FakeTimer

SCALE = r"""
extern "C" __global__ void scale(float *y, const float *x, int n)
{
    int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""


@pytest.fixture
def fake_gpu(monkeypatch, device_info):
    from autotune.measure import benchmark, device

    from test_cli import FakeBench

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        yield FakeBench(device_info, FakeTimer())

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)


def arguments(n=1000):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    return {"y": np.zeros(n, np.float32), "x": x, "n": np.int32(n)}


def test_one_call_writes_the_kernel_file_and_tunes_it(fake_gpu, tmp_path, db_url):
    args = arguments()
    done = autotune.tune_kernel("scale", SCALE, args, block=["BLOCK_SIZE", 1, 1], grid=["cdiv(n, BLOCK_SIZE)", 1, 1],
                                space={"BLOCK_SIZE": [64, 128, 256]}, answer={"y": 2 * args["x"]},
                                folder=tmp_path / "scale", trials=3, strategy="grid", db=db_url)
    assert done.file == tmp_path / "scale" / "scale.toml" and done.kernel.name == "scale"
    assert len(done.result.outcomes) == 3 and done.result.key.kernel == "scale"
    [best] = open_results(db_url).find_best(kernel="scale")  # stored like any search's
    assert best.config.key in {o.config.key for o in done.result.outcomes}
    doc = tomllib.loads(done.file.read_text())
    assert doc["problem"]["dims"] == ["n"] and doc["args"][0] == {"name": "y", "array": ["n"], "dtype": "float32",
                                                                   "role": "out"}
    assert doc["args"][1]["init"] == "x.npy" and doc["args"][2] == {"name": "n", "scalar": "int32", "value": "n"}
    assert doc["check"] == {"compare": "exact", "reference": "answer.py:reference"}
    again = load_kernel(done.file)
    assert again.spec_hash == done.kernel.spec_hash == kernel_from_dict(doc, done.file).spec_hash
    x = again.arrays[1]
    np.testing.assert_array_equal(host_values(x, (1000,), autotune.DTYPES["float32"], np.random.default_rng(1)),
                                  args["x"])  # the user's array is every measurement's input
    layout = [(a, (1000,), autotune.DTYPES["float32"]) for a in again.arrays]
    expected = python_reference(again, layout, {"n": np.int32(1000)}, {1: args["x"]})
    np.testing.assert_array_equal(expected[0], 2 * args["x"])


def test_without_an_answer_the_default_config_is_the_reference(tmp_path):
    args = arguments(64)
    doc = kernel_document("scale", "scale.cu", args, dims={"n": 64}, block=["BLOCK_SIZE", 1, 1],
                          grid=["cdiv(n, BLOCK_SIZE)", 1, 1], space={"BLOCK_SIZE": [32, 64]}, outputs=("y",))
    assert doc["check"]["reference_kernel"] == "scale" and doc["check"]["launch"]["grid"][0] == "cdiv(n, BLOCK_SIZE)"
    assert doc["space"]["default"] == {"BLOCK_SIZE": 32}
    (tmp_path / "scale.cu").write_text(SCALE)
    np.save(tmp_path / "x.npy", args["x"])
    (tmp_path / "k.toml").write_text(to_toml(doc))
    assert load_kernel(tmp_path / "k.toml").check_spec.reference_kernel == "scale"


@pytest.mark.parametrize("change, message", [
    (dict(answer=None), "name the outputs: give answer="),
    (dict(answer={"z": np.zeros(3)}), "answer 'z' must be an array argument's expected values"),
    (dict(space={}), "space is empty"),
    (dict(name="2bad"), "name '2bad' is not allowed"),
])
def test_bad_input_is_one_clear_error(tmp_path, change, message):
    args = arguments(16)
    call = dict(name="scale", source=SCALE, arguments=args, block=["BLOCK_SIZE", 1, 1],
                grid=["cdiv(n, BLOCK_SIZE)", 1, 1], space={"BLOCK_SIZE": [32]}, answer={"y": 2 * args["x"]},
                folder=tmp_path)
    call.update(change)
    with pytest.raises(InvalidInputError, match=message):
        autotune.tune_kernel(**call)
