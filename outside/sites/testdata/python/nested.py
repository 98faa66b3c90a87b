# Nested functions that allocate at known lines (TestPythonSites):
# inner's bytearrays (20 x 4 MiB, line 10) are held at the peak, made
# through outer (line 15) from the module (line 32); with an argument,
# numpy's array (64 MiB, line 21) through outer_np (line 25) from the
# module (line 30).
keep = []


def inner(n):
    keep.append(bytearray(n))


def outer():
    for _ in range(20):
        inner(4 << 20)


def make_np():
    import numpy

    keep.append(numpy.zeros((4096, 2048)))  # 64 MiB, made in C


def outer_np():
    make_np()


import sys
if len(sys.argv) > 1:
    outer_np()
else:
    outer()
