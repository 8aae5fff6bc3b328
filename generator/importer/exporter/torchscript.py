"""A fixture for the libtorch engine alone, for a model whose ONNX export failed.

libtorch runs the TorchScript trace of the model, not its ONNX graph, so torch.onnx failing
says nothing about libtorch: the trace is tried whatever ONNX did. This builds the fixture
export.py builds (the same wrapper, inputs, references for both shapes and trace) without the
ONNX step: `meta.json` says why in `onnx.error`, has no model.onnx and no precision variants,
and the libtorch cells run on it. A trace that fails is the job's error (gen records it as the
model's `torchscript_export` entry).

The fixture carries the model's usual key: its contents are export.py's, run with the ONNX
step replaced, so export.py's source (in the key) is what makes it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import export


def export_without_onnx(job: dict) -> None:
    """`job` is an export job (export.export's) with `onnx_error`, the ONNX exporters' failure."""
    onnx_error = job["onnx_error"]

    def no_onnx(*_args, **_kwargs):
        # export.export's ONNX step, skipped: no graph, and the failure as the exporters' errors.
        return {"name": None}, {"onnx": onnx_error}

    original = export.export_onnx
    export.export_onnx = no_onnx
    try:
        export.export(job)
    finally:
        export.export_onnx = original
    out_dir = Path(job["out_dir"])
    meta_path = out_dir / "meta.json"
    meta = json.loads(meta_path.read_text())
    traced = meta.get("torchscript") or {}
    if "file" not in traced:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise RuntimeError(f"torch.jit.trace: {traced.get('error', 'no TorchScript file')}")
    # What the fixture lacks and why, for gen (never taken for a full fixture) and for readers.
    meta["onnx"] = {"error": onnx_error}
    for name in ("int8", "int8_avx2", "fp16", "q4", "q4f16", "qdq8"):
        meta.pop(name, None)
    meta.pop("integer_nodes", None)
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
