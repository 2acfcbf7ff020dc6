"""One PNG of the report floor: a Matplotlib figure drawn through its ``Agg`` canvas (no pyplot,
no global backend switch), its size and resolution, the wrap of its title and footnote, and the
file written whole or not at all. Matplotlib is imported inside the functions only."""

from __future__ import annotations

from pathlib import Path

from autotune.errors import InvalidInputError

__all__ = ["DPI", "FIGSIZE", "TITLE_CHARS", "NOTE_CHARS", "new_figure", "save", "check_out_dir"]

DPI = 110
"""Resolution of every PNG, dots per inch."""
FIGSIZE = {"heatmap": (9.0, 6.5), "kernels": (12.0, 6.5), "scaling": (9.0, 6.0), "pareto": (9.0, 6.5)}
"""Size of each plot, inches (the PNG is ``FIGSIZE * DPI`` pixels)."""
TITLE_CHARS = 70
"""A title line wraps after this many characters (11 pt over a 9-inch figure with its colour bar)."""
NOTE_CHARS = 125
"""A footnote line (8 pt across the figure) wraps after this many characters."""


def new_figure(kind: str | None = None, size: tuple[float, float] | None = None):
    """A new figure of the plot ``kind`` (its :data:`FIGSIZE`) or of ``size`` (inches), at
    :data:`DPI`, on the ``Agg`` canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE[kind] if size is None else size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG, creating its directory; whole or not at all, and
    only over a regular file (:func:`autotune.base.files.write_atomically`)."""
    import io

    from autotune.base.files import write_atomically

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    png = io.BytesIO()
    fig.savefig(png, dpi=DPI, format="png")
    return write_atomically(path, png.getvalue(), "plot")



def check_out_dir(out_dir: Path) -> Path:
    """``out_dir`` as a ``Path``, refused where it is a file.

    Raises:
        InvalidInputError: ``out_dir`` is a file.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInputError(f"--out {out_dir} is a file; give a directory")
    return out_dir
