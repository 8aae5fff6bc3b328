"""A long-lived exporter process for `gen derive` and `gen fixtures`: importing torch and
transformers costs seconds, so gen starts one of these per core and sends it jobs.

Protocol: one JSON job per line on stdin, one JSON answer per line on the file descriptor
given by --answers (stdout, which torch and transformers also print to, goes to stderr):

    {"id": 7, "kind": "list"}                      -> {"id": 7, "ok": true, "result": {"transformers": "5.23.0", "rows": [...]}}
    {"id": 8, "kind": "classify", "model_type": "x"} -> {"id": 8, "ok": true, "result": {category, architecture, ...}}
    {"id": 8, "kind": "derive", "model_type": "x", ...}  -> {"id": 8, "ok": true, "result": {...imported}}
        (optional: "tiny_config_overrides": {..}, "inputs": [..] with "shapes": [..], "export": {"drawn_weights": [..]},
        a spec's curated fields)
    {"id": 9, "kind": "export", "job": {...}}      -> {"id": 9, "ok": true, "result": null}
    {"id": 9, "kind": "torchscript", "job": {...}} -> the same, without the ONNX step, for a model
        whose ONNX export failed ("onnx_error" in the job): libtorch's fixture (torchscript.py)
    {"id": 9, "kind": "generation", "job": {...}}  -> the same, for a generation fixture (generation.py)
    {"id": 9, "kind": "optimum", "job": {...}}     -> the same, with optimum's graph of the model
        (optimum_graph.py; the job names optimum's venv as "optimum_python")
    {"id": 9, "kind": "cache", "job": {...}}       -> {"id": 9, "ok": true, "result": [{layers, tensors}, ...]}
        (the cache that fixture would hold, as the spec's `cache:` declares it: gen derive's)
    {"id": 9, "kind": "memory", "job": {"spec", "task", "checkpoint"}} -> {"id": 9, "ok": true, "result": {...}}
        (the architecture at its default size on the meta device: memory.py, for gen memory)
    failure                                        -> {"id": .., "ok": false, "error": "<one line>"}
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def end_with_parent() -> None:
    """Dies with the gen that started it, however gen ends (SIGTERM, SIGKILL, a crash): the
    kernel sends SIGKILL when the parent goes (Linux's PR_SET_PDEATHSIG). Without it a worker
    outlives a killed gen and keeps writing the fixture store. A parent that went before the
    call is caught by comparing with the parent gen named (HWMATRIX_PARENT_PID)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: stdin closing still ends the loop
        pass
    parent = os.environ.get("HWMATRIX_PARENT_PID")
    if parent and os.getppid() != int(parent):
        os._exit(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", action="store_true", help="answer jobs from stdin until it closes")
    args = parser.parse_args()
    if not args.serve:
        parser.print_help()
        return 2
    end_with_parent()
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the libraries print lands on stderr, never in the answers
    sys.stdout = sys.stderr
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    import components
    import export
    import generation
    import memory
    import optimum_graph
    import registry
    import torchscript
    from transformers.utils import logging

    logging.set_verbosity_error()
    # HWMATRIX_PROFILE=<file>: each job's time by step, one JSON line a job (profile_steps.py).
    profile = os.environ.get("HWMATRIX_PROFILE")
    if profile:
        import profile_steps

        timer = profile_steps.install({"export": export, "generation": generation})
    original_export_graph = generation.export_graph
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        answer = {"id": job.get("id")}
        stage = None
        started = timer.start() if profile else None
        try:
            if job["kind"] == "list":
                import transformers

                result = {"transformers": transformers.__version__, "rows": registry.registry_rows()}
            elif job["kind"] == "classify":
                result = registry.classify_only(job["model_type"])
            elif job["kind"] == "derive":
                layout = (job["inputs"], job["shapes"]) if "inputs" in job and "shapes" in job else None
                # (not named `export`: that is the module the export jobs below call)
                curated = job.get("export") or {}
                result = registry.derive(job["model_type"], overrides=job.get("tiny_config_overrides") or {}, layout=layout,
                                         drawn=curated.get("drawn_weights"), export_class=curated.get("class"),
                                         max_parameters=curated.get("max_parameters"))
                if job.get("components") and "known_issue" not in result:
                    result.update(components.derive_imported(job["model_type"], result, job["components"]))
                if "known_issue" in result:
                    # Where it stopped, as a value gen reads (never from the message's words):
                    # measuring the components runs the tiny model too.
                    result.setdefault("stage", "reference")
            elif job["kind"] == "export" and job["job"]["spec"].get("components"):
                components.export_model(job["job"])
                result = None
            elif job["kind"] == "export":
                export.export(job["job"])
                result = None
            elif job["kind"] == "optimum":
                optimum_graph.export_optimum(job["job"])
                result = None
            elif job["kind"] == "torchscript":
                torchscript.export_without_onnx(job["job"])
                result = None
            elif job["kind"] == "generation":
                # Where it stopped, as a value gen keeps with the error: torch.onnx's
                # exporters (generation.export_graph raised: every one tried failed), or
                # our exporter before them (a cache it cannot flatten).
                stage = "reference"
                generation.export_graph = _noting_export_failure(original_export_graph)
                try:
                    generation.export(job["job"])
                except _TorchOnnxFailed as failed:
                    stage = "export"
                    raise failed.error from None
                finally:
                    generation.export_graph = original_export_graph
                stage = None
                result = None
            elif job["kind"] == "cache":
                result = generation.measure_cache(job["job"])
            elif job["kind"] == "memory":
                result = memory.compute(job["job"])
            else:
                raise ValueError(f"unknown job kind {job['kind']!r}")
            answer.update(ok=True, result=result)
        except Exception as error:  # noqa: BLE001 - every error goes back to gen, none is swallowed
            traceback.print_exc()
            answer.update(ok=False, error=export._error_line(error))
            if stage:
                answer["stage"] = stage
        if profile:
            with open(profile, "a") as out:
                out.write(json.dumps(timer.record(started, job, answer["ok"])) + "\n")
        answers.write(json.dumps(answer, default=str) + "\n")
    return 0


class _TorchOnnxFailed(Exception):
    """generation.export_graph's error: every torch.onnx exporter it tried failed."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _noting_export_failure(export_graph):
    """export_graph, its failure marked as torch.onnx's (the stage gen keeps)."""

    def noting(*args, **kwargs):
        try:
            return export_graph(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - re-raised, marked
            raise _TorchOnnxFailed(error) from error

    return noting


if __name__ == "__main__":
    sys.exit(main())
