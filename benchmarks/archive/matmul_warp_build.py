"""Compile configs of kernels/matmul_warp.cu to cubins with nvcc (no GPU needed).

Each config (macro -> int) is built with ``nvcc -cubin -O3 -arch=ARCH -Xptxas -v`` for one dtype
into DIR/<name>.cubin; DIR/info.json maps each name to its registers, static shared memory
(bytes) and spill-store bytes, or to the nvcc error (one line). Cubins already listed there are
not rebuilt. benchmarks/matmul_harness.py uses the same function on the GPU machine.

    python3 benchmarks/matmul_warp_build.py CONFIGS.json DIR [--dtype float32] [--arch sm_90] [-j 2]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import re
import subprocess
from pathlib import Path

ORDER = ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "VEC", "A_SMEM", "STAGES", "ASYNC", "GROUP_M", "MINB")
CTYPE = {"float32": "float", "float64": "double"}
SOURCE = Path(__file__).resolve().parent.parent / "kernels" / "matmul_warp.cu"


def name_of(cfg: dict, dtype: str) -> str:
    """File-name form of a config, e.g. ``f32_128_128_8_32_64_8_8_1_1_2_0_8_1`` (macros in ORDER)."""
    return ("f32" if dtype == "float32" else "f64") + "_" + "_".join(str(cfg[k]) for k in ORDER)


def build(cfgs: list[dict], dtype: str, source: Path, cubins: Path, arch: str, jobs: int) -> dict[str, dict]:
    """Compile the configs not yet in ``cubins``; returns name -> {registers, smem, spill} or {error}."""
    cubins.mkdir(parents=True, exist_ok=True)
    info_file = cubins / "info.json"
    info = json.loads(info_file.read_text()) if info_file.exists() else {}

    def one(cfg):
        name = name_of(cfg, dtype)
        if name in info and ("error" in info[name] or (cubins / f"{name}.cubin").exists()):
            return name, info[name]
        cmd = ["nvcc", "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", f"-I{source.parent}",
               f"-DELEM_T={CTYPE[dtype]}", *(f"-D{k}={cfg[k]}" for k in ORDER), "-o", str(cubins / f"{name}.cubin"),
               str(source)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            err = [l for l in p.stderr.splitlines() if "error" in l.lower()]
            return name, {"error": (err[0] if err else p.stderr.strip())[:200]}
        m = re.search(r"Used (\d+) registers.*?(\d+) bytes smem", p.stderr)
        s = re.search(r"(\d+) bytes spill stores", p.stderr)
        return name, {"registers": int(m.group(1)), "smem": int(m.group(2)), "spill": int(s.group(1)) if s else 0}

    todo = {name_of(c, dtype): c for c in cfgs}
    with cf.ThreadPoolExecutor(jobs) as ex:
        for name, res in ex.map(one, todo.values()):
            info[name] = res
    info_file.write_text(json.dumps(info, indent=0))
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--dtype", default="float32", choices=sorted(CTYPE))
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    cfgs = json.loads(a.configs.read_text())
    info = build(cfgs, a.dtype, a.source, a.out, a.arch, a.j)
    names = [name_of(c, a.dtype) for c in cfgs]
    bad = [n for n in names if "error" in info[n]]
    spill = [n for n in names if info[n].get("spill")]
    print(f"{len(names)} builds, {len(bad)} failed, {len(spill)} spill")
    for n in bad[:10]:
        print("FAILED", n, info[n]["error"])


if __name__ == "__main__":
    main()
