"""The identity of a stored problem (``autotune.kernel.problem.ProblemKey``), which every stored
record composes, and its one resolving rule (``ProblemKey.resolve``), which the plan, the
tuning, the bundle's export and ``autotune bundle`` share: a kernel changed since it was stored
is said, with both hashes."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from autotune.kernel.catalog import get_kernel
from autotune.kernel.problem import Problem, ProblemKey


def _stored(**change) -> ProblemKey:
    k = get_kernel("smem_vec")
    return dataclasses.replace(ProblemKey(k.name, k.source_hash, k.spec_hash, (("rows", 100), ("cols", 64)),
                                          "float32", k.name), **change)


def test_a_stored_problem_resolves_to_todays_kernel_and_says_what_changed():
    k = get_kernel("smem_vec")
    same = _stored().resolve()
    assert same.problem is not None and same.problem.kernel.name == "smem_vec" and same.changed == ""
    source = _stored(source_hash="ab" * 32).resolve()
    assert source.problem is not None and source.changed == f"source {'ab' * 6} recorded, {k.source_hash[:12]} now"
    spec = _stored(spec_hash="cd" * 32).resolve()
    assert spec.changed == f"description {'cd' * 6} recorded, {k.spec_hash[:12]} now"


def test_a_stored_problem_whose_kernel_cannot_be_found_says_why():
    python_built = _stored(kernel="mine", kernel_ref="").resolve()
    assert python_built.problem is None and "built in Python" in python_built.why
    renamed = _stored(kernel="old_name").resolve()
    assert renamed.problem is None and renamed.why == "smem_vec is now kernel smem_vec, not old_name"
    gone = _stored(kernel_ref="/no/such/kernel.toml").resolve()
    assert gone.problem is None and gone.why.startswith("its kernel cannot be loaded: ")


def test_the_kernel_file_is_resolved_and_compared_where_one_was_stored(tmp_path):
    from autotune.kernel.catalog import resolve_kernel
    from kernel_files import copy_catalog_kernel

    path = copy_catalog_kernel(tmp_path / "then", "smem_vec", "key_vec")
    then = resolve_kernel(str(path))
    stored = _stored(kernel="key_vec", source_hash=then.source_hash, spec_hash=then.spec_hash, kernel_ref=str(path))
    found = stored.resolve()
    assert found.problem is not None and found.kernel is then and found.changed == ""
    edited = copy_catalog_kernel(tmp_path / "now", "smem_vec", "key_vec2", edit_source=True)
    found = replace(stored, kernel="key_vec2", kernel_ref=str(edited)).resolve()
    assert found.problem is not None and found.changed.startswith(f"source {then.source_hash[:12]} recorded, ")


def test_the_key_of_a_problem_and_what_it_is_equal_by():
    p = Problem.of("smem_vec", (100, 64), "float32")
    key = ProblemKey.of(p)
    assert key == _stored() and key.kernel_ref == "smem_vec" and key.label == "smem_vec 100x64 float32"
    assert key.ident == ("smem_vec", p.dims, "float32") and key.display == "100x64"
    assert dataclasses.replace(key, kernel_ref="/elsewhere.toml") == key  # where it is found is not its identity
    assert hash(dataclasses.replace(key, kernel_ref="")) == hash(key)
    assert key.at((("rows", 8), ("cols", 8))).dims == (("rows", 8), ("cols", 8))


@pytest.mark.parametrize("dims", [(), (("n", 5.0),), (("n", True),), {"n": 5}, ((5, "n"),), [("n", 5)]])
def test_a_problem_key_refuses_malformed_dims(dims):
    with pytest.raises(ValueError, match="dims must be"):
        ProblemKey("k", "a" * 64, "b" * 64, dims, "float32")


def test_a_record_reads_its_problem_keys_fields_and_cannot_set_them():
    from autotune.store.workload_records import ProblemResult

    stored = _stored()
    result = ProblemResult(stored, status="tuned")
    assert (result.kernel, result.source_hash, result.spec_hash, result.dims, result.dtype, result.kernel_ref) == (
        stored.kernel, stored.source_hash, stored.spec_hash, stored.dims, stored.dtype, stored.kernel_ref)
    assert result.label == stored.label and result.ident == stored.ident and result.shape == (100, 64)
    with pytest.raises(AttributeError, match="kernel is read through problem_key; it cannot be set"):
        result.kernel = "other"  # type: ignore[misc]
    result.status = "failed"  # its own fields stay as they were: mutable
    assert result.status == "failed" and result.kernel == "smem_vec"
