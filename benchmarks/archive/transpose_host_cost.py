"""Host time per call of autotune.transpose on a 64x64 float32 tensor (new output, out=), of
torch's x.t().contiguous() and torch.empty alone (mean of 200 calls behind a GPU sleep, median of
15 runs), then a cProfile of 300 calls. python3 benchmarks/transpose_host_cost.py sqlite:///DB"""
import time, statistics, sys
import torch, autotune
from autotune.runtime.transpose.op import transpose
db = sys.argv[1]
x = torch.zeros((64, 64), device="cuda"); y = torch.empty((64, 64), device="cuda")
for name, fn in {"ours": lambda: transpose(x, db=db), "ours out": lambda: transpose(x, out=y, db=db),
                 "torch": lambda: x.t().contiguous(), "torch.empty": lambda: torch.empty((64, 64), device="cuda")}.items():
    fn(); torch.cuda.synchronize(); runs = []
    for _ in range(15):
        torch.cuda._sleep(10**8); t = time.perf_counter()
        for _ in range(200): fn()
        runs.append((time.perf_counter() - t) / 200 * 1e6); torch.cuda.synchronize()
    print(name, f"{statistics.median(runs):.2f} us")
import cProfile, pstats
torch.cuda._sleep(10**8)
cProfile.run("for _ in range(300): transpose(x, db=db)", "/tmp/p.out")
pstats.Stats("/tmp/p.out").sort_stats("tottime").print_stats(15)
torch.cuda.synchronize()
