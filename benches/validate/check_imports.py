#!/usr/bin/env python3
"""framelab's frame-time figures of four real captures against an independent computation.

Imports each capture in tests/fixtures/import with the given framelab, reads the report as
JSON, computes the same figures from the CSV with numpy (indep.py: no framelab code) and
prints each pair with its ratio. Exits 1 if any differs by more than 1e-9 relative
(docs/validation.md):

    pip install numpy
    python3 benches/validate/check_imports.py target/release/framelab
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from indep import (compare, figures, framelab_figures, read_mangohud,  # noqa: E402
                   read_presentmon_v1, read_presentmon_v2, show)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "../../tests/fixtures/import")
BUDGET_NS = 16666667  # --fps 60
CAPTURES = [
    ("pm1", "presentmon-v1-farcrynewdawn", read_presentmon_v1),
    ("pm2", "presentmon-v2-presentbench-multiprocess", read_presentmon_v2),
    ("glxgears", "mangohud-0.6.8-glxgears-llvmpipe", read_mangohud),
    ("vkcube", "mangohud-0.6.8-vkcube-lavapipe", read_mangohud),
]


def main():
    framelab = sys.argv[1] if len(sys.argv) > 1 else "framelab"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, name, read in CAPTURES:
            csv = os.path.join(FIXTURES, name + ".csv")
            run = os.path.join(tmp, name + ".framelab")
            subprocess.run([framelab, "import", csv, "--fps", "60", "-o", run],
                           check=True, capture_output=True)
            report = subprocess.run([framelab, "report", run, "--format", "json"],
                                    check=True, capture_output=True, text=True).stdout
            start, end, ids = read(csv)
            mine = figures(start, end, ids, BUDGET_NS)
            mine.pop("stutter.window", None)  # how it is computed; framelab does not print it
            rows += compare(mine, framelab_figures(json.loads(report)), label)
    show(rows)
    off = [r for r in rows if r[4] is None or abs(r[4] - 1) > 1e-9]
    print(f"{len(rows)} figures, {len(off)} different")
    sys.exit(1 if off else 0)


if __name__ == "__main__":
    main()
