"""OpenVINO's own conversion of a fixture's PyTorch model, as optimum-intel converts one: the
module given to `openvino.convert_model` (OpenVINO's PyTorch frontend), never an ONNX graph.
What the openvino platform's third engine (`openvino::ov_pytorch`) runs, beside OpenVINO's ONNX
frontend on our graph (`openvino::ov`) and ONNX Runtime's OpenVINO provider (`openvino::onnx`).

Runs in the OpenVINO runtime's venv (openvino and nncf) with the exporter venv's packages
(torch) after its own, so nncf_variants.py's venv stays as it is: `gen fixtures` calls it after
the export, with the fixtures whose conversion is missing or was made by another version of this
script (`key`).

    python openvino_pytorch.py JOBS.json

JOBS.json: {"key": "...", "dirs": ["<fixture>", ...], "torch_packages": "<site-packages>"}.
For each fixture it loads the TorchScript module the exporter traced (model.pt: the spec's
inputs in order, its outputs in order, the recipe's patches applied), converts it with
`openvino.convert_model(module, example_input=<the fixture's first inputs>)`, names the IR's
inputs and outputs by the spec's, and writes `model.ov_pytorch.xml`/`.bin` (float32, as
optimum-intel saves a model without a weight format), then NNCF's int8 and int4 formats of that
IR with nncf_variants.py's settings (optimum-intel's `--weight-format int8`/`int4`) as
`model.ov_pytorch.nncf_int8.xml` and `model.ov_pytorch.nncf_int4.xml`, and
`openvino_pytorch.json`: how each was made, or the converter's or NNCF's whole error.

On our fixtures optimum-intel itself is not run: its release (2.2.0) pins transformers below 5.6
and the fixtures are built with 5.23, whose modules it would have to rebuild. What it does with a
module is this call: trace it with TorchScript and convert the trace with the PyTorch frontend;
its model patchers (which replace a few modules' forward for tracing) are not applied, our
recipe's are. On a fixture of optimum's graph (`gen fixtures --graph optimum`, which keeps the
saved tiny model in `hf/`) it is optimum-intel itself that converts: optimum_intel.py, which
calls `main` with its own `convert`; the record's `method` says which of the two made the IR.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

import nncf_variants

# The converted model's file, beside the fixture's own graph; its NNCF formats are
# `model.ov_pytorch.<format>.xml`.
STEM = "model.ov_pytorch"
METHOD = "openvino.convert_model(torch.jit.load(model.pt), example_input=<inputs/>), inputs and outputs named by the spec"


def error_of(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(e)).strip()


def example_inputs(torch, np, fixture: Path, meta: dict) -> tuple:
    """The fixture's first shape's inputs in the spec's order (the module's arguments)."""
    return tuple(torch.from_numpy(np.load(fixture / "inputs" / f"{i['name']}.npy")) for i in meta["inputs"])


def separate_shared_outputs(ov, model) -> None:
    """Gives each output a tensor of its own: where the module returns one value twice
    (grounding-dino's init_reference_points and encoder_pred_boxes are one sigmoid), the
    outputs share a tensor, and naming the second would take the first's name away. A
    Convert to the same type (no change to the values) carries the later one."""
    from openvino import opset13

    seen = set()
    for result in model.get_results():
        source = result.input_value(0)
        key = (source.get_node().get_friendly_name(), source.get_index())
        if key in seen:
            copy = opset13.convert(source, source.get_element_type())
            result.input(0).replace_source_output(copy.output(0))
        seen.add(key)


def name_ports(model, meta: dict) -> None:
    """Names the IR's inputs and outputs as the spec does: the PyTorch frontend names inputs by
    TorchScript's argument names (`input_ids.1`) and outputs by value numbers, and the engine
    feeds and reads them by name."""
    for kind, ports, declared in (("inputs", model.inputs, meta["inputs"]), ("outputs", model.outputs, meta["outputs"])):
        if len(ports) != len(declared):
            raise ValueError(f"the converted model has {len(ports)} {kind}, the fixture {len(declared)} "
                             f"({[d['name'] for d in declared]})")
        for port, wanted in zip(ports, declared):
            port.get_tensor().set_names({wanted["name"]})


def convert(ov, torch, np, fixture: Path, meta: dict):
    """The fixture's module converted by OpenVINO's PyTorch frontend, and how."""
    if not (fixture / "model.pt").is_file():
        # The frontend converts a TorchScript trace (optimum-intel's conversion traces the
        # module with torch.jit.trace too): a module that does not trace is not converted.
        traced = meta.get("torchscript") or {}
        raise RuntimeError(f"no TorchScript trace of the module to convert: torch.jit.trace failed: {traced.get('error', 'no model.pt')}")
    module = torch.jit.load(str(fixture / "model.pt"))
    module.eval()
    with torch.no_grad():
        model = ov.convert_model(module, example_input=example_inputs(torch, np, fixture, meta))
    separate_shared_outputs(ov, model)
    name_ports(model, meta)
    # The converter names a model by a counter of the process (`Model416`), as its nodes
    # (names_by_place): a name of its own.
    model.set_friendly_name(STEM)
    return model, METHOD


def names_by_place(model) -> None:
    """Names every node by its type and its place in the model. The frontend names nodes
    with counters of the process (`Transpose_16741762`, `SliceAssign_24010/Reshape_3`, even
    on a constant), so the same module would make other bytes in another worker or order;
    the IR's bytes are its checks' evidence (content.json). The inputs' and outputs' tensor
    names, which the engine reads, are apart from these."""
    for index, op in enumerate(model.get_ordered_ops()):
        op.set_friendly_name(f"{op.get_type_name()}_{index}")


def save(ov, model, xml: Path) -> dict:
    names_by_place(model)
    # float32 throughout: save_model would otherwise store the weights in float16.
    ov.save_model(model, str(xml), compress_to_fp16=False)
    return {"file": xml.name, "bytes": xml.stat().st_size + xml.with_suffix(".bin").stat().st_size}


def nncf_format(nncf, model, fixture: Path, name: str, settings: dict) -> dict:
    """One of NNCF's formats of the converted model, made by nncf_variants.py's own code (which
    writes `model.<format>.xml` beside the path it is given: here a folder of its own)."""
    with tempfile.TemporaryDirectory() as scratch:
        made = nncf_variants.compress(nncf, model.clone(), Path(scratch) / "model.onnx", name, settings)
        if "file" in made:
            for suffix in (".xml", ".bin"):
                shutil.move(Path(scratch) / f"model.{name}{suffix}", fixture / f"{STEM}.{name}{suffix}")
            made["file"] = f"{STEM}.{name}.xml"
    return made


def main(convert=convert) -> int:
    """Converts each fixture of JOBS.json with `convert` (this script's, or optimum_intel.py's)
    and makes NNCF's formats of the IR."""
    jobs = json.loads(Path(sys.argv[1]).read_text())
    # Standard output carries our lines only: the libraries print progress and tables there.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    # torch from the exporter's venv, after this venv's own packages (numpy, openvino, nncf).
    sys.path.append(jobs["torch_packages"])
    # No usage telemetry: OpenVINO's converter and NNCF import it where it is installed (nncf
    # requires it), and it forks a process per event to reach Google Analytics, which fails
    # here; it tripled the conversion's CPU time (36 s for four fixtures, 20 s without).
    # Both fall back to a stub when it cannot be imported.
    sys.modules["openvino_telemetry"] = None
    import logging

    import nncf
    import numpy as np
    import openvino as ov
    import torch

    nncf.set_log_level(logging.WARNING)
    torch.set_num_threads(1)
    versions = {"openvino": ov.get_version(), "nncf": nncf.__version__, "torch": torch.__version__}
    for fixture in map(Path, jobs["dirs"]):
        meta = json.loads((fixture / "meta.json").read_text())
        record = {"key": jobs["key"], "fixture_key": meta.get("cache_key"), "versions": versions}
        for old in fixture.glob(f"{STEM}.*"):
            old.unlink()
        try:
            model, method = convert(ov, torch, np, fixture, meta)
            record["float32"] = {**save(ov, model, fixture / f"{STEM}.xml"), "method": method}
        except Exception as e:  # noqa: BLE001 - the record keeps the converter's whole error
            model = None
            record["float32"] = {"error": error_of(e)}
            traceback.print_exc()
        for name, settings in nncf_variants.FORMATS.items():
            if model is None:
                record[name] = {"error": "no converted model to compress (OpenVINO's PyTorch frontend failed: see float32)"}
                continue
            try:
                record[name] = nncf_format(nncf, model, fixture, name, settings)
            except Exception as e:  # noqa: BLE001 - the record keeps NNCF's whole error
                record[name] = {"error": error_of(e)}
                traceback.print_exc()
        (fixture / "openvino_pytorch.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        out.write(json.dumps({"dir": str(fixture), "errors": [n for n in ("float32", *nncf_variants.FORMATS) if "error" in record[n]]}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
