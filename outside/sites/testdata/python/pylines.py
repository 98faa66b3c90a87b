# A line of the program's own that allocates through the standard
# library (TestPyLines): base64.b64decode (base64.py) makes each 9 MiB
# bytes object that load (line 12) asks for from 12 MiB of base64 made
# on the same line; five are kept. The table by line names line 12
# first, via base64.py, where the sites table names base64.py's lines.
import base64

keep = []


def load(n):
    keep.append(base64.b64decode(b"QUJD" * n))


for _ in range(5):
    load(3 << 20)
