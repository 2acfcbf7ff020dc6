"""Pack distributions installed in this Python back into wheels, for a local wheelhouse.

The GPU machine has no package index, and what one call may carry there (64 MiB) holds the
wheels of ``[cuda]`` (cuda-bindings, nvidia-ml-py) and autotune's small dependencies, but not
numpy's, matplotlib's and their image libraries' (40 MB more). Those are installed on the
machine's own Python, so benchmarks/backends_agree.sh packs them back into wheels with this
script, and the clean virtual environment installs everything from wheels with ``--no-index``.

A wheel is the distribution's files under its site-packages (its ``.dist-info`` from the
install, minus ``RECORD``, ``INSTALLER``, ``REQUESTED``, ``direct_url.json``, compiled
``__pycache__`` files and anything outside site-packages, such as console scripts), a new
``RECORD`` with each file's SHA-256, named with the first tag of the install's ``WHEEL`` file.

    python3 benchmarks/wheels_from_installed.py DEST NAME...
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from importlib import metadata
from pathlib import Path

SKIP = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def pack(name: str, dest: Path) -> Path:
    """The wheel of installed distribution ``name``, written into ``dest``."""
    dist = metadata.distribution(name)
    root = Path(dist.locate_file("")).resolve()
    info = next(Path(str(f)).parts[0] for f in dist.files if Path(str(f)).parts[0].endswith(".dist-info"))
    wheel_meta = (root / info / "WHEEL").read_text()
    tag = next(line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:"))
    target = dest / f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}-{tag}.whl"
    record = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as whl:
        for f in dist.files:
            path = (root / str(f)).resolve()
            rel = Path(str(f))
            if (not path.is_file() or root not in path.parents or "__pycache__" in rel.parts
                    or (rel.parts[0] == info and rel.name in SKIP)):
                continue
            data = path.read_bytes()
            whl.writestr(rel.as_posix(), data)
            record.append(f"{rel.as_posix()},{_hash(data)},{len(data)}")
        record.append(f"{info}/RECORD,,")
        whl.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return target


def main() -> None:
    dest, names = Path(sys.argv[1]), sys.argv[2:]
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        print(pack(name, dest).name)


if __name__ == "__main__":
    main()
