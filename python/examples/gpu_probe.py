#!/usr/bin/env python3
"""GPU work as framelab stages with framelab.gpu, and the figures that say how well the
CUDA-event → host-clock mapping holds on this machine.

    pip install './python' torch
    framelab run --fps 60 --warmup 2s --duration 12s -o gpu.framelab -- \\
        python3 python/examples/gpu_probe.py --seconds 20
    python3 python/examples/gpu_probe.py --seconds 5          # without framelab: figures only

Each frame: `submit` (CPU, queueing the work), then on the GPU `upload` (a 4K RGBA frame),
`convert` (to fp16 planes) and `infer` (matrix products), recorded by `GpuStages`.
At the end it prints, on stderr:

- anchor uncertainty: half the host-clock gap around each anchor event (the bound on the
  error of every mapped time);
- drift: when an anchor is renewed, where the old anchor put the new one against where the
  new one's host reads put it, in ns and ppm of the time between them (the reason for
  renewing every second);
- the CPU cost of `with gpu.span(...)` (two `torch.cuda.Event.record` calls and a queue
  push) and of `flush()` per span;
- the mapped GPU stage sums against CUDA's own `elapsed_time` over the same frame.
"""

import argparse
import signal
import statistics
import sys
import time

import framelab
from framelab.gpu import GpuStages


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--fps", type=float, default=60.0)
    parser.add_argument("--size", type=int, default=4096, help="matrix side of infer")
    parser.add_argument("--renew-s", type=float, default=1.0, help="anchor renewal period")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("gpu_probe.py: no CUDA device (torch.cuda.is_available() is False)")
    device = torch.device("cuda")
    submit = framelab.Stage("submit")
    upload, convert, infer = (framelab.Stage(n) for n in ("upload", "convert", "infer"))
    gpu = GpuStages(renew_s=args.renew_s)

    host_in = torch.randint(0, 256, (2160, 3840, 4), dtype=torch.uint8).pin_memory()
    dev_in = torch.empty_like(host_in, device=device)
    weights = torch.randn(args.size, args.size, device=device, dtype=torch.float16)
    x0 = torch.randn(args.size, args.size, device=device, dtype=torch.float16)

    # framelab stops the program with SIGINT at the end of --duration: print the figures.
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    drifts, span_cpu_ns, flush_cpu_ns, sum_errors_ns = [], [], [], []
    pacer = framelab.Pacer(args.fps, late="skip", record=False)
    end = time.monotonic() + args.seconds
    frame = 0
    while time.monotonic() < end and not stop:
        pacer.wait(frame)
        first = torch.cuda.Event(enable_timing=True)
        last = torch.cuda.Event(enable_timing=True)
        with submit.span(frame):
            first.record(gpu.stream)
            t0 = time.perf_counter_ns()
            with gpu.span(upload, frame):
                dev_in.copy_(host_in, non_blocking=True)
            span_cpu_ns.append(time.perf_counter_ns() - t0)
            with gpu.span(convert, frame):
                planes = dev_in.permute(2, 0, 1)[:3].to(torch.float16).mul_(1 / 255)
            with gpu.span(infer, frame):
                y = x0 @ weights
                y = y @ weights
            last.record(gpu.stream)
        old_anchor, old_host_ns = gpu.clock.event, gpu.clock.host_ns
        t0 = time.perf_counter_ns()
        n = gpu.flush()
        flush_cpu_ns.append((time.perf_counter_ns() - t0) / max(n, 1))
        # The mapped stages against CUDA's own measure of the same stretch of the stream.
        last.synchronize()
        mapped = sum(end_ns - start_ns for _, _, start_ns, end_ns in gpu.last_flushed)
        sum_errors_ns.append(mapped - round(first.elapsed_time(last) * 1e6))
        if gpu.clock.event is not old_anchor:  # renewed: where did the old anchor put it?
            predicted = old_host_ns + round(old_anchor.elapsed_time(gpu.clock.event) * 1e6)
            between_ns = gpu.clock.host_ns - old_host_ns
            drifts.append((predicted - gpu.clock.host_ns, between_ns))
        del planes, y
        frame += 1

    def us(ns):
        return f"{ns / 1e3:.1f} µs"

    print(f"gpu_probe: {torch.cuda.get_device_name()} · torch {torch.__version__} · "
          f"{frame} frames · {gpu.recorded} GPU spans · recording: {framelab.enabled()}",
          file=sys.stderr)
    print(f"  anchors              {gpu.clock.anchors} · uncertainty worst ±{us(gpu.clock.worst_uncertainty_ns)}"
          f" · last ±{us(gpu.clock.uncertainty_ns)}", file=sys.stderr)
    if drifts:
        errs = [d for d, _ in drifts]
        ppm = [d / b * 1e6 for d, b in drifts if b]
        print(f"  drift at renewal     median {us(statistics.median(errs))} · worst {us(max(errs, key=abs))}"
              f" · median {statistics.median(ppm):+.1f} ppm over ~{statistics.median(b for _, b in drifts) / 1e9:.2f} s",
              file=sys.stderr)
    print(f"  with gpu.span CPU    median {us(statistics.median(span_cpu_ns))} per span"
          f" · flush {us(statistics.median(flush_cpu_ns))} per span", file=sys.stderr)
    if sum_errors_ns:
        print(f"  stage sum − elapsed  median {statistics.median(sum_errors_ns):+.0f} ns"
              f" · worst {max(sum_errors_ns, key=abs):+.0f} ns (gaps between the stages' events)",
              file=sys.stderr)


if __name__ == "__main__":
    main()
