"""autotune.store.queries: every read in one home. The Store's reads are its (the Store inherits
them), and outside the store only its readers open a database session: the interchange reads
and writes through the Store, never through a session or a model of its own."""

from __future__ import annotations

import ast
from pathlib import Path

from autotune.store import queries, repository

PACKAGE = Path(queries.__file__).resolve().parent.parent
SESSION_HOLDERS = {"store/repository.py", "store/queries.py", "store/workloads.py"}
"""The modules that open a session (``store.session()``): the writes, the reads, and the recorded
workloads' (a workload module of their own, kept there for now)."""


def _opens_a_session(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "session"
               and not n.args for n in ast.walk(tree))


def test_at_most_three_modules_open_a_session():
    holders = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
               if _opens_a_session(ast.parse(path.read_text(), str(path)))}
    assert holders <= SESSION_HOLDERS and len(holders) <= 3


def test_the_interchange_imports_no_model_and_no_sqlalchemy():
    wrong = []
    for path in (PACKAGE / "interchange").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            wrong += [f"{path.name}:{node.lineno}" for n in names
                      if n.split(".")[0] == "sqlalchemy" or n in ("autotune.store.models", "autotune.store.rows")
                      and not (isinstance(node, ast.ImportFrom) and [a.name for a in node.names] == ["TRIAL_STATUSES"])]
    assert wrong == []


def test_the_stores_reads_live_here():
    reads = [name for name, value in vars(queries.Reads).items() if callable(value) and not name.startswith("__")]
    assert {"best", "find_best", "key_trials", "trials", "study_trials", "shape_trials", "kernel_trials",
            "trials_state", "trials_by_key", "study_keys", "pareto_front"} <= set(reads)
    assert issubclass(repository.Store, queries.Reads)
    assert not set(reads) & set(vars(repository.Store))  # none restated in the Store
