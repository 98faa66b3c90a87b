# bench.py: the mean cost of py_stack at a few depths, through the test
# build's memprobe_py_bench (MEMPROBE_PY_TEST), min of 7 runs of 100k
# calls: LD_PRELOAD=... MEMPROBE_SITES_DIR=... MEMPROBE_SITES_RATE=1000000 python3 bench.py
import ctypes
b = ctypes.CDLL(None).memprobe_py_bench
b.restype = ctypes.c_double
def deep(n):
    if n == 0:
        return min(b(100000) for _ in range(7))
    return deep(n - 1)
for d in (0, 10, 30, 60):
    print(d + 2, "frames:", round(deep(d), 1), "ns per py_stack")
