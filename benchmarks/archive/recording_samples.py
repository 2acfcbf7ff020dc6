"""Issue 34 diagnostic (GPU): the example application's launches recorded with every call timed
(sample_every=1), three steps in a fresh database; per problem its first samples as (step, call
number, launch object's type, its id mod 1e5, stream, ms). Written to see why the 2-GPU app run
of 2026-11-27 read a 11 us transpose's one sample as 4.5 ms (results:
benchmarks/results/diagnostics/2026-11-27_*_recording_samples_{lazy,eager}.txt, the second with
CUDA_MODULE_LOADING=EAGER).

    python3 benchmarks/recording_samples.py
"""
import collections, ctypes, os, sys, tempfile
sys.path.insert(0, "examples/app")
import torch, autotune
from autotune.runtime import recording as R, driver
from app import App

R.MAX_IN_FLIGHT, R.READ_S = 10**6, 3600.0
meta = {}
orig_sample = R.Recording._sample
def _sample(self, launch, args, stream, slot):
    n = slot.calls[0]
    inst = args[0] if args else getattr(launch, "__self__", None)
    before = len(self._pending)
    out = orig_sample(self, launch, args, stream, slot)
    if len(self._pending) > before:
        meta[id(self._pending[-1])] = (n, type(inst).__name__, id(inst) % 100000, stream)
    return out
R.Recording._sample = _sample
lib = driver.libcuda()
rows = collections.defaultdict(list)
db = "sqlite:///" + tempfile.mkdtemp() + "/d.db"
print("CUDA_MODULE_LOADING", os.environ.get("CUDA_MODULE_LOADING"))
app = App(db=db)
with autotune.record("diag", db=db, sample_every=1, flush_s=3600) as r:
    for step in range(3):
        app.step()
        torch.cuda.synchronize()
        for item in list(r._pending):
            slot, start, end, ctx = item
            ms = ctypes.c_float(0)
            lib.cuCtxPushCurrent_v2(ctx); lib.cuEventElapsedTime(ctypes.byref(ms), start, end); lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
            p = slot.problem
            rows[f"{p}"].append((step, *meta.get(id(item), ("?",)), round(ms.value, 4)))
        r._read_samples(True)
for k, v in rows.items():
    print(k, v[:7])
