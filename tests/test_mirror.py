"""Tests mirror the package (docs/architecture.md, "Where the tests live"), asserted over tests/.

A test file of one module sits at the module's mirror: ``autotune/dispatch/fit.py`` is tested
in ``tests/dispatch/test_fit.py``, ``autotune/errors.py`` in ``tests/test_errors.py``. Its name
is ``test_<module>.py`` or ``test_<module>_<aspect>.py`` for a module of the folder it is in. A
test file spanning several modules (the command line end to end, the docs, the floors, the
packaging, the example applications, the benchmarks' scripts) is named in :data:`CROSS_CUTTING`
instead. ``tests/gpu/`` (the ``gpu``-marked tests) is not checked. Helpers (any ``.py`` not named
``test_*``, bar ``conftest.py``) live at tests/ top level (or in tests/gpu/): pyproject.toml's
``pythonpath = ["tests"]`` is what makes them importable by name from every folder.

Every test file's basename is unique under tests/: pytest's default import mode imports a test
file of a folder without ``__init__.py`` by its basename, and refuses a second of the same name.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autotune"
TESTS = ROOT / "tests"
UNCHECKED = ("gpu",)  # folders of tests/ the rule leaves alone

CROSS_CUTTING = {  # test files (relative to tests/) that span several modules
    "test_app_tuning_benchmark.py",  # benchmarks/app_tuning.py on the fake application
    "test_certify_regret_benchmark.py",  # benchmarks/certify_regret.py
    "test_dispatch_regret_benchmark.py",  # benchmarks/dispatch_regret.py on its fake landscape
    "test_energy_front_benchmark.py",  # benchmarks/energy_front.py
    "test_benchmarks.py",  # benchmarks/: the maintained scripts, the archive, the paths the docs name
    "test_benchmark_spaces.py",  # benchmarks/spaces, benchmarks/kernels, archive/flags_vs_macros.py, archive/search_replay_compare.py
    "test_cli.py",  # the command line end to end (search, best, list, info, db)
    "test_cli_errors.py",  # every kind of bad input of every command
    "test_concurrency.py",  # processes searching into one database, one killed
    "test_cuda_on_cpu.py",  # the tests' own CUDA-on-the-CPU harness (tests/cuda_on_cpu.py)
    "test_docs_examples.py",  # every console block of the docs runs
    "test_docs_site.py",  # the API reference renders
    "test_example_app.py",  # examples/app/
    "test_faults.py",  # every command against a database that fails
    "test_gpu_tiers.py",  # the GPU tests' two tiers (tests/gpu/)
    "test_fresh_install.py",  # a new user's first commands, from a wheel, in an empty home
    "test_histogram_emulated.py",  # examples/histogram/ on the CPU
    "test_layers.py",  # the floors of docs/architecture.md
    "test_matmul_cli.py",  # matrix products through CLI, search, store, lookup, export
    "test_mirror.py",  # this rule
    "test_packaging.py",  # the distribution
    "test_public_api.py",  # autotune/__init__.py as editors and type checkers see it
    "store/test_postgres.py",  # a PostgreSQL server: migrations, the CLI, lookup
}


def modules(folder: Path) -> list[str]:
    """The module names (no ``.py``) of one folder of the package, ``__init__`` and
    ``__main__`` left out, private modules (``_common``) with their underscore."""
    return sorted(p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__"))


def packages() -> list[Path]:
    """Every folder of the package holding an ``__init__.py`` (``autotune/`` itself first),
    relative to ``autotune/``: the folders tests/ mirrors."""
    return sorted((p.parent.relative_to(PACKAGE) for p in PACKAGE.rglob("__init__.py")),
                  key=lambda p: (len(p.parts), p.parts))


def module_tested(folder: Path, stem: str) -> str | None:
    """The module of ``autotune/<folder>/`` that a test file named ``stem`` (``test_reader``,
    ``test_repository_user_kernel``) tests: ``test_<module>`` or ``test_<module>_<aspect>``, the
    longest such module; None where none is."""
    name = stem.removeprefix("test_")
    found = [m for m in modules(PACKAGE / folder) if name == m or name.startswith(m + "_")]
    return max(found, key=len, default=None)


def _place(folder: Path, module: str, stem: str, path: Path | None = None) -> str:
    mirror = Path("tests") / folder / f"{stem}.py"
    place = f"{mirror} (for {Path('autotune') / folder / module}.py"
    # pytest refuses a second test file of one basename (module doc)
    taken = sorted(p.relative_to(ROOT).as_posix() for p in TESTS.rglob(mirror.name) if p != path)
    if taken:
        place += f"; {taken[0]} has that name: add the tests to it if they are its module's, else name yours {stem}_<aspect>.py"
    return place + ")"


def _singular(word: str) -> str:
    return word[:-3] + "y" if word.endswith("ies") else word.removesuffix("s")


def expected_places(stem: str, path: Path | None = None) -> list[str]:
    """Where a test file named ``stem`` would mirror a module: every package with a module that
    the name starts with, tried also without a leading folder name (``test_store_reader`` ->
    ``tests/store/test_reader.py``, ``test_runtime_views`` -> ``tests/runtime/transpose/test_views.py``);
    failing that, the modules whose name is a word of it, and the folders named by a word of it
    (``test_strategy_grid`` -> ``tests/search/strategies/test_<module>_grid.py``)."""
    name = stem.removeprefix("test_")
    places = []
    for folder in packages():
        for candidate in {name, *(name.removeprefix(part + "_") for part in folder.parts
                                 if name.startswith(part + "_"))}:
            module = module_tested(folder, "test_" + candidate)
            if module is not None:
                places.append(_place(folder, module, "test_" + candidate, path))
    if not places:
        words = name.split("_")
        for folder in packages():
            for module in modules(PACKAGE / folder):
                if module in words:
                    places.append(_place(folder, module, f"test_{module}_" + "_".join(w for w in words if w != module), path))
            if folder.parts and _singular(folder.parts[-1]) in map(_singular, words):
                rest = "_".join(w for w in words if _singular(w) != _singular(folder.parts[-1]))
                places.append(f"tests/{folder.as_posix()}/test_<module>_{rest}.py (for the module of "
                              f"autotune/{folder.as_posix()}/ it tests)")
    return sorted(set(places))


def problem(path: Path) -> str | None:
    """What is wrong with one test file under tests/ (outside :data:`UNCHECKED`), as one message
    naming the file and where it should go; None where it mirrors a module or is cross-cutting."""
    rel = path.relative_to(TESTS)
    if rel.as_posix() in CROSS_CUTTING:
        return None
    folder = rel.parent
    if (PACKAGE / folder / "__init__.py").is_file() and module_tested(folder, path.stem):
        return None
    places = expected_places(path.stem, path)
    where = (f"move it to {places[0]}" if len(places) == 1
             else "move it to the mirror of the module it tests, one of: " + "; ".join(places) if places
             else "move it beside the module it tests, as tests/<package>/test_<module>.py or "
                  "test_<module>_<aspect>.py")
    if not (PACKAGE / folder / "__init__.py").is_file():
        why = f"autotune/{folder.as_posix()}/ is no package"
    elif folder.parts:
        why = f"autotune/{folder.as_posix()}/ has no module its name starts with"
    else:
        why = "autotune/ has no top-level module its name starts with"
    return (f"tests/{rel.as_posix()}: {why}; {where} (git mv), or, if it spans several modules, "
            "name it in CROSS_CUTTING of tests/test_mirror.py")


def checked_files() -> list[Path]:
    """Every ``test_*.py`` under tests/ but the :data:`UNCHECKED` folders."""
    return sorted(p for p in TESTS.rglob("test_*.py") if p.relative_to(TESTS).parts[0] not in UNCHECKED)


def test_every_test_file_mirrors_a_module_of_the_package():
    problems = [message for path in checked_files() if (message := problem(path))]
    assert not problems, "\n".join(problems)


def test_every_cross_cutting_file_exists():
    missing = sorted(name for name in CROSS_CUTTING if not (TESTS / name).is_file())
    assert not missing, f"named in CROSS_CUTTING of tests/test_mirror.py but not there: {missing}"


def test_every_test_file_has_a_basename_of_its_own():
    seen: dict[str, list[str]] = {}
    for path in TESTS.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(path.relative_to(ROOT).as_posix())
    twice = {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}
    assert not twice, (f"test files of one basename: {twice}; pytest imports each by its basename: "
                       "name one test_<module>_<aspect>.py")


def test_helpers_live_at_the_top_of_tests():
    """A helper elsewhere than tests/ (or tests/gpu/) would import only from its own folder."""
    misplaced = sorted(p.relative_to(ROOT).as_posix() for p in TESTS.rglob("*.py")
                       if not p.name.startswith("test_") and p.name != "conftest.py"
                       and p.parent != TESTS and p.relative_to(TESTS).parts[0] not in UNCHECKED)
    assert not misplaced, f"helpers below tests/: {misplaced}; move them to tests/ (pythonpath)"
    assert not list(TESTS.rglob("__init__.py")), "tests/ holds no __init__.py (one import mode for all)"


def _paths(places: list[str]) -> list[str]:
    return [place.split(" (")[0] for place in places]


def test_the_rule_names_where_a_flat_test_file_goes():
    """A file added flat (as on a branch made before the move) gets the place it should go, and
    is told of a test file of that name already there."""
    assert _paths(expected_places("test_store_reader")) == ["tests/store/test_reader.py"]
    assert _paths(expected_places("test_runtime_views")) == ["tests/runtime/transpose/test_views.py"]
    assert expected_places("test_errors") == ["tests/test_errors.py (for autotune/errors.py)"]
    assert expected_places("test_tuner_batches_more") == [
        "tests/search/test_tuner_batches_more.py (for autotune/search/tuner.py)"]
    bundle = expected_places("test_bundle")  # two modules of that name; the test file of one exists
    assert _paths(bundle) == ["tests/report/test_bundle.py", "tests/runtime/test_bundle.py"]
    assert all("tests/runtime/test_bundle.py has that name" in place for place in bundle)
    assert expected_places("test_strategy_grid") == [
        "tests/search/strategies/test_<module>_grid.py (for the module of autotune/search/strategies/ it tests)"]
    message = problem(TESTS / "test_tuner_batches_more.py")
    assert message.startswith("tests/test_tuner_batches_more.py: autotune/ has no top-level module")
    assert "move it to tests/search/test_tuner_batches_more.py (for autotune/search/tuner.py)" in message
    message = problem(TESTS / "kernel" / "test_nothing_here.py")
    assert message.startswith("tests/kernel/test_nothing_here.py: autotune/kernel/ has no module")
    assert "CROSS_CUTTING" in message
    assert problem(TESTS / "store" / "test_repository_user_kernel.py") is None
    assert problem(TESTS / "search" / "strategies" / "test_traits.py") is None
    assert problem(TESTS / "test_layers.py") is None
