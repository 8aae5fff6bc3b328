"""Minimal reproductions of what stops torch.onnx on the architectures the export recipe cannot
get through: for each cause the report groups export failures by, a module of a few lines that
fails the same way, with the exporter, opset and the words of the error. test_repros.py checks
that each still fails so (with the torch and onnx versions requirements.txt pins), so a torch
upgrade that fixes one is noticed; `python repros.py` prints each with its error, ready for an
issue on pytorch/pytorch.

The report's export failures name the reproduction of their cause
(generator/results/src/report/export.rs `REPRODUCTIONS`).
"""

from __future__ import annotations

import io
import sys
import warnings
from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class Repro:
    name: str
    # What the architectures hit (`serves` lists some, from their evidence).
    what: str
    serves: tuple[str, ...]
    forward: Callable
    inputs: Callable  # a shape index (0, 1) to the example inputs
    dynamo: bool
    # A substring of the error torch.onnx (or ONNX Runtime, on shape 2) raises.
    error: str
    # Whether it fails only when the graph exported on shape 1 runs on shape 2.
    on_second_shape: bool = False


class Module(torch.nn.Module):
    def __init__(self, forward):
        super().__init__()
        self.body = forward

    def forward(self, *args):
        return self.body(*args)


def _split_by_counts(x, ids):
    # MoE experts: tokens split by how many each expert got; the legacy trace keeps the counts of the example.
    counts = torch.bincount(ids, minlength=4).tolist()
    return torch.cat([part * (i + 1) for i, part in enumerate(torch.split(x, counts))])


def _loop_over_sequence(x):
    # A recurrence written as a Python loop over the sequence (Mamba's slow path): unrolled to the example's length.
    return torch.stack([x[:, i] * 2 for i in range(x.shape[1])], 1)


def _guard_on_data(x):
    # A branch on a value computed from the data (routing, masks): torch.export cannot trace both sides.
    n = int((x > 0).sum())
    return x[:n] * 2 if n > 0 else x


def _list_as_long_as_the_batch(x):
    # A tensor made from a Python list of the batch's length (Chroma's guidance ids,
    # `torch.tensor([0] * batch_size)`): the legacy trace keeps the example's list as a constant.
    return torch.cat([x, torch.tensor([0.0] * x.shape[0])[:, None]], 1)


def _ints(*shape):
    return lambda index: (torch.randint(0, 4, (shape[0] + index, *shape[1:]), generator=torch.Generator().manual_seed(index)),)


def _floats(*shape):
    return lambda index: (torch.randn(shape[0] + index, *shape[1:], generator=torch.Generator().manual_seed(index)),)


REPROS = (
    Repro("polar", "complex rotary embeddings built with torch.polar (patches.py carries them as parts)", ("llama4_text", "deepseek_v2"),
          lambda r, t: torch.view_as_real(torch.polar(r, t)), lambda i: (torch.ones(2, 4), torch.randn(2, 4)), False,
          "Exporting the operator 'aten::polar' to ONNX"),
    Repro("complex_dynamo", "complex tensors in rotary embeddings (dynamo)",
          ("llama4_text", "transformer_qwenimage", "transformer_z_image"),
          lambda r, t: torch.view_as_real(torch.polar(r, t).unsqueeze(0)), lambda i: (torch.ones(2, 4), torch.randn(2, 4)), True,
          "complex"),
    Repro("cummax", "torch.cummax (grounding-dino's text masks)", ("grounding-dino", "mm-grounding-dino"),
          lambda x: torch.cummax(x, dim=-1).values, _floats(2, 6), True, "aten.cummax"),
    Repro("linalg_qr", "torch.linalg.qr", ("transformer_wan_animate",), lambda x: torch.linalg.qr(x).Q, _floats(2, 4, 4), True,
          "linalg_qr"),
    Repro("bitwise_or", "| on integer tensors (legacy)", ("cpmant",), lambda x: x | (x + 1), _ints(2, 3), False,
          "bitwise OR for non-boolean"),
    Repro("data_dependent_guard", "a branch on a value computed from the data (torch.export)",
          ("longformer", "qwen3_5", "granitemoehybrid", "siglip2", "transformer_qwenimage"),
          _guard_on_data, _floats(3, 4), True, "data-dependent"),
    Repro("split_by_counts", "torch.split by counts computed from the data (MoE experts, legacy trace)",
          ("dbrx", "flex_olmo", "zaya", "aria_text", "beam"),
          _split_by_counts, lambda i: (torch.randn(6 + i, 3), torch.arange(6 + i) % (3 + i)), False,
          "Cannot split using values in 'split'", on_second_shape=True),
    Repro("list_as_long_as_the_batch", "a tensor made from a Python list as long as the batch (legacy trace)",
          ("transformer_chroma",), _list_as_long_as_the_batch, _floats(1, 3), False, "Non concat axis dimensions must match",
          on_second_shape=True),
    Repro("loop_over_sequence", "a Python loop over the sequence (Mamba's slow path, legacy trace; patches.py's scans replace it)",
          ("mamba", "falcon_mamba", "zamba"),
          _loop_over_sequence, lambda i: (torch.randn(2, 5 + 3 * i, 4),), False, "shape 2: ONNX Runtime's output",
          on_second_shape=True),
)

def reproduce(repro: Repro) -> str:
    """Exports the repro as the recipe would and returns the error it fails with, in one line
    with its root cause ("" if it exports and matches on both shapes)."""
    import contextlib

    import onnxruntime

    from export import _error_line

    module = Module(repro.forward).eval()
    example = repro.inputs(0)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    quiet = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            warnings.simplefilter("ignore")
            buffer = io.BytesIO()
            if repro.dynamo:
                program = torch.onnx.export(module, example, dynamo=True, opset_version=18, external_data=False)
                buffer.write(program.model_proto.SerializeToString())
            else:
                # Every axis dynamic, as the recipe declares a spec's axes.
                names = [f"x{i}" for i in range(len(example))]
                torch.onnx.export(module, example, buffer, dynamo=False, opset_version=18, input_names=names,
                                  dynamic_axes={n: {d: f"{n}_{d}" for d in range(t.dim())} for n, t in zip(names, example)})
        session = onnxruntime.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
        for index in (0, 1):
            inputs = repro.inputs(index)
            feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
            got = session.run(None, feeds)[0]
            expected = module(*inputs)
            if got.shape != tuple(expected.shape) or not torch.allclose(torch.from_numpy(got), expected, atol=1e-5):
                return f"shape {index + 1}: ONNX Runtime's output {list(got.shape)} differs from PyTorch's {list(expected.shape)}"
    except Exception as error:  # noqa: BLE001 - the error is what is reproduced
        return _error_line(error)
    return ""


def main() -> int:
    import onnx

    print(f"torch {torch.__version__}, onnx {onnx.__version__}")
    for repro in REPROS:
        error = reproduce(repro)
        print(f"\n## {repro.name}: {repro.what} ({'dynamo' if repro.dynamo else 'legacy'} exporter, opset 18)")
        print(f"   seen in: {', '.join(repro.serves)}")
        print(f"   {error or 'exports and matches (no longer reproduces)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
