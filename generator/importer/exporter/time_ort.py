"""Times a fixture's model with Python onnxruntime under the conditions the
Rust checks record (1 intra-op and 1 inter-op thread, sequential execution, no
profiling, a warm-up run, then the median of N runs on the export shape), so a
record's `timing.median_ms` can be compared with Python's on the same machine:

    python generator/importer/exporter/time_ort.py ~/.cache/hwmatrix/fixtures/bert [--runs 10]

Prints one line: `<model_type> python-onnxruntime <version> median_ms=<m> min_ms=<m> runs=<n>`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fixture", type=Path)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    meta = json.loads((args.fixture / "meta.json").read_text())
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(str(args.fixture / "model.onnx"), options, providers=["CPUExecutionProvider"])
    feeds = {t["name"]: np.load(args.fixture / "inputs" / f"{t['name']}.npy") for t in meta["shapes"][0]["inputs"]}
    session.run(None, feeds)  # warm-up
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    print(f"{meta['model_type']} python-onnxruntime {ort.__version__} median_ms={statistics.median(times):.4f} min_ms={min(times):.4f} runs={args.runs}")


if __name__ == "__main__":
    main()
