# linetable.py: for every code object compiled from the named sources
# (this file and a few of the standard library's modules), one JSON line:
# co_linetable in hex, co_firstlineno, and the line of each code unit by
# co_positions() (-1: none). TestPyLineTable decodes the tables and
# compares.
import importlib.util
import json
import sys


def walk(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_linetable"):
            yield from walk(c)


def sources():
    yield __file__
    for name in ["inspect", "argparse", "dataclasses", "json.decoder", "typing", "asyncio.base_events"]:
        yield importlib.util.find_spec(name).origin


for path in sources():
    with open(path, encoding="utf-8") as f:
        top = compile(f.read(), path, "exec")
    for co in walk(top):
        lines = [-1 if p[0] is None else p[0] for p in co.co_positions()]
        print(json.dumps({"name": co.co_qualname, "table": co.co_linetable.hex(),
                          "first": co.co_firstlineno, "lines": lines}))
