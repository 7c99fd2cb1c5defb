"""A decode job for the codec × path table: decodes one clip of CODEC either on its own CPU
(PATH cpu) or by handing it to the decoder daemon (PATH daemon), which costs the command a
little CPU of its own. Usage: decode.py REQUEST_FIFO REPLY_FIFO CODEC PATH"""
import sys
import time

COST_MS = {"h264": 20, "hevc": 40, "av1": 60}
HANDOFF_MS = 5

request, reply, codec, path = sys.argv[1:5]
own_ms, daemon_ms = (COST_MS[codec], 0) if path == "cpu" else (HANDOFF_MS, COST_MS[codec])
deadline = time.process_time() + own_ms / 1000
while time.process_time() < deadline:
    pass
with open(request, "w") as jobs:
    jobs.write(f"{daemon_ms}\n")
with open(reply) as answer:
    assert answer.readline().strip() == "ok"
