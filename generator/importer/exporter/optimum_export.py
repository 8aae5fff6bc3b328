"""One model exported by optimum's ONNX exporter as transformers.js's conversion script did
(scripts/convert.py, until transformers.js 4 removed it): `main_export` with the task
optimum infers from the model's class (the script's `task="auto"` infers it so from a hub
checkpoint; a local folder needs it named) and, as `auto` does, its `-with-past` form where
optimum registers one (a decoder's graph taking its cache), optimum's default opset and its
validation on, then every graph slimmed with onnxslim and saved with optimum's
`check_and_save_model`. Where the cache makes several graphs (an encoder-decoder's), the
task without it is exported too and the answer's `deployed` names what was shipped.

Runs in optimum's venv (<cache>/venv-optimum: optimum-onnx and the transformers it pins),
started by optimum_graph.py in the exporter's venv for each model:

    python optimum_export.py MODEL_DIR OUT_DIR
    python optimum_export.py --supported


MODEL_DIR holds the model saved by the exporter's transformers (config.json, weights).
The last line of standard output is one JSON object: the task, the opset, the graphs
written (and `deployed`: the cache's export's task and graphs where they are not these),
optimum's validation ("passed" or its error), onnxslim's outcome per graph and the versions;
on a failure, {"error": "<optimum's whole error>"} and exit 1. The libraries' own logging
goes to standard error.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback
from importlib.metadata import version
from pathlib import Path


def export(model_dir: Path, out_dir: Path) -> dict:
    import onnx
    import onnxslim
    from optimum.exporters.onnx import main_export
    from optimum.exporters.tasks import TasksManager
    from optimum.onnx.graph_transformations import check_and_save_model

    import transformers

    config = json.loads((model_dir / "config.json").read_text())
    architecture = config["architectures"][0]
    # The weights were saved by the exporter's transformers; this one must read every tensor
    # as it was saved, or optimum would export (and validate against) other weights.
    _, loading = getattr(transformers, architecture).from_pretrained(str(model_dir), output_loading_info=True)
    unread = {kind: sorted(keys)[:8] for kind, keys in loading.items() if keys and kind != "error_msgs"}
    if unread or loading.get("error_msgs"):
        raise RuntimeError(f"transformers {transformers.__version__} does not read the weights transformers "
                           f"{config.get('transformers_version')} saved as they are: {unread or loading['error_msgs']}")
    task = TasksManager.infer_task_from_model(getattr(transformers, architecture))
    # The script's task="auto" made main_export export a decoder with its cache where optimum
    # registers the `-with-past` task for the model type: the graph transformers.js ships
    # (one model.onnx taking past_key_values.*, fed empty at the first step).
    registered = TasksManager.get_supported_tasks_for_model_type(config["model_type"], "onnx", library_name="transformers")
    deployed = None
    if f"{task}-with-past" in registered:
        validation = _main_export(main_export, model_dir, out_dir, f"{task}-with-past")
        graphs = sorted(p.name for p in out_dir.glob("*.onnx"))
        if graphs == ["model.onnx"]:
            task = f"{task}-with-past"
        else:
            # An encoder-decoder's cache makes several graphs (encoder_model.onnx,
            # decoder_model_merged.onnx, ...), which the cells do not run together: the one
            # graph of the task without the cache is compared, and what is shipped is said.
            deployed = {"task": f"{task}-with-past", "graphs": graphs}
            shutil.rmtree(out_dir)
    if deployed is not None or not task.endswith("-with-past"):
        validation = _main_export(main_export, model_dir, out_dir, task)
    slimmed = {}
    for graph in sorted(out_dir.glob("*.onnx")):
        try:
            check_and_save_model(onnxslim.slim(str(graph)), str(graph))
            slimmed[graph.name] = "slimmed"
        except Exception as error:  # noqa: BLE001  (the script printed it and went on)
            slimmed[graph.name] = f"not slimmed: {' '.join(str(error).split())}"
    graphs = sorted(p.name for p in out_dir.glob("*.onnx"))
    opsets = sorted({o.version for g in graphs for o in onnx.load(str(out_dir / g), load_external_data=False).opset_import
                     if o.domain in ("", "ai.onnx")})
    return {
        "task": task,
        **({"deployed": deployed} if deployed else {}),
        "opset": opsets[0] if len(opsets) == 1 else opsets,
        "graphs": graphs,
        "validation": validation,
        "onnxslim": slimmed,
        "versions": {name: version(name) for name in ("optimum-onnx", "optimum", "transformers", "torch", "onnx", "onnxslim")},
    }


def _main_export(main_export, model_dir: Path, out_dir: Path, task: str) -> str:
    """main_export with optimum's validation on: "passed", or the validation's error where the
    graphs were saved (optimum saves them before it validates; transformers.js's script
    stopped there, before quantizing); any other failure raised."""
    try:
        main_export(str(model_dir), output=str(out_dir), task=task, do_validation=True, device="cpu")
    except Exception as error:  # noqa: BLE001
        graphs = sorted(out_dir.glob("*.onnx")) if out_dir.is_dir() else []
        if not graphs or "validation" not in str(error).lower():
            raise
        return " ".join(str(error).split())
    return "passed"


def supported() -> dict:
    """What this venv can export at all: the model types optimum registers an ONNX config for,
    and the transformers classes its pinned transformers has (a newer architecture's are not)."""
    import optimum.exporters.onnx.model_configs  # noqa: F401  (registers the ONNX configs)
    import transformers
    from optimum.exporters.tasks import TasksManager

    registered = TasksManager._SUPPORTED_MODEL_TYPE
    return {
        "model_types": sorted(m for m in registered if "onnx" in registered[m]),
        "classes": sorted(name for name in dir(transformers) if name[:1].isupper()),
        "versions": {name: version(name) for name in ("optimum-onnx", "optimum", "transformers")},
    }


def main() -> int:
    if sys.argv[1:] != ["--supported"] and len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    answer = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # what the libraries print goes to stderr, never into the answer
    sys.stdout = sys.stderr
    try:
        result = supported() if sys.argv[1:] == ["--supported"] else export(Path(sys.argv[1]), Path(sys.argv[2]))
    except Exception as error:  # noqa: BLE001
        traceback.print_exc()
        answer.write(json.dumps({"error": f"{type(error).__name__}: {' '.join(str(error).split())}"}) + "\n")
        return 1
    answer.write(json.dumps(result, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
