"""``autotune info``: where the results database is, and what this installation measures with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from autotune.store.location import masked_url, sqlite_path
from autotune.store.urls import ENV, given_url, resolve_url
from .root import app
from ._common import Db, handle_errors, out
from .output import Format, FormatOption, print_pairs


@app.command(short_help="Copy the examples the README and the tutorials use into a new folder.")
@handle_errors
def examples(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A folder that does not exist yet (its parent must).")]
    = Path("examples"),
) -> None:
    """Copy the examples shipped with autotune (examples/reduction, softmax, histogram, app: the
    kernels and the application the README and the tutorials use) into DIR, a new folder, so that
    a pip install can follow them as written. Nothing is overwritten: an existing DIR is refused.

    \b
    Examples:
      autotune examples
      autotune check examples/reduction/reduce.toml --sample 8
    """
    import shutil

    from autotune.errors import InvalidInputError
    from autotune.resources import data_dir

    source = data_dir("examples")
    if folder.exists() or folder.is_symlink():
        raise InvalidInputError(f"{folder} exists already; give a folder that does not exist (nothing is overwritten)")
    if not folder.absolute().parent.is_dir():
        raise InvalidInputError(f"cannot copy the examples to {folder}: the folder {folder.parent} does not exist")
    temporary = folder.parent / f".{folder.name}.partial"
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        shutil.copytree(source, temporary, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        temporary.rename(folder)  # whole or not at all
    except OSError as exc:
        shutil.rmtree(temporary, ignore_errors=True)
        raise InvalidInputError(f"cannot copy the examples to {folder}: {exc.strerror or exc}") from None
    names = sorted(p.name for p in folder.iterdir() if p.is_dir())
    out.print(f"copied the examples to {folder}: {', '.join(names)}", markup=False)


@app.command(short_help="Where the database is; versions of CUDA, nvcc; the GPUs.")
@handle_errors
def info(db: Db = None, fmt: FormatOption = Format.table) -> None:
    """Print the results database's URL and file, autotune's version and its libraries', the CUDA
    backend (cuda-bindings or PyCUDA), the CUDA driver and runtime, nvcc, and the GPUs. Creates nothing (not the database, not
    its folder); touches the GPU only to list it.

    \b
    Examples:
      autotune info
      autotune info --format json
      optuna-dashboard "$(autotune info --format json | jq -r .database.url)"
    """
    from autotune.measure.installation import describe

    database = _database(db)
    found = describe()
    if fmt is not Format.table:  # CSV has no shape for nested data: JSON for both
        out.print(json.dumps({"database": database, **found.as_dict()}, indent=2), markup=False, soft_wrap=True)
        return
    file = database["file"]
    where = ("" if file is None else
             f" ({'exists' if database['exists'] else 'not created yet: the first search creates it'})")
    pairs = [("database", database["url"] + ("" if file else f"  ({database['source']})"), "/ "),
             *([("file", f"{file}{where}", "/ ")] if file else []),
             ("autotune", f"{found.autotune} (Python {found.python})"),
             ("libraries", ", ".join(f"{k} {v or 'missing'}" for k, v in found.libraries.items())),
             ("backend", f"{found.backend or 'none'} (cuda-bindings {found.cuda_bindings or 'not installed'}, "
                         f"PyCUDA {found.pycuda or 'not installed'}; nvidia-ml-py "
                         f"{found.nvidia_ml_py or 'not installed'})"),
             ("CUDA driver", (found.cuda_driver or "none")
              + (f", runtime {found.cuda_runtime}" if found.cuda_runtime else "")),
             ("nvcc", found.nvcc or "not on PATH")]
    pairs += [(f"GPU {g.ordinal}", f"{g.name}, sm_{g.compute_capability.replace('.', '')}, {g.memory_gib:g} GiB")
              for g in found.gpus] or [("GPU", "none found")]
    pairs += [("note", n) for n in found.notes]
    print_pairs(out, pairs)


def _database(db: str | None) -> dict:
    """The URL the commands would use (``--db``, ``$AUTOTUNE_DB``, else the default file),
    its password masked, and the SQLite file it names with whether it exists."""
    from autotune.kernel.arguments import check_db_arg

    check_db_arg(db, "--db")
    source = "--db" if db else ENV if given_url() else "default"
    url = resolve_url(db, create=False)
    file = sqlite_path(url)
    return {"url": masked_url(url), "source": source, "file": None if file is None else str(Path(file).resolve()),
            "exists": None if file is None else Path(file).is_file()}
