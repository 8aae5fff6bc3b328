"""The Python side of `gen bench`'s generation figures: a generation fixture's loop through
Python's onnxruntime (CPU) with the thread settings the Rust engine uses, as the Rust side runs
it (runtime/src/generation.rs): the prologue (an encoder-decoder's encoder) and the first step
timed together as the prefill, then each decode step with the cache the previous step returned,
teacher-forced with the fixture's feeds. Prints JSON:
{"onnxruntime": version, "prefill_ms": [...], "decode_step_ms": [...]}.

Each time is the `session.run` calls as Python makes them (input dict in, numpy arrays out),
the span the Rust side times around its own run calls."""
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
    parser.add_argument("--fixture", required=True, help="a generation fixture folder (meta.json, its graphs, steps/)")
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
    sessions = {name: ort.InferenceSession(str(folder / g["file"]), options, providers=["CPUExecutionProvider"]) for name, g in meta["graphs"].items()}
    outputs = {name: [o.name for o in s.get_outputs()] for name, s in sessions.items()}
    load = lambda sub, feeds: {t["name"]: np.load(folder / sub / f"{t['name']}.npy") for t in feeds}
    prologue = [(p["graph"], load(f"prologue/{p['graph']}", p["feeds"])) for p in meta["prologue"]]
    steps = [(s["graph"], load(f"steps/{i}", s["feeds"])) for i, s in enumerate(meta["steps"])]
    carried = {c["input"]: c["output"] for c in meta["carried"]}
    empty = {c["output"]: np.zeros(c["empty_shape"], dtype=np.float32) for c in meta["carried"] if c.get("empty_shape") is not None}

    def run(graph, feeds, latest):
        inputs = {i["name"]: feeds[i["name"]] if i["name"] in feeds else latest[carried[i["name"]]] for i in meta["graphs"][graph]["inputs"]}
        start = time.perf_counter()
        out = sessions[graph].run(outputs[graph], inputs)
        elapsed = (time.perf_counter() - start) * 1e3
        latest.update(zip(outputs[graph], out))
        return elapsed

    prefill, decode = [], []
    for repeat in range(args.warmup + args.runs):
        latest = dict(empty)
        elapsed = sum(run(graph, feeds, latest) for graph, feeds in prologue)
        for i, (graph, feeds) in enumerate(steps):
            elapsed += run(graph, feeds, latest)
            if repeat >= args.warmup:
                (prefill if i == 0 else decode).append(elapsed)
            elapsed = 0.0
    json.dump({"onnxruntime": ort.__version__, "prefill_ms": prefill, "decode_step_ms": decode}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
