"""A dispatch as JSON and back (autotune.dispatch.codec): the same picks for every rule, and a
malformed one refused."""

from __future__ import annotations

import json
import random

import pytest

from autotune.dispatch import ShapeTable, build_dispatch
from autotune.dispatch.codec import from_json, to_json
from autotune.kernel.catalog import get_kernel

SMEM = get_kernel("smem_pad")
DEFAULT = SMEM.default_config()
CONFIGS = [DEFAULT] + [c for c in SMEM.space().configs() if c != DEFAULT][:6]


def tables():
    rnd = random.Random(50)
    shapes = {(int(2 ** rnd.uniform(6, 14)), int(2 ** rnd.uniform(6, 14))) for _ in range(10)}
    return [ShapeTable(s, {c: rnd.uniform(0.5, 2.0) for c in CONFIGS}) for s in shapes]


@pytest.mark.parametrize("rule", ["knn", "tree", "nearest"])
def test_a_dispatch_read_back_from_json_picks_alike(rule):
    d = build_dispatch(tables(), DEFAULT, ("rows", "cols"), rules=(rule,))
    back = from_json(json.loads(json.dumps(to_json(d))))
    assert (back.kind, back.configs, back.shapes, back.regrets, back.nodes) == (d.kind, d.configs, d.shapes,
                                                                                 d.regrets, d.nodes)
    assert (back.floor, back.unsafe) == (d.floor, d.unsafe)
    rnd = random.Random(1)
    for _ in range(200):
        shape = (rnd.randint(1, 40000), rnd.randint(1, 40000))
        assert back.pick(shape) == d.pick(shape)


@pytest.mark.parametrize("change, message", [
    (lambda doc: doc.update(kind="forest"), "dispatch rule 'forest'"),
    (lambda doc: doc["regrets"].pop(), "tables of mismatched sizes"),
    (lambda doc: doc["nodes"][0].update(left=0), "tree nodes out of range"),  # a loop
    (lambda doc: doc["shapes"][0].__setitem__(0, 1.5), "1.5 is not an integer"),
    (lambda doc: doc.update(unsafe=[len(doc["shapes"])]), "unsafe shapes out of range"),
])
def test_a_malformed_dispatch_is_refused(change, message):
    doc = to_json(build_dispatch(tables(), DEFAULT, ("rows", "cols"), rules=("tree",)))
    assert len(doc["nodes"]) > 1
    change(doc)
    with pytest.raises((ValueError, TypeError), match=message):
        from_json(doc)


def test_a_dispatch_of_a_bundle_before_the_noise_floor_reads_back_without_one():
    d = build_dispatch(tables(), DEFAULT, ("rows", "cols"), rules=("knn",))
    doc = to_json(d)
    doc.pop("floor", None), doc.pop("unsafe", None)
    back = from_json(doc)
    assert (back.floor, back.unsafe) == (0.0, ())


def test_a_dispatch_without_a_floor_or_unsafe_shapes_is_written_without_them():
    """Written as before the noise floor, so an older bundle is encoded again byte for byte."""
    from dataclasses import replace

    d = replace(build_dispatch(tables(), DEFAULT, ("rows", "cols"), rules=("knn",)), floor=0.0, unsafe=())
    assert "floor" not in to_json(d) and "unsafe" not in to_json(d)
    d2 = replace(d, floor=0.002, unsafe=(1,))
    assert (to_json(d2)["floor"], to_json(d2)["unsafe"]) == (0.002, [1])
    assert (from_json(to_json(d2)).floor, from_json(to_json(d2)).unsafe) == (0.002, (1,))
