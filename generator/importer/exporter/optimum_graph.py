"""A fixture whose graph is optimum's: the tiny model our exporter builds (the same weights,
inputs and PyTorch references as its own fixture), exported by optimum's ONNX exporter as
transformers.js's conversion did (optimum_export.py, run in optimum's own venv), with the
formats deployments ship made from that graph by the same tools as ours (export.py's
`precision_variants`). The cells run on it as on ours (`HWMATRIX_FIXTURES` at the root
`gen fixtures --graph optimum` writes), so each outcome is of the graph users deploy.

The worker (worker.py, kind "optimum") runs `export(job)` with export.py's job plus
`optimum_python`, the venv optimum_export.py runs in. What the two graphs differ in is kept
in meta.json's `graph`: the task and opset optimum chose, the spec's outputs the graph has
and lacks (only those it has are compared: their references are the fixture's), the inputs
it takes, optimum's own validation and onnxslim's outcome. A graph that takes an input the
spec does not declare, or has none of its outputs, is no fixture: the job fails with why.
The saved tiny model is kept as `hf/`, for optimum-intel's conversion (openvino_pytorch.py).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import onnx
import torch

import export

def export_optimum(job: dict) -> None:
    spec = job["spec"]
    seed = int(job.get("seed", 0))
    out_dir = Path(job["out_dir"])
    tmp = out_dir.with_name(f"{out_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        _export(job, spec, seed, out_dir, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _export(job: dict, spec: dict, seed: int, out_dir: Path, tmp: Path) -> None:
    exportable = _supported(job["optimum_python"])
    names = exportable["versions"]
    # optimum's registry spells model types with hyphens or underscores, as transformers does not always.
    if spec["model_type"].replace("_", "-") not in {m.replace("_", "-") for m in exportable["model_types"]}:
        raise LookupError(f"optimum-onnx {names['optimum-onnx']} has no ONNX export config for {spec['model_type']} "
                          f"(it registers {len(exportable['model_types'])} model types)")
    if spec["export"]["class"] not in exportable["classes"]:
        raise LookupError(f"transformers {names['transformers']} (optimum-onnx {names['optimum-onnx']}'s pin) has no "
                          f"{spec['export']['class']}: the architecture is newer than the optimum release that exports it")
    if spec["export"].get("fixed_inputs"):
        raise ValueError("its spec fixes inputs as Python values (export.fixed_inputs), which optimum's graph takes as tensors: not compared")
    model, config = export.build_model(spec, seed)
    input_names = [i["name"] for i in spec["inputs"]]
    output_names = [o["name"] for o in spec["outputs"]]
    # The same inputs as the model's own fixture (export.export, same seed); their references
    # once the graph says which of them it takes.
    shapes = [({k: int(v) for k, v in sorted(shape.items())}, export.build_inputs(spec, shape, config, seed + index, index, model))
              for index, shape in enumerate(spec["shapes"])]

    model.save_pretrained(tmp / "hf")
    graph = _optimum_export(job["optimum_python"], tmp / "hf", tmp / "optimum")
    if graph["graphs"] != ["model.onnx"]:
        raise ValueError(f"optimum made {graph['graphs']} for task {graph['task']}, not one model.onnx: not compared yet")
    shutil.move(tmp / "optimum" / "model.onnx", tmp / "model.onnx")
    shutil.rmtree(tmp / "optimum")
    # The saved tiny model stays in the fixture (`hf/`): optimum-intel converts it for the
    # openvino platform's `ov_pytorch` cells (openvino_pytorch.py), as its users convert a
    # checkpoint.

    onnx_model = onnx.load(str(tmp / "model.onnx"), load_external_data=False)
    initializers = {i.name for i in onnx_model.graph.initializer}
    takes = [i.name for i in onnx_model.graph.input if i.name not in initializers]
    # The graph's own names of its inputs' free dimensions ("" for a fixed size): optimum's
    # (`batch_size`, `sequence_length`), not our spec's. A provider that builds static graphs
    # (WebNN, QNN's HTP) fixes them by these names, as transformers.js's users do.
    input_axes = {i.name: [d.dim_param if d.HasField("dim_param") else "" for d in i.type.tensor_type.shape.dim]
                  for i in onnx_model.graph.input if i.name in takes}
    gives = [o.name for o in onnx_model.graph.output]
    # Inputs optimum's graph takes that the spec leaves to the model, fed as the reference's
    # forward filled them in: position_ids 0..length (no cache), attention_mask all ones.
    sequence = next((name for name in ("input_ids", "input_values") if name in input_names), None)
    derived = {name for name in ("position_ids", "attention_mask")
               if name in takes and name not in input_names and sequence is not None}
    for _, inputs in shapes:
        batch, length = inputs[sequence].shape[:2] if sequence else (0, 0)
        if "position_ids" in derived:
            inputs["position_ids"] = torch.arange(length, dtype=torch.int64).expand(batch, length).contiguous()
        if "attention_mask" in derived:
            inputs["attention_mask"] = torch.ones(batch, length, dtype=torch.int64)
    # A decoder exported with its cache (optimum's `-with-past` task, as transformers.js ships
    # it) takes the cache of earlier steps: empty at the first step (past_sequence_length 0),
    # as transformers.js feeds it; what it gives (present.*) is not compared.
    past = {i.name: i for i in onnx_model.graph.input if i.name in takes and i.name.startswith("past_key_values.")}
    for _, inputs in shapes:
        batch = inputs[sequence].shape[0] if sequence else None
        for name, declared in past.items():
            inputs[name] = _empty_cache(name, declared, batch)
    derived |= set(past)
    undeclared = [name for name in takes if name not in input_names and name not in derived]
    if undeclared:
        raise ValueError(f"optimum's graph (task {graph['task']}) takes inputs the spec does not declare: {undeclared} (it takes {takes}; the spec declares {input_names})")
    compared = [name for name in output_names if name in gives]
    if not compared:
        raise ValueError(f"optimum's graph (task {graph['task']}) has none of the spec's outputs: it gives {gives}, the spec declares {output_names}")

    # The references of the inputs the graph takes: a declared input it dropped (GPT-2's
    # token_type_ids) is left to the model's default, as a user of the graph cannot feed it.
    given = [name for name in input_names if name in takes]
    ignored = [name for name in input_names if name not in takes]
    wrapper = export.NamedOutputs(model, given, output_names).eval()
    references = []
    for _, inputs in shapes:
        with torch.no_grad():
            references.append(dict(zip(output_names, wrapper(*(inputs[name] for name in given)))))

    shapes_meta = []
    for index, ((axes, inputs), outputs) in enumerate(zip(shapes, references)):
        suffix = "" if index == 0 else str(index + 1)
        shapes_meta.append({
            "axes": axes,
            "inputs": export.save_npy_dir(tmp / f"inputs{suffix}", {k: v for k, v in inputs.items() if k in takes}),
            "outputs": export.save_npy_dir(tmp / f"outputs{suffix}", {k: v for k, v in outputs.items() if k in compared}),
        })
    # Our exporter's own check of a graph (onnxruntime's CPU provider against the references),
    # kept as the graph's note rather than refusing it: the cells measure what it gives.
    try:
        export.verify_with_onnxruntime(tmp, len(shapes), job.get("tolerance") or export.DEFAULT_TOLERANCE)
        verified = "passed"
    except Exception as error:  # noqa: BLE001
        verified = export._error_line(error)
    missing = [name for name in output_names if name not in gives]
    meta = {
        "model_type": spec["model_type"],
        # Not "tiny-random": the runtime does not ask whether our exporter built it from this
        # spec (it did not). Every record of a check on it carries this line: the tool, the
        # task and opset it chose, and the spec's outputs its graph lacks (never compared).
        "source": f"optimum-onnx {graph['versions']['optimum-onnx']} ({graph['task']}, opset {graph['opset']}"
                  + (f"; not its {graph['deployed']['task']} graphs" if "deployed" in graph else "")
                  + (f"; without {', '.join(missing)}" if missing else "")
                  + (f"; takes no {', '.join(ignored)}" if ignored else "") + ")",
        "class": spec["export"]["class"],
        "seed": seed,
        "cache_key": job.get("cache_key"),
        "graph": {
            **graph,
            "weights": f"tiny-random (seed {seed}), saved by transformers {export.transformers.__version__}",
            "inputs": takes,
            "input_axes": input_axes,
            "inputs_derived": sorted(derived),
            "inputs_ignored": ignored,
            "outputs": compared,
            "outputs_missing": missing,
            "outputs_extra": [name for name in gives if name not in output_names],
            "exporter_check": verified,
        },
        **export.precision_variants(tmp),
        "integer_nodes": export.integer_nodes(tmp / "model.onnx"),
        "inputs": shapes_meta[0]["inputs"],
        "outputs": shapes_meta[0]["outputs"],
        "shapes": shapes_meta,
        "versions": export.library_versions(),
        "config": export.config_json(config),
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)


def _empty_cache(name: str, declared, batch: int | None) -> torch.Tensor:
    """One cache input at the first step: its graph's shape with the past's length 0 and the
    inputs' batch; any other named size is not one this harness knows how to fill."""
    sizes = []
    for dim in declared.type.tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            sizes.append(dim.dim_value)
        elif dim.dim_param == "past_sequence_length":
            sizes.append(0)
        elif dim.dim_param == "batch_size" and batch is not None:
            sizes.append(batch)
        else:
            raise ValueError(f"optimum's graph's cache input {name} has a size {dim.dim_param!r} the first step does not fix")
    dtype = onnx.helper.tensor_dtype_to_np_dtype(declared.type.tensor_type.elem_type)
    return torch.from_numpy(numpy.zeros(sizes, dtype=dtype))


@functools.cache
def _supported(python: str) -> dict:
    """What optimum's venv can export at all (asked once a worker)."""
    return _run_optimum(python, ["--supported"])


def _optimum_export(python: str, model_dir: Path, out: Path) -> dict:
    """optimum_export.py in optimum's venv; its answer, or its whole error raised."""
    return _run_optimum(python, [str(model_dir), str(out)])


def _run_optimum(python: str, args: list[str]) -> dict:
    script = Path(__file__).resolve().parent / "optimum_export.py"
    run = subprocess.run([python, str(script), *args], capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    lines = run.stdout.strip().splitlines()
    answer = json.loads(lines[-1]) if lines else {"error": f"optimum_export.py exited {run.returncode}: {run.stderr.strip()[-2000:]}"}
    if "error" in answer:
        raise RuntimeError(f"optimum's exporter: {answer['error']}")
    return answer


if __name__ == "__main__":
    sys.exit(f"run by worker.py (kind optimum); see {__file__}'s docstring")
