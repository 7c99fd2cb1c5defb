"""framelab's metric registry (src/analyze/metrics.rs): generated, do not edit.
Regenerate with `UPDATE_SNAPSHOTS=1 cargo test --lib analyze::metrics`."""

import json

REGISTRY = json.loads(r'''
{
  "fps_lows": [
    {
      "brief": true,
      "direction": "higher_is_better",
      "help": "the median frame rate: 1e6 ÷ Q(0.5) of the interval in µs",
      "name": "p50",
      "unit": "fps"
    },
    {
      "brief": false,
      "direction": "higher_is_better",
      "help": "the rate 90% of the intervals achieve or beat",
      "name": "p10",
      "unit": "fps"
    },
    {
      "brief": false,
      "direction": "higher_is_better",
      "help": "the rate 95% of the intervals achieve or beat",
      "name": "p5",
      "unit": "fps"
    },
    {
      "brief": true,
      "direction": "higher_is_better",
      "help": "the rate 99% of the intervals achieve or beat: 1e6 ÷ Q(0.99)",
      "name": "p1",
      "unit": "fps"
    },
    {
      "brief": true,
      "direction": "higher_is_better",
      "help": "1e6 ÷ the mean of every interval ≥ Q(0.99): the slowest 1% on average",
      "name": "low1_avg",
      "unit": "fps"
    },
    {
      "brief": false,
      "direction": "higher_is_better",
      "help": "1e6 ÷ the interval where the running sum of the longest reaches 1% of the time",
      "name": "low1_int",
      "unit": "fps"
    },
    {
      "brief": false,
      "direction": "higher_is_better",
      "help": "the rate 99.9% of the intervals achieve or beat",
      "name": "p0.1",
      "unit": "fps"
    },
    {
      "brief": true,
      "direction": "higher_is_better",
      "help": "low1_avg with 0.1%",
      "name": "low0_1_avg",
      "unit": "fps"
    },
    {
      "brief": false,
      "direction": "higher_is_better",
      "help": "low1_int with 0.1%",
      "name": "low0_1_int",
      "unit": "fps"
    }
  ],
  "run_metrics": [
    {
      "direction": "higher_is_better",
      "help": "observed fps: measured frames ÷ the window's length in seconds",
      "key": "fps",
      "label": "fps",
      "unit": "fps"
    },
    {
      "direction": "lower_is_better",
      "help": "frames whose total is over the budget, % of measured frames",
      "key": "late",
      "label": "late frames",
      "unit": "percent"
    },
    {
      "direction": "lower_is_better",
      "help": "user + system CPU of every process over the window ÷ measured frames, µs",
      "key": "cpu_per_frame",
      "label": "CPU per frame",
      "unit": "microseconds"
    },
    {
      "direction": "lower_is_better",
      "help": "CPU time ÷ the window's length, % (100 = one core busy)",
      "key": "load",
      "label": "load",
      "unit": "percent"
    },
    {
      "direction": "lower_is_better",
      "help": "load ÷ 100: how many cores' worth of work",
      "key": "cores",
      "label": "cores",
      "unit": "cores"
    },
    {
      "direction": "lower_is_better",
      "help": "the largest resident set of any measured process, bytes",
      "key": "peak_rss",
      "label": "peak RSS",
      "unit": "bytes"
    },
    {
      "direction": "lower_is_better",
      "help": "the window's length, s (compared only for commands that end by themselves)",
      "key": "wall",
      "label": "wall",
      "unit": "seconds"
    },
    {
      "direction": "lower_is_better",
      "help": "user + system CPU of every process over the window, s",
      "key": "cpu",
      "label": "CPU",
      "unit": "seconds"
    }
  ],
  "schema": "framelab.metrics/1"
}
''')

RUN_METRICS = {m["key"]: m for m in REGISTRY["run_metrics"]}
FPS_LOWS = [low["name"] for low in REGISTRY["fps_lows"]]
