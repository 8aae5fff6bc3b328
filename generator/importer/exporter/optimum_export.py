"""One model exported by optimum's ONNX exporter as transformers.js's conversion script did
(scripts/convert.py, until transformers.js 4 removed it): `main_export` with the task
optimum infers from the model's class (the script's `task="auto"` infers it so from a hub
checkpoint; a local folder needs it named), optimum's default opset and its validation on,
then every graph slimmed with onnxslim and saved with optimum's `check_and_save_model`.

Runs in optimum's venv (<cache>/venv-optimum: optimum-onnx and the transformers it pins),
started by optimum_graph.py in the exporter's venv for each model:

    python optimum_export.py MODEL_DIR OUT_DIR
    python optimum_export.py --supported


MODEL_DIR holds the model saved by the exporter's transformers (config.json, weights).
The last line of standard output is one JSON object: the task, the opset, the graphs
written, optimum's validation ("passed" or its error), onnxslim's outcome per graph and the
versions; on a failure, {"error": "<optimum's whole error>"} and exit 1. The libraries'
own logging goes to standard error.
"""

from __future__ import annotations

import json
import os
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
    validation = "passed"
    try:
        main_export(str(model_dir), output=str(out_dir), task=task, do_validation=True, device="cpu")
    except Exception as error:  # noqa: BLE001
        # optimum saves the graphs before it validates them: a validation failure leaves
        # them (transformers.js's script stopped there, before quantizing).
        graphs = sorted(out_dir.glob("*.onnx")) if out_dir.is_dir() else []
        if not graphs or "validation" not in str(error).lower():
            raise
        validation = " ".join(str(error).split())
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
        "opset": opsets[0] if len(opsets) == 1 else opsets,
        "graphs": graphs,
        "validation": validation,
        "onnxslim": slimmed,
        "versions": {name: version(name) for name in ("optimum-onnx", "optimum", "transformers", "torch", "onnx", "onnxslim")},
    }


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
