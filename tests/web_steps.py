"""Sums a web sweep's steps (runtime's HWMATRIX_WEB_STEPS file) per engine.

    python3 tests/web_steps.py STEPS.jsonl

Prints, for each browser and backend, the pages opened and the seconds spent
starting pages, opening sessions, in first runs (WebGPU compiles its shaders
there) and in the other runs, as seen from the engine (wall time; the file
also keeps the page's own time of each run, `in_page_ms`).
"""

import collections
import json
import sys

STEPS = ["page", "open", "first run", "run"]


def main(path):
    wall = collections.defaultdict(lambda: collections.Counter())
    count = collections.defaultdict(lambda: collections.Counter())
    for line in open(path):
        step = json.loads(line)
        browser, backend = step["page"].split()[:2]
        engine = f"{browser} {backend}"
        wall[engine][step["step"]] += step["wall_ms"] / 1e3
        count[engine][step["step"]] += 1
    print("| engine | pages | " + " | ".join(f"{s} s" for s in STEPS) + " | total s |")
    print("|---|---:|" + "---:|" * (len(STEPS) + 1))
    for engine in sorted(wall):
        cells = [f"{wall[engine][s]:.1f}" for s in STEPS]
        total = sum(wall[engine].values())
        print(f"| {engine} | {count[engine]['page']} | " + " | ".join(cells) + f" | {total:.1f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
