#!/usr/bin/env python3
"""A small HTTP server with a tunable cost per request, for benchmarks of a server and a
load generator (tests/e2e/bench/http_ab.rs, docs/bench.md). Standard library only.

    http_cost_server.py --cost-us 1500 --port-file PORTFILE

Each GET burns --cost-us microseconds of CPU before answering (a stand-in for the work a
real server does), so a build with a smaller cost serves more requests per second. It
listens on 127.0.0.1, on --port or on a free port when 0, and writes the port it got to
--port-file once it accepts connections (the load generator waits for that file)."""

import argparse
import http.server
import os
import time


def burn(cost_ns):
    end = time.perf_counter_ns() + cost_ns
    x = 0
    while time.perf_counter_ns() < end:
        x += 1
    return x


class Handler(http.server.BaseHTTPRequestHandler):
    cost_ns = 0
    body = b"ok\n"

    def do_GET(self):
        burn(self.cost_ns)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass  # one line per request would be the load, not the server


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost-us", type=float, default=1000.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    Handler.cost_ns = int(args.cost_us * 1000)
    server = http.server.HTTPServer(("127.0.0.1", args.port), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)  # whole or absent: never half a port number
    server.serve_forever()


if __name__ == "__main__":
    main()
