"""The Python side of `gen bench`'s generation figures: a generation fixture's loop through
Python's onnxruntime (CPU) with the thread settings the Rust engine uses. Each timed run is the
prefill (an empty cache) and then every decode step with the cache the previous step returned,
teacher-forced with the fixture's feeds, as the Rust side runs it. Prints JSON:
{"onnxruntime": version, "prefill_ms": [...], "decode_step_ms": [...]}.

Each time is one `session.run` as Python calls it (input dict in, numpy arrays out), the span
the Rust side times around its own run call."""
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
    parser.add_argument("--fixture", required=True, help="a generation fixture folder (meta.json, decoder.onnx, steps/)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--intra-threads", type=int, default=1)
    parser.add_argument("--inter-threads", type=int, default=1)
    args = parser.parse_args()
    folder = Path(args.fixture)
    meta = json.loads((folder / "meta.json").read_text())
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.intra_threads
    options.inter_op_num_threads = args.inter_threads
    session = ort.InferenceSession(str(folder / meta["graph"]), options, providers=["CPUExecutionProvider"])
    steps = [{t["name"]: np.load(folder / "steps" / str(i) / f"{t['name']}.npy") for t in step["feeds"]}
             for i, step in enumerate(meta["steps"])]
    empty = {p["input"]: np.zeros(p["empty_shape"], dtype=np.float32) for p in meta["past"]}
    names = [o.name for o in session.get_outputs()]
    prefill, decode = [], []
    for run in range(args.warmup + args.runs):
        past = empty
        for i, feeds in enumerate(steps):
            start = time.perf_counter()
            out = dict(zip(names, session.run(names, {**feeds, **past})))
            elapsed = (time.perf_counter() - start) * 1e3
            if run >= args.warmup:
                (prefill if i == 0 else decode).append(elapsed)
            past = {p["input"]: out[p["output"]] for p in meta["past"]}
    json.dump({"onnxruntime": ort.__version__, "prefill_ms": prefill, "decode_step_ms": decode}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
