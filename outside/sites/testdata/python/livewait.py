# The live view's Python test (TestLiveReaderPython): hold makes 20
# bytearrays of 4 MiB (line 11), kept; past the library's second a block
# made and freed writes the thread's records; then "a" on stdout, and
# the program waits for a line on stdin.
import sys, time
keep = []


def hold():
    for _ in range(20):
        keep.append(bytearray(4 << 20))


hold()
time.sleep(1.1)
bytes(1 << 20)
print("a", flush=True)
sys.stdin.readline()
