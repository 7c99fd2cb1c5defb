"""The command that uses the daemon: burns OWN_MS of its own CPU, then has the daemon burn
DAEMON_MS and waits for its answer. Usage: decode_client.py REQUEST REPLY OWN_MS DAEMON_MS"""
import sys
import time

request, reply, own_ms, daemon_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
deadline = time.process_time() + own_ms / 1000
while time.process_time() < deadline:
    pass
with open(request, "w") as jobs:
    jobs.write(daemon_ms + "\n")
with open(reply) as answer:
    assert answer.readline().strip() == "ok"
