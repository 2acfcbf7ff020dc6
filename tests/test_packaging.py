"""Packaging: one version source, the distribution name, the licence, the install message."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import autotune
from autotune.errors import GPUUnavailableError

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_has_one_source_read_by_hatch():
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    path = ROOT / PYPROJECT["tool"]["hatch"]["version"]["path"]
    # hatch's default pattern: a line `__version__ = "..."` in that file
    found = re.findall(r'^__version__\s*=\s*"([^"]+)"', path.read_text(), re.M)
    assert found == [autotune.__version__]
    assert re.fullmatch(r"\d+\.\d+\.\d+", autotune.__version__)


def test_changelog_names_the_version():
    assert f"## {autotune.__version__}" in (ROOT / "CHANGELOG.md").read_text()


def test_distribution_name_and_licence():
    assert PYPROJECT["project"]["name"] == "cuda-autotune"
    assert PYPROJECT["project"]["license"] == "MIT"
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("MIT License") and "the autotune authors" in licence
    # the extras refer to the package by its own distribution name
    assert "cuda-autotune[postgres]" in PYPROJECT["project"]["optional-dependencies"]["test"]


def test_no_message_or_doc_names_the_other_projects_install():
    """`pip install autotune...` installs another project (autotune 0.0.3, 2018)."""
    files = [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "autotune").rglob("*.py"),
             *(ROOT / "benchmarks").glob("*.md")]
    bad = [str(f.relative_to(ROOT)) for f in files
           if re.search(r"pip install '?autotune\[", f.read_text())]
    assert bad == []
    assert "pip install 'cuda-autotune[cuda]'" in GPUUnavailableError.__doc__


def test_the_gpu_extra_installs_wheels_only_and_pycuda_has_its_own():
    """``[cuda]``: NVIDIA's cuda-bindings and nvidia-ml-py, both published as wheels (no build on
    the user's machine, no CUDA headers); PyCUDA (a source distribution) only in ``[pycuda]``.
    The backends' registry names the same extras in its install hints."""
    from autotune.measure import backends

    extras = PYPROJECT["project"]["optional-dependencies"]
    names = lambda extra: sorted(re.split(r"[<>=\[ ]", r, maxsplit=1)[0] for r in extras[extra])  # noqa: E731
    assert names("cuda") == ["cuda-bindings", "nvidia-ml-py"]
    assert names("pycuda") == ["nvidia-ml-py", "pycuda"]
    hints = {name: install for name, (_, _, install) in backends._FACTORIES.items()}
    assert hints == {"cuda-bindings": "pip install 'cuda-autotune[cuda]'", "pycuda": "pip install 'cuda-autotune[pycuda]'"}
