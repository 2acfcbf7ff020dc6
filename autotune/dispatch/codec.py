"""A dispatch as plain JSON values, and back: what a deployment bundle carries, so that a shape
nobody tuned gets there the config ``lookup`` gives it (:func:`to_json`, :func:`from_json`).

Only what :meth:`~autotune.dispatch.fit.Dispatch.pick` reads travels, with each config's time at
each tuned shape for the notes: floats as JSON numbers (Python's shortest repr, read back to the
very same doubles), so the rule runs on the numbers it was fit with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from autotune.dispatch.fit import Dispatch
from autotune.dispatch.tree import Node
from autotune.kernel.config import Config

__all__ = ["to_json", "from_json"]


def to_json(d: Dispatch) -> dict[str, Any]:
    """``d`` as a JSON-ready dict (``inf`` times, of failed configs, as ``null``); ``floor`` and
    ``unsafe`` only where they are not their defaults (0 and none), so a dispatch fit without them
    is written as before they existed, byte for byte."""
    doc = {"kernel": d.kernel, "dims": list(d.dims), "kind": d.kind, "k": d.k, "eps": d.eps, "margin": d.margin,
            "shapes": [list(s) for s in d.shapes], "configs": [c.as_dict() for c in d.configs],
            "regrets": [list(r) for r in d.regrets],
            "times": [[None if t is None or math.isinf(t) else t for t in row] for row in d.times],
            "nodes": [{"coef": list(n.coef), "threshold": n.threshold, "left": n.left, "right": n.right,
                       "config": n.config, "uncertain": n.uncertain} for n in d.nodes]}
    if d.floor:
        doc["floor"] = d.floor
    if d.unsafe:
        doc["unsafe"] = list(d.unsafe)
    return doc


def from_json(doc: Mapping[str, Any]) -> Dispatch:
    """The Dispatch of :func:`to_json`'s dict.

    Raises:
        KeyError, TypeError, ValueError: a field missing, of the wrong type, or out of range
            (a config or node index outside the tables, a rule not known).
    """
    dims = tuple(str(n) for n in doc["dims"])
    shapes = tuple(tuple(_int(v) for v in s) for s in doc["shapes"])
    kernel = str(doc["kernel"])
    configs = tuple(Config.of(kernel, {str(k): _int(v) for k, v in c.items()}) for c in doc["configs"])
    regrets = tuple(tuple(float(v) for v in row) for row in doc["regrets"])
    times = tuple(tuple(None if v is None else float(v) for v in row) for row in doc.get("times", ()))
    nodes = tuple(Node(tuple(_int(c) for c in n["coef"]), float(n["threshold"]), _int(n["left"]), _int(n["right"]),
                       _int(n["config"]), bool(n.get("uncertain", False))) for n in doc.get("nodes", ()))
    kind = str(doc["kind"])
    if kind not in ("knn", "tree", "nearest") or (kind == "tree" and not nodes):
        raise ValueError(f"dispatch rule {kind!r}; allowed: knn, tree (with nodes), nearest")
    if any(len(s) != len(dims) for s in shapes) or len(regrets) != len(shapes) or any(
            len(r) != len(configs) for r in regrets) or not configs:
        raise ValueError("dispatch tables of mismatched sizes")
    unsafe = tuple(_int(s) for s in doc.get("unsafe", ()))  # absent in bundles written before it existed
    if any(not 0 <= s < len(shapes) for s in unsafe):
        raise ValueError("dispatch unsafe shapes out of range")
    if any(not (0 <= n.config < len(configs) if n.leaf else i < n.left < len(nodes) and i < n.right < len(nodes)
                and len(n.coef) == len(dims)) for i, n in enumerate(nodes)):  # children after their parent
        raise ValueError("dispatch tree nodes out of range")
    return Dispatch(kernel, dims, shapes, configs, regrets, times or tuple((None,) * len(configs) for _ in shapes),
                    _int(doc["k"]), float(doc["eps"]), float(doc["margin"]), kind=kind, nodes=nodes,
                    floor=float(doc.get("floor", 0.0)), unsafe=unsafe)


def _int(v: Any) -> int:
    if type(v) is not int:
        raise TypeError(f"{v!r} is not an integer")
    return v
