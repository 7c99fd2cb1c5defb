"""A stand-in decoder daemon for tests: named `decoderd`, it serves jobs from a FIFO.

Each request line is a number of milliseconds of CPU to burn; the daemon burns them and
answers `ok` on the reply FIFO. Usage: decoderd.py REQUEST_FIFO REPLY_FIFO
"""
import ctypes
import sys
import time

PR_SET_NAME = 15
ctypes.CDLL(None).prctl(PR_SET_NAME, b"decoderd", 0, 0, 0)

request, reply = sys.argv[1], sys.argv[2]
print("ready", flush=True)
while True:
    with open(request) as jobs:
        for line in jobs:
            deadline = time.process_time() + int(line) / 1000
            while time.process_time() < deadline:
                pass
            with open(reply, "w") as answer:
                answer.write("ok\n")
