# Pure-Python allocation: lists of small dicts, strs and tuples (all
# pymalloc's), the last ten kept (TestPymallocArenas; the cost table of
# docs/python-sites.md runs it with no argument, about 2 s alone).
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
keep = []


def build(k):
    return [{"i": i, "s": str(i), "t": (i, i + 1)} for i in range(k)]


for _ in range(rounds):
    keep.append(build(20000))
    if len(keep) > 10:
        keep.pop(0)
