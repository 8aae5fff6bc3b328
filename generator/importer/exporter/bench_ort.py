"""The Python side of `gen bench`: the same ONNX model and inputs through
Python's onnxruntime (CPU), with the thread settings the Rust engine uses,
warm-up then timed runs. Prints JSON: {"onnxruntime": version, "times_ms": [...]}.

Each time is one `session.run` as Python calls it (input dict in, numpy
arrays out), the same span the Rust side times around its own run call."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--inputs", required=True, help="folder of <input name>.npy")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--intra-threads", type=int, default=1)
    parser.add_argument("--inter-threads", type=int, default=1)
    args = parser.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.intra_threads
    options.inter_op_num_threads = args.inter_threads
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    feeds = {p.stem: np.load(p) for p in sorted(Path(args.inputs).glob("*.npy"))}
    for _ in range(args.warmup):
        session.run(None, feeds)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    json.dump({"onnxruntime": ort.__version__, "times_ms": times}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
