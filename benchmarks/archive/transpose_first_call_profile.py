"""The first autotune.transpose of a process (torch imported, the tensor made; import autotune
included), timed and profiled with cProfile. python3 benchmarks/transpose_first_call_profile.py sqlite:///DB"""
import cProfile, pstats, sys, time, io
import torch
x = torch.zeros((64, 64), device="cuda"); torch.cuda.synchronize()
pr = cProfile.Profile()
t = time.perf_counter()
pr.enable()
import autotune
y = autotune.transpose(x, db=sys.argv[1]); torch.cuda.synchronize()
pr.disable()
print("first call s", time.perf_counter() - t)
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(45); print(s.getvalue())
