# frames.py: nested functions that ask the preloaded test build of
# libmemprobe-sites for their own frames (memprobe_py_dump). The test
# (TestPythonFrames) reads the lines marked "# at" below.
import ctypes
import os
import sys

dump = ctypes.CDLL(None).memprobe_py_dump
dump.argtypes = [ctypes.c_int]


class Holder:
    def method(self, fd):
        return [dump(fd) for _ in range(1)]  # at: Holder.method.<locals>.<listcomp>|Holder.method


def inner(fd):
    x = (1 +
         2)
    return Holder().method(fd)  # at: inner


def outer(fd):
    return inner(fd)  # at: outer


def gen(fd):
    yield outer(fd)  # at: gen


fd = int(sys.argv[1])
n = next(gen(fd))  # at: <module>
os.write(fd, b"done\n")
