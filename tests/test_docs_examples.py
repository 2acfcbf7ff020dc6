"""Every CLI example of the docs runs: fenced ``console`` blocks of README.md, docs/ and
benchmarks/README.md.

A ``console`` block holds commands (``$ autotune ...``) and, below each, what it prints. A
runnable block's commands run in order (``python -m autotune``) against a fresh database of
the test (``AUTOTUNE_DB``, set by tests/conftest.py), from the repository root; each must exit
0, and every line of shown output without a digit (timings and counts vary) must be printed.
An HTML comment on the line before a block marks it:

- ``<!-- example: gpu -->``: needs a GPU; a ``gpu_slow`` test (the slower GPU tier; skipped without one);
- ``<!-- example: exit N -->``: its last command exits N;
- ``<!-- example: skip (why) -->``: never run (e.g. several machines); the reason is required.

An ``autotune`` command in any other code block fails the test: examples belong in ``console``
blocks, so that none escapes this test. The README's test command must be the one `.ci/run`
runs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import autotune

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md",
                *(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)])
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARK = re.compile(r"<!--\s*example:\s*(gpu|exit (\d+)|skip \((.+)\))\s*-->\s*\n$")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    body: str
    mark: str | None
    exit_code: int

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) != "console":
                continue
            before = text[:m.start()]
            mark = MARK.search(before[-200:])
            kind = None if mark is None else mark.group(1).split(" ")[0]
            found.append(Example(str(page.relative_to(ROOT)), before.count("\n") + 1, m.group(2), kind,
                                 int(mark.group(2)) if mark and mark.group(2) else 0))
    return found


EXAMPLES = _examples()


def _params():
    for ex in EXAMPLES:
        if ex.mark == "skip":
            continue
        yield pytest.param(ex, id=ex.id, marks=[pytest.mark.gpu_slow] if ex.mark == "gpu" else [])


def _commands(body: str) -> list[tuple[str, list[str]]]:
    """``(command, shown output lines)`` of a console block."""
    out: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


@pytest.mark.parametrize("example", list(_params()))
@pytest.mark.usefixtures("shared_cubins")  # builds only: the run's one cubin cache
def test_cli_example_runs(example: Example):
    commands = _commands(example.body)
    assert commands, f"{example.id}: a console block without a `$ ` command"
    env = {**os.environ, "COLUMNS": "200"}
    for i, (command, shown) in enumerate(commands):
        argv = shlex.split(command)
        assert argv[0] == "autotune", f"{example.id}: {command!r} is not an autotune command"
        done = subprocess.run([sys.executable, "-m", "autotune", *argv[1:]], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        printed = done.stdout + done.stderr
        expected = example.exit_code if i == len(commands) - 1 else 0
        assert done.returncode == expected, f"{example.id}: {command!r} exited {done.returncode}:\n{printed}"
        lines = {" ".join(line.split()) for line in printed.splitlines()}
        for line in shown:
            if line.strip() and not re.search(r"\d", line):
                assert " ".join(line.split()) in lines, f"{example.id}: {command!r} did not print {line!r}:\n{printed}"


def test_examples_are_found_and_skips_say_why():
    assert any(ex.mark is None for ex in EXAMPLES) and any(ex.mark == "gpu" for ex in EXAMPLES)
    for ex in EXAMPLES:
        if ex.mark == "skip":
            assert "$ autotune" in ex.body


def test_no_autotune_command_outside_console_blocks():
    """An example in an indented or other fenced block would escape the test above."""
    stray = []
    for page in PAGES:
        text = page.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) != "console" and re.search(r"^\$? ?autotune ", m.group(2), re.M):
                stray.append(f"{page.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}")
        unfenced = FENCE.sub("", text)
        for n, line in enumerate(unfenced.splitlines(), 1):
            if re.match(r"( {4,}|\t)(\$ )?autotune ", line):
                stray.append(f"{page.relative_to(ROOT)}: {line.strip()}")
    assert stray == []


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip() for line in section.splitlines() if line.startswith("    python -m pip")]
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines(), f".ci/run does not run the README's test command {commands[1]!r}"


def test_api_page_documents_every_public_name():
    api = (ROOT / "docs" / "reference" / "api.md").read_text()
    missing = [name for name, module in autotune._NAMES.items() if f"::: {module}.{name}\n" not in api]
    assert missing == []
    assert "__version__" in api


def test_readme_and_benchmark_links_resolve():
    """MkDocs checks the links of docs/ (--strict); these two pages are outside it."""
    broken = []
    for page in (ROOT / "README.md", ROOT / "benchmarks" / "README.md"):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_readme_fits_on_a_screen_or_two():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
