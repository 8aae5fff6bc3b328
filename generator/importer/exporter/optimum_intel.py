"""optimum-intel's conversion of a fixture on optimum's graph: the saved tiny model the fixture
keeps in `hf/` (`gen fixtures --graph optimum`) converted by `optimum.exporters.openvino.
main_export` with optimum's task, its model patchers and its inputs (optimum's, which the
fixture feeds), as `optimum-cli export openvino --task <task>` converts a checkpoint. The rest
is openvino_pytorch.py's: the IR saved float32 as `model.ov_pytorch.xml`, NNCF's int8 and int4
of it, and `openvino_pytorch.json` saying how (its `method`: optimum-intel's call) or the
converter's whole error. A script of its own so that a change to this route remakes only the
conversions of optimum's graphs (its key is this script's and openvino_pytorch.py's).

Run by `gen fixtures` with optimum-intel's venv's Python (requirements-optimum-intel.txt,
`bash tests/setup.sh optimum-intel`), which reads OpenVINO's and the exporter's venvs after its
own:

    python optimum_intel.py JOBS.json
"""

from __future__ import annotations

import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import openvino_pytorch

METHOD = "optimum.exporters.openvino.main_export(hf/, task={task}{stateless}) (optimum-intel {version}), float32"


def convert(ov, torch, np, fixture: Path, meta: dict):
    """The saved tiny model converted by optimum-intel; its IR's inputs and outputs carry
    optimum's names, which the fixture's inputs and references use. A decoder exported with
    its cache (optimum's `-with-past` task) is converted without optimum-intel's default
    stateful form (the cache kept in the model's state, fed a `beam_idx`): the fixture feeds
    the cache as inputs, as optimum's ONNX graph takes it (optimum-cli's `--disable-stateful`)."""
    from optimum.exporters.openvino import main_export

    task = meta["graph"]["task"]
    with_past = task.endswith("-with-past")
    with tempfile.TemporaryDirectory() as scratch:
        main_export(str(fixture / "hf"), scratch, task=task, local_files_only=True,
                    **({"stateful": False} if with_past else {}))
        model = ov.Core().read_model(str(Path(scratch) / "openvino_model.xml"))
    fitted = fit_position_ids(ov, model, {i["name"] for i in meta["inputs"]})
    takes = sorted(name for port in model.inputs for name in port.get_names())
    fed = sorted(i["name"] for i in meta["inputs"])
    if takes != fed:
        raise ValueError(f"optimum-intel's model takes {takes}, optimum's ONNX graph (the fixture's inputs) {fed}")
    gives = {name for port in model.outputs for name in port.get_names()}
    missing = [o["name"] for o in meta["outputs"] if o["name"] not in gives]
    if missing:
        raise ValueError(f"optimum-intel's model gives no {missing} (it gives {sorted(gives)})")
    model.set_friendly_name(openvino_pytorch.STEM)
    return model, METHOD.format(task=task, stateless=", stateful=False" if with_past else "",
                                version=version("optimum-intel")) + fitted


def fit_position_ids(ov, model, fed: set[str]) -> str:
    """Where optimum-intel's model and optimum's ONNX graph (whose inputs the fixture holds)
    disagree on `position_ids` alone, the IR is fitted to the fixture as their runtimes feed
    them, without changing what it computes: one that takes position_ids the fixture lacks
    gets them computed as the reference's forward fills them in (0..length for each row; the
    fixture's graph computes them so inside), and one that lacks those the fixture has gets a
    parameter nothing reads (optimum's graph takes them and the reference is 0..length too:
    optimum_graph.py derives them so). Any other difference stays the harness's error. Returns
    what was fitted, for the record's `method` ("" where nothing was)."""
    import numpy as np
    from openvino import opset13 as ops

    params = {name: param for param in model.get_parameters() for name in param.output(0).get_names()}
    if "position_ids" in params and "position_ids" not in fed and "input_ids" in params:
        def i64(value):  # a constant: a scalar, or a list as a 1-d tensor
            return ops.constant(np.array(value, dtype=np.int64))

        shape = ops.shape_of(params["input_ids"], "i64")
        length = ops.gather(shape, i64([1]), i64(0))
        positions = ops.range(i64(0), ops.squeeze(length, i64([0])), i64(1), "i64")
        computed = ops.broadcast(ops.unsqueeze(positions, i64([0])), shape)
        for target in list(params["position_ids"].output(0).get_target_inputs()):
            target.replace_source_output(computed.output(0))
        model.remove_parameter(params["position_ids"])
        note = "; its position_ids computed as 0..length, which the fixture does not feed"
    elif "position_ids" not in params and "position_ids" in fed:
        unread = ops.parameter([-1, -1], ov.Type.i64, name="position_ids")
        unread.output(0).get_tensor().set_names({"position_ids"})
        model.add_parameters([unread])
        note = "; position_ids, which the fixture feeds, taken and not read"
    else:
        return ""
    model.validate_nodes_and_infer_types()
    return note


if __name__ == "__main__":
    sys.exit(openvino_pytorch.main(convert))
