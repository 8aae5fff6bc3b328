"""Where a fixture worker's time goes, step by step (issue 41, deliverable 7).

`gen fixtures` with `HWMATRIX_PROFILE=<file>` in its environment makes each worker (worker.py)
wrap the exporter's steps below with timers and append one JSON line per job to <file>: the
model, the job's kind, its wall and CPU seconds, and each step's own seconds (its time less
the time of the steps it called, so the steps add up to the job). Nothing a fixture holds
changes: the wrappers only time the functions they wrap.

    HWMATRIX_PROFILE=/tmp/steps.jsonl gen fixtures --fixtures "$(mktemp -d)"
    python generator/importer/exporter/profile_steps.py /tmp/steps.jsonl

prints the worker-time table: seconds per step over every job, by job kind, with the jobs that
took longest.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections import defaultdict

# (module, function, how its step is named from its arguments): the steps of every kind of
# job, from building the tiny model to the last precision variant.
STEPS = [
    ("export", "build_model", lambda *a, **k: "build model"),
    ("export", "export_with", lambda attempt, *a, **k: f"onnx: {attempt.name}"),
    ("export", "verify_with_onnxruntime", lambda *a, **k: "verify with onnxruntime"),
    ("export", "export_torchscript", lambda *a, **k: "torchscript"),
    ("export", "make_variant", lambda name, *a, **k: f"variant: {name}"),
    ("export", "integer_nodes", lambda *a, **k: "integer nodes"),
    ("export", "save_linear_layers", lambda *a, **k: "linear layers"),
    ("generation", "build", lambda *a, **k: "build model"),
    ("generation", "reference_generate", lambda *a, **k: "generate() reference"),
    ("generation", "export_graph", lambda *a, **k: "onnx: generation graph"),
    ("generation", "run_loop", lambda *a, **k: "generation loop on onnxruntime"),
]


class Timer:
    """The own seconds of each step of the job in progress."""

    def __init__(self):
        self.own = defaultdict(float)
        self.stack: list[list] = []  # [step, started, seconds of the steps it called]

    def wrap(self, function, name_of):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            self.stack.append([name_of(*args, **kwargs), time.perf_counter(), 0.0])
            try:
                return function(*args, **kwargs)
            finally:
                step, started, inner = self.stack.pop()
                took = time.perf_counter() - started
                self.own[step] += took - inner
                if self.stack:
                    self.stack[-1][2] += took

        return timed

    def start(self) -> tuple[float, float]:
        """Starts timing a job; `record` ends it."""
        self.own.clear()
        return time.perf_counter(), time.process_time()

    def record(self, started: tuple[float, float], job: dict, ok: bool) -> dict:
        """The profile line of the job started at `started`."""
        wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
        steps = dict(self.own)
        steps["other (reference run, saving, the rest)"] = max(0.0, wall - sum(steps.values()))
        model, kind = label(job)
        return {"model": model, "kind": kind, "ok": ok, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                "steps": {step: round(seconds, 3) for step, seconds in steps.items()}}


def install(modules: dict) -> Timer:
    """Wraps STEPS in the already imported modules ({name: module}); returns their timer."""
    timer = Timer()
    for module, function, name_of in STEPS:
        owner = modules[module]
        setattr(owner, function, timer.wrap(getattr(owner, function), name_of))
    return timer


def label(job: dict) -> tuple[str, str]:
    """(model, kind) of a worker job."""
    inner = job.get("job") or {}
    spec = inner.get("spec") or {}
    kind = job.get("kind", "?")
    if kind == "export" and spec.get("components"):
        kind = "components"
    return spec.get("model_type") or job.get("model_type") or "?", kind


def table(lines: list[dict]) -> str:
    """The worker-time table of a profile's lines."""
    steps, kinds = defaultdict(float), defaultdict(lambda: [0, 0.0, 0.0])
    for line in lines:
        for step, seconds in line["steps"].items():
            steps[step] += seconds
        kind = kinds[line["kind"]]
        kind[0] += 1
        kind[1] += line["wall_s"]
        kind[2] += line["cpu_s"]
    total = sum(line["wall_s"] for line in lines) or 1.0
    out = [f"{len(lines)} jobs, {total:.0f} s of worker time (wall; one torch thread per worker)", "",
           "| step | seconds | share |", "|---|---:|---:|"]
    out += [f"| {step} | {seconds:.0f} | {100 * seconds / total:.1f}% |"
            for step, seconds in sorted(steps.items(), key=lambda kv: -kv[1])]
    out += ["", "| job kind | jobs | wall s | CPU s |", "|---|---:|---:|---:|"]
    out += [f"| {kind} | {n} | {wall:.0f} | {cpu:.0f} |" for kind, (n, wall, cpu) in sorted(kinds.items(), key=lambda kv: -kv[1][1])]
    out += ["", "| slowest jobs | kind | wall s | its largest step |", "|---|---|---:|---|"]
    for line in sorted(lines, key=lambda l: -l["wall_s"])[:15]:
        step, seconds = max(line["steps"].items(), key=lambda kv: kv[1])
        out.append(f"| {line['model']} | {line['kind']} | {line['wall_s']:.1f} | {step} ({seconds:.1f} s) |")
    return "\n".join(out)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    print(table(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
