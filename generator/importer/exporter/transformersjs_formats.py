"""The formats transformers.js ships that export.py does not make: bnb4 (4-bit NormalFloat
weights, ONNX Runtime's MatMulBnb4), q2 (2-bit weights, MatMulNBits with bits 2) and q2f16
(q2 with float16 activations).

Runs in the exporter's venv (onnxruntime's quantization tools): `gen fixtures` calls it after
the export, with the fixtures whose formats are missing or were made by another version of this
script (`key`). A script of its own, not part of export.py, so that adding a format rebuilds no
fixture's export.

    python transformersjs_formats.py JOBS.json

JOBS.json: {"key": "...", "dirs": ["<fixture>", ...]}. For each fixture it quantizes model.onnx
and writes `model.bnb4.onnx`, `model.q2.onnx` and `model.q2f16.onnx` beside it, and `transformersjs.json`: how each
was made, or the quantizer's whole error. One JSON line per fixture goes to standard output
(progress); the libraries' own logging goes to standard error.

The settings are those of transformers.js's conversion (its scripts/quantize.py, v3): bnb4 is
`MatMulBnb4Quantizer` with NF4 in blocks of 64; q2, which its version 4 added, is q4's
`MatMulNBitsQuantizer` (blocks of 32, symmetric) with 2 bits; q2f16 is q2 through the float16
converter with float32 inputs and outputs kept, as export.py makes q4f16 from q4 (and
transformers.js its `<bits>f16` formats). q1 and q1f16 have no ONNX Runtime quantizer to make
them (MatMulNBits takes 2, 4 or 8 bits), so none is made.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path


def all_nodes(graph):
    """Every node of a graph and of its subgraphs (If, Loop, Scan bodies)."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.g is not None and attribute.g.node:
                yield from all_nodes(attribute.g)
            for sub in attribute.graphs:
                yield from all_nodes(sub)


def quantized(model, op_type: str, tool: str):
    """The model, after checking that the quantizer changed something: a graph without a
    MatMul with a constant 2-D weight would come out as the float32 model under another name,
    and its check would measure nothing of the format."""
    if not any(node.op_type == op_type for node in all_nodes(model.graph)):
        raise RuntimeError(f"{tool} quantized no node: the graph has no MatMul with a constant 2-D weight (its convolutions and Gemms stay float32)")
    return model


def bnb4(model):
    from onnxruntime.quantization.matmul_bnb4_quantizer import MatMulBnb4Quantizer

    quantizer = MatMulBnb4Quantizer(model, quant_type=MatMulBnb4Quantizer.NF4, block_size=64)
    quantizer.process()
    method = "onnxruntime.quantization.matmul_bnb4_quantizer.MatMulBnb4Quantizer, quant_type NF4, block_size 64"
    return quantized(quantizer.model.model, "MatMulBnb4", "MatMulBnb4Quantizer"), method


def q2(model):
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(model, bits=2, block_size=32, is_symmetric=True)
    quantizer.process()
    method = "onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer, bits 2, block_size 32, is_symmetric"
    return quantized(quantizer.model.model, "MatMulNBits", "MatMulNBitsQuantizer"), method


def q2f16(fixture: Path, record: dict):
    """q2's graph (made just before) converted to float16, inputs and outputs kept float32.
    Without a q2 model it gives q2's own error, so a graph q2 had nothing to quantize in has
    no q2f16 for the same reason."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    if "error" in record["q2"]:
        raise RuntimeError(f"no q2 model to convert: {record['q2']['error']}")
    method = "model.q2.onnx through onnxruntime.transformers.float16.convert_float_to_float16, keep_io_types"
    return convert_float_to_float16(onnx.load(str(fixture / "model.q2.onnx")), keep_io_types=True), method


def from_float32(make):
    """A format a quantizer makes from model.onnx (each quantizer changes the model it is
    given: a fresh copy each)."""
    def made(fixture: Path, _record: dict):
        import onnx

        return make(onnx.load(str(fixture / "model.onnx")))
    return made


# In order: q2f16 converts the q2 model written before it.
FORMATS = {"bnb4": from_float32(bnb4), "q2": from_float32(q2), "q2f16": q2f16}


def main() -> int:
    jobs = json.loads(Path(sys.argv[1]).read_text())
    # Standard output carries our lines only: the libraries print progress there.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    import onnx
    import onnxruntime

    versions = {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__}
    for fixture in map(Path, jobs["dirs"]):
        meta = json.loads((fixture / "meta.json").read_text())
        record = {"key": jobs["key"], "fixture_key": meta.get("cache_key"), "versions": versions}
        for name, make in FORMATS.items():
            path = fixture / f"model.{name}.onnx"
            path.unlink(missing_ok=True)
            try:
                model, method = make(fixture, record)
                onnx.save(model, str(path))
                record[name] = {"file": path.name, "method": method, "bytes": path.stat().st_size}
            except Exception as e:  # noqa: BLE001 - the record keeps the quantizer's whole error
                record[name] = {"error": "".join(traceback.format_exception_only(e)).strip()}
                traceback.print_exc()
        (fixture / "transformersjs.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        out.write(json.dumps({"dir": str(fixture), "errors": [n for n in FORMATS if "error" in record[n]]}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
