"""Transpose configs timed back to back on one argument set, beside a device memcpy and PyTorch's
``x.mT.contiguous()`` of the same bytes, on one GPU.

benchmarks/unaligned_transpose.py measures through autotune's benchmark, which rotates argument sets
over four times the L2 so that no config is credited with cache bandwidth. A caller that transposes
the same tensor again and again (and benchmarks/transpose_vs_peers.py, which times
``autotune.transpose`` that way) sees the other regime: a matrix of up to about half the L2 stays in
it between launches. This script times that regime: each config launched through
:func:`autotune.runtime.compiled.compiled` (its kernel file's launch, the config as the default rung of
an empty database) on one input and one output, timed as transpose_vs_peers.py times (the batch of
launches queued behind a GPU sleep that outlasts the time Python takes to queue it; the median over 7
batches, per launch). Every config's
output is compared bit for bit with PyTorch's transpose first. Run on the GPU machine:

    python benchmarks/warm_l2_transpose.py --shape 4099x2053 --dtype float16 --config smem_pad \
        --config smem_bytes_aligned_out:BLOCK_ROWS=8
"""

import argparse
import datetime
import tempfile

import torch

from autotune.runtime.compiled import compiled
from transpose_vs_peers import BATCHES, gpu_timer
from unaligned_transpose import parse_config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", action="append", required=True, help="ROWSxCOLS (repeatable)")
    ap.add_argument("--dtype", action="append", required=True, help="a torch dtype name (repeatable)")
    ap.add_argument("--config", action="append", required=True, help="KERNEL[:MACRO=V,...] (repeatable)")
    ap.add_argument("--launches", type=int, default=50)
    args = ap.parse_args()
    configs = [parse_config(c) for c in args.config]
    per_launch_ms = gpu_timer(torch)
    db = f"sqlite:///{tempfile.mkdtemp()}/none.db"  # empty: each config is the launch's default rung
    print(f"# {torch.cuda.get_device_name()}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; one argument "
          f"set, L2-warm where it fits; median of {BATCHES} batches of {args.launches}; % of memcpy; x torch")
    for shape in args.shape:
        rows, cols = (int(v) for v in shape.split("x"))
        for dtype in args.dtype:
            x = torch.randint(0, 256, (rows, cols * getattr(torch, dtype).itemsize), dtype=torch.uint8,
                              device="cuda").view(getattr(torch, dtype))
            y = torch.empty((cols, rows), dtype=x.dtype, device="cuda")
            nbytes = x.numel() * x.element_size()
            memcpy = per_launch_ms(lambda: y.view(-1).copy_(x.view(-1)), args.launches)
            ref = per_launch_ms(lambda: x.mT.contiguous(), args.launches)
            print(f"{shape:>11} {dtype:9} memcpy {memcpy:.4f} ms ({2 * nbytes / memcpy / 1e6:.0f} GB/s); "
                  f"torch x.mT.contiguous() {100 * memcpy / ref:5.1f}%", flush=True)
            want = x.mT.contiguous()
            for config in configs:
                launch = compiled(config.kernel, {"rows": rows, "cols": cols}, dtype, db=db, default=config)
                y.zero_()
                launch(y, x)
                if not torch.equal(y.view(torch.uint8), want.view(torch.uint8)):  # bits (random bits hold NaNs)
                    print(f"{shape:>11} {dtype:9} WRONG  {config}", flush=True)
                    continue
                ms = per_launch_ms(lambda: launch(y, x), args.launches)
                print(f"{shape:>11} {dtype:9} {ms:8.4f} ms {100 * memcpy / ms:6.1f}% {ref / ms:5.2f}x  {config}",
                      flush=True)


if __name__ == "__main__":
    main()
