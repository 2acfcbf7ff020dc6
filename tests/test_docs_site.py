"""The API reference renders cleanly: no Sphinx roles left as literal text, and none of the
defects issue 39 found (a Returns row named "The", grouped names shown as one parameter or
attribute, a dict repr for a constant).

Two tests: one reads the docstrings the API page renders (``::: path`` lines of
docs/reference/api.md) straight from the source, with ``ast``, and runs everywhere; the other
builds the site with MkDocs and reads its HTML, where MkDocs is installed (the ``docs`` extra;
.ci/run's ``mkdocs build --strict`` is the gate where it is not).
"""

from __future__ import annotations

import ast
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "reference" / "api.md"
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|ref|const):`")
GROUPED = re.compile(r"^\s{4,8}(\w+(?:, \w+)+):", re.M)  # "top_k, rounds: ..." in Args/Attributes


def _rendered() -> list[str]:
    """Dotted paths of the objects the API page renders (``::: autotune.x.y.name``)."""
    return re.findall(r"^::: (autotune(?:\.\w+)+)\s*$", API.read_text(), re.M)


def _source(dotted: str) -> tuple[Path, list[str]]:
    """The module file of ``dotted`` and the object's path inside it."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        base = ROOT.joinpath(*parts[:i])
        for file in (base.with_suffix(".py"), base / "__init__.py"):
            if file.is_file():
                return file, parts[i:]
    raise AssertionError(f"{dotted}: no module file")


def _docstrings(body: list[ast.stmt], path: list[str], where: str):
    """``(where, docstring)`` of the object at ``path`` in ``body`` and of all it holds
    (methods, nested classes, attribute docstrings), as mkdocstrings renders them. An object
    defined elsewhere and imported here (a re-export) is followed to its module."""
    name, rest = path[0], path[1:]
    for i, node in enumerate(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            if rest:
                yield from _docstrings(node.body, rest, f"{where}.{name}")
                return
            yield from _all_in(node, f"{where}.{name}")
            return
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and not rest:
            nxt = body[i + 1] if i + 1 < len(body) else None
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                yield f"{where}.{name}", nxt.value.value
            return
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            file, inner = _source(f"{node.module}.{name}")
            yield from _docstrings(ast.parse(file.read_text()).body, inner + rest, node.module)
            return
    raise AssertionError(f"{where}.{name}: not found in its module")


def _all_in(node: ast.AST, where: str):
    doc = ast.get_docstring(node, clean=False)
    if doc:
        yield where, doc
    if isinstance(node, ast.ClassDef):
        for i, child in enumerate(node.body):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _all_in(child, f"{where}.{child.name}")
            elif (isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant)
                  and isinstance(child.value.value, str) and i > 0):
                yield f"{where}.<attribute>", child.value.value


def _api_docstrings() -> list[tuple[str, str]]:
    found = []
    for dotted in _rendered():
        file, inner = _source(dotted)
        module = ".".join(file.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found += list(_docstrings(ast.parse(file.read_text()).body, inner, module))
    return found


def test_the_api_page_renders_what_it_should():
    rendered = _rendered()
    assert "autotune.search.tune.tune" in rendered and "autotune.search.options.SearchOptions" in rendered
    docs = dict(_api_docstrings())
    assert "autotune.search.strategies.registry.STRATEGIES" in docs  # followed through the re-export
    assert "autotune.kernel.model.Kernel.check_dtype" in docs  # a member of a rendered class


def test_rendered_docstrings_hold_no_sphinx_roles():
    """mkdocstrings reads Google-style docstrings as Markdown: ``:class:`X``` stays literal text.
    A cross-reference is a public name in single backticks, `` `X` ``, which the site links
    (docs/_hooks/plain_crossrefs.py)."""
    bad = [f"{where}: {m.group(0)}{doc[m.end():m.end() + 40].split(chr(96))[0]}`"
           for where, doc in _api_docstrings() for m in ROLE.finditer(doc)]
    assert bad == []


def test_rendered_docstrings_name_one_parameter_or_attribute_per_row():
    """``top_k, rounds: ...`` renders as an attribute "top_k," of type "rounds", and a
    parameter row the signature does not have (shown as required)."""
    bad = [f"{where}: {m.group(1)}" for where, doc in _api_docstrings() for m in GROUPED.finditer(doc)
           if re.search(r"^\s*(Args|Attributes|Parameters):", doc[:m.start()], re.M)]
    assert bad == []


def _returns_sections(doc: str) -> list[list[str]]:
    """The lines of each ``Returns:`` section of a docstring (up to a blank line)."""
    found = []
    for m in re.finditer(r"^( *)Returns:\n((?:\1 +\S.*\n?)+)", doc, re.M):
        found.append(m.group(2).rstrip("\n").split("\n"))
    return found


def test_rendered_returns_sections_are_one_value_without_a_name():
    """Google style reads ``Returns:`` items as ``name: description``: a colon in the first
    line named tune's return value "The"; a later line at the first one's indent starts
    another item (lookup's Returns was four rows)."""
    bad = []
    for where, doc in _api_docstrings():
        for lines in _returns_sections(doc):
            first = re.sub(r"``[^`]*``|`[^`]*`|\[[^\]]*\]", "", lines[0])
            indent = len(lines[0]) - len(lines[0].lstrip())
            if ":" in first or any(len(line) - len(line.lstrip()) <= indent for line in lines[1:]):
                bad.append(f"{where}: {lines}")
    assert bad == []
    assert _returns_sections("    Returns:\n        The :class:`X`.\n") == [["        The :class:`X`."]]


def test_sphinx_role_pattern_catches_what_it_should():
    assert ROLE.search("a :class:`~autotune.kernel.model.Kernel`") and ROLE.search(":func:`x`")
    assert not ROLE.search("[`Kernel`][autotune.kernel.model.Kernel] or ``Kernel``")
    assert GROUPED.search("Attributes:\n        top_k, rounds: the fastest configs")


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_built_site_has_no_literal_sphinx_roles(site: Path):
    pages = [*site.rglob("*.html"), site / "search" / "search_index.json"]
    literal = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):(?:<code>|`)")
    bad = [f"{p.relative_to(site)}: {m.group(0)}" for p in pages for m in literal.finditer(p.read_text())]
    assert bad == []


def test_built_api_page_has_none_of_the_defects_issue_39_found(site: Path):
    page = (site / "reference" / "api" / "index.html").read_text()

    def section(anchor: str) -> str:
        start = page.index(f'id="{anchor}"')
        nxt = re.search(r'<div class="doc doc-object doc-(?:function|class|attribute)">', page[start + 1:])
        return page[start:start + 1 + nxt.start()] if nxt else page[start:]

    tune = section("autotune.search.tune.tune")
    returns = _text(tune[tune.index("Returns:"):tune.index("Raises:")])
    assert "The search's SearchResult" in returns and not re.search(r"Name\s+Type", returns)
    for callback in ("on_start", "on_trial", "on_report"):  # each its own row, default None
        row = re.search(rf"<tr[^>]*>\s*<td>\s*<code>{callback}</code>\s*</td>.*?</tr>", tune, re.S)
        assert row and "required" not in _text(row.group(0)) and _text(row.group(0)).endswith("None"), callback
    options = _text(section("autotune.search.options.SearchOptions"))
    assert "top_k," not in options and "top_k" in options and "rounds" in options
    strategies = _text(section("autotune.search.strategies.STRATEGIES"))
    assert "Strategy name" in strategies and "{'tpe'" not in strategies and "<function" not in strategies
    assert 'href="#autotune.kernel.model.Kernel"' in tune  # a cross-link that resolves on the page


def test_built_api_page_links_the_plain_backticked_names_of_docstrings(site: Path):
    """Issue 49: docstrings say `` `LaunchConfig` `` (``help()`` shows no markup); the page links
    it, and a member of a rendered class by ``Class.member``."""
    page = (site / "reference" / "api" / "index.html").read_text()
    lookup = page[page.index('id="autotune.runtime.lookup.lookup"'):page.index('id="autotune.runtime.lookup.LaunchConfig"')]
    assert 'href="#autotune.runtime.lookup.LaunchConfig"' in lookup
    assert 'href="#autotune.search.options.SearchOptions.replace"' in page
    assert "][autotune." not in page


def test_plain_crossrefs_links_only_known_names_in_single_backticks():
    pytest.importorskip("griffe")
    sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
    try:
        import plain_crossrefs
    finally:
        sys.path.remove(str(ROOT / "docs" / "_hooks"))
    targets = {"LaunchConfig": "autotune.runtime.lookup.LaunchConfig", "SearchOptions.replace": "x.SearchOptions.replace"}
    doc = "A `LaunchConfig`, ``LaunchConfig``, `other`, [`LaunchConfig`][y] and `SearchOptions.replace`."
    assert plain_crossrefs.link(doc, targets) == (
        "A [`LaunchConfig`][autotune.runtime.lookup.LaunchConfig], ``LaunchConfig``, `other`, "
        "[`LaunchConfig`][y] and [`SearchOptions.replace`][x.SearchOptions.replace].")
    assert "autotune.runtime.lookup.LaunchConfig" in plain_crossrefs.rendered()


def test_built_site_highlights_at_build_time_and_loads_nothing_from_elsewhere(site: Path):
    tutorial = (site / "tutorial" / "index.html").read_text()
    assert '<span class="' in tutorial.split('class="language-toml highlight"', 1)[1][:2000]  # Pygments' spans
    remote = re.compile(r"""(?:src|href)=["'](?:https?:)?//[^"']+\.(?:js|css)|fonts\.googleapis""")
    for page in site.rglob("*.html"):
        assert not remote.search(page.read_text()), page
    index = json.loads((site / "search" / "search_index.json").read_text())
    assert any(doc["location"].startswith("tutorial/#") for doc in index["docs"])  # steps are headings
