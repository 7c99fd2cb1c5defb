#!/usr/bin/env python3
"""A GPU pipeline whose GPU work shows up as framelab stages next to the CPU's.

Each frame: `submit` (CPU: queueing the frame's GPU work), then on the GPU `upload` (a 4K
RGBA frame, host → GPU), `convert` (RGBA8 → normalised fp16 planes), `infer` (matrix
products) and `download` (a slice of the result, GPU → host). The GPU stages are timed
with CUDA events and converted to the host's CLOCK_MONOTONIC by framelab.gpu.CudaClock
(the method: docs/python.md, "GPU work as stages"), then recorded with Stage.record_ns_on
on the stream's queue (`gpu0.stream0`, framelab.gpu.stream_queue): a resource of its own,
so the GPU's time never counts as the CPU thread's. Every --heavy-every frames the infer
stage does three times the work: late frames with a busy GPU, for the report's worst frames.

    framelab run --fps 60 --warmup 3s --duration 23s -- python3 examples/gpu/torch_stages.py

Needs PyTorch with CUDA and the framelab package (`pip install ./python`).
"""

import argparse
import signal
import sys
import time

import torch

import framelab
from framelab.gpu import CudaClock, stream_queue


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fps", type=float, default=60.0)
    parser.add_argument("--size", type=int, default=8192, help="matrix side of infer")
    parser.add_argument("--products", type=int, default=4, help="matrix products per frame")
    parser.add_argument("--heavy-every", type=int, default=50)
    parser.add_argument("--frames", type=int, default=0, help="stop after N frames (0: run until stopped)")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        sys.exit("torch_stages.py: no CUDA device")
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

    stages = {name: framelab.Stage(name) for name in ("submit", "upload", "convert", "infer", "download")}
    frame_bytes = framelab.Counter("bytes")
    device = torch.device("cuda")
    stream = torch.cuda.current_stream()

    height, width = 2160, 3840
    host_in = torch.randint(0, 256, (height, width, 4), dtype=torch.uint8).pin_memory()
    dev_in = torch.empty_like(host_in, device=device)
    weights = torch.randn(args.size, args.size, device=device, dtype=torch.bfloat16) / args.size**0.5
    activations = torch.randn(args.size, args.size, device=device, dtype=torch.bfloat16)
    host_out = torch.empty(1024, 1024, dtype=torch.bfloat16).pin_memory()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(5)]
    clock = CudaClock(stream)
    gpu = stream_queue(stream)  # the GPU stages' resource: gpu<device>.stream<id>

    budget_ns = int(1e9 / args.fps)
    deadline = time.monotonic_ns()
    frame = 0
    while not stop and (args.frames == 0 or frame < args.frames):
        products = args.products * (3 if args.heavy_every and frame % args.heavy_every == args.heavy_every - 1 else 1)
        with stages["submit"].span(frame):
            events[0].record(stream)
            dev_in.copy_(host_in, non_blocking=True)
            events[1].record(stream)
            planes = dev_in.permute(2, 0, 1)[:3].to(torch.float16).mul_(1.0 / 255.0)
            events[2].record(stream)
            x = activations
            for _ in range(products):
                x = x @ weights
            events[3].record(stream)
            host_out.copy_(x[:1024, :1024], non_blocking=True)
            events[4].record(stream)
        events[4].synchronize()
        t = [clock.to_host_ns(e) for e in events]
        for name, start, end in zip(("upload", "convert", "infer", "download"), t, t[1:]):
            stages[name].record_ns_on(gpu, frame, start, end)
        frame_bytes.add(frame, host_in.numel())  # bytes uploaded: uint8 elements
        frame += 1
        clock.maybe_renew()
        deadline += budget_ns
        wait = deadline - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        else:
            deadline = time.monotonic_ns()
    print(
        f"torch_stages: {frame} frames; GPU→host clock anchors within ±{clock.worst_uncertainty_ns / 1e3:.1f} µs",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
