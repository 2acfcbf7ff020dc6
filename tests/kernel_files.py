"""Writing kernel files in tests: a kernel file's document (a dict shaped like the TOML) as TOML."""

from __future__ import annotations

import json


def toml(doc: dict) -> str:
    """``doc`` as TOML: scalars first, then tables, arrays of tables and sub-tables."""
    def value(v):
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return ("true" if v else "false") if isinstance(v, bool) else json.dumps(v)

    def table(name, t):
        lines = [f"[{name}]"] + [f"{k} = {value(v)}" for k, v in t.items() if not isinstance(v, dict)]
        return lines + [line for k, v in t.items() if isinstance(v, dict) for line in table(f"{name}.{k}", v)]

    lines = [f"{k} = {value(v)}" for k, v in doc.items() if not isinstance(v, dict)
             and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += table(k, v)
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                lines += [f"[[{k}]]"] + [f"{a} = {value(b)}" for a, b in item.items()]
    return "\n".join(lines) + "\n"


def catalog_doc(name: str) -> dict:
    """The document of catalog kernel ``name`` (``kernels/<name>.toml``) with its source as an
    absolute path and its space inline, so that it can be written anywhere under any name."""
    import tomllib

    from autotune.resources import data_dir

    folder = data_dir("kernels").resolve()
    doc = tomllib.loads((folder / f"{name}.toml").read_text())
    doc["source"] = str(folder / doc["source"])
    if "file" in doc["space"]:  # the space inline: a space file names its kernel
        space = tomllib.loads((folder / doc["space"].pop("file")).read_text())
        doc["space"] = {"params": space["params"], "constraints": space.get("constraints", []), **doc["space"]}
    return doc


def write_kernel(path, doc: dict):
    """Write ``doc`` to ``path`` (a ``pathlib.Path``) as a kernel file; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(toml(doc))
    return path


def copy_catalog_kernel(folder, catalog_name: str, name: str, *, edit_source: bool = False):
    """Catalog kernel ``catalog_name`` as the kernel file ``folder/<name>.toml`` of kernel
    ``name`` (``folder`` a ``pathlib.Path``); with ``edit_source``, its source changed (a line
    added before an include of the catalog's source). Returns the kernel file's path."""
    from pathlib import Path

    doc = {**catalog_doc(catalog_name), "name": name}
    if edit_source:
        source = Path(folder) / f"{name}_edited.cu"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"// edited since it was tuned\n#include \"{doc['source']}\"\n")
        doc["source"] = str(source)
    return write_kernel(Path(folder) / f"{name}.toml", doc)
