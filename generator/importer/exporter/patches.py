"""Patches for export: small, named rewrites of PyTorch functions that torch.onnx cannot
translate, each computing the same thing with operators ONNX has, the way optimum's
ModelPatcher rewrites a model for its exporter.

A patch never changes what the model computes: the references of a fixture are computed
before any patch is applied, and the patched export is checked against them like every other
(`export.verify_with_onnxruntime`, on both shapes); test_patches.py checks each patched function
against the original in PyTorch. The export recipe applies them only in its last attempts,
after the unpatched exporters failed, so a model the standard exporters get through keeps
their graph, and meta.json names the patches a graph was exported with.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable

import torch


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """`F.rms_norm` in elementwise ops and a mean: the legacy exporter has no `aten::rms_norm`
    below opset 23 (ONNX's RMSNormalization), and ONNX Runtime Web has no opset 23."""
    dims = tuple(range(-len(normalized_shape), 0))
    if eps is None:
        eps = torch.finfo(input.dtype).eps
    out = input * torch.rsqrt(input.pow(2).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """`torch.isin` as a broadcast comparison: the legacy exporter has no `aten::isin`, and
    torch.export decomposes it into `searchsorted`, which ONNX has not."""
    elements = torch.as_tensor(elements)
    test_elements = torch.as_tensor(test_elements, device=elements.device)
    found = (elements.unsqueeze(-1) == test_elements.reshape(-1)).any(-1)
    return ~found if invert else found


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """`torch.diff` as slices and a subtraction (`!=` for booleans, as torch does)."""
    parts = [p for p in (prepend, input, append) if p is not None]
    x = torch.cat(parts, dim) if len(parts) > 1 else input
    dim = dim % x.dim()
    head = tuple([slice(None)] * dim + [slice(1, None)])
    tail = tuple([slice(None)] * dim + [slice(None, -1)])
    for _ in range(n):
        x = x[head] != x[tail] if x.dtype == torch.bool else x[head] - x[tail]
    return x


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """`torch.linalg.solve_triangular` (left-hand side) by substitution, one row at a time:
    ONNX has no triangular solve. The gated delta rule (Qwen3-Next, Qwen3.5) solves one system
    per chunk of 64 tokens, so the graph grows by one small matmul per row."""
    if not left or out is not None:
        return _originals["torch.linalg.solve_triangular"](A, B, upper=upper, left=left,
                                                             unitriangular=unitriangular, out=out)
    n = A.shape[-1]
    order = range(n - 1, -1, -1) if upper else range(n)
    solved = None  # rows of X found so far, in `order`
    for step, i in enumerate(order):
        row = B[..., i:i + 1, :]
        if solved is not None:
            known = A[..., i:i + 1, i + 1:] if upper else A[..., i:i + 1, :i]
            if upper:
                # rows found so far are n-1 .. i+1: flip them into column order
                row = row - known @ solved.flip(-2)
            else:
                row = row - known @ solved
        if not unitriangular:
            row = row / A[..., i:i + 1, i:i + 1]
        solved = row if solved is None else torch.cat([solved, row], -2)
    return solved.flip(-2) if upper else solved


def _resize_aa(mode: str, cubic_coeff_a: float):
    """A legacy-exporter symbolic for PyTorch's antialiased resize (`interpolate(...,
    antialias=True)`): ONNX's Resize has `antialias` from opset 18, and torch.onnx's legacy
    exporter never learnt to emit it. PyTorch renormalises the filter over the pixels inside
    the image at its borders, which is Resize's `exclude_outside` (without it the border
    pixels differ by up to 0.15 on unit-variance inputs: test_patches.py)."""
    from torch.onnx._internal.torchscript_exporter import symbolic_helper as helper

    def symbolic(g, input, output_size, align_corners, *scales):
        if helper._maybe_get_const(align_corners, "b"):
            raise RuntimeError("antialiased resize with align_corners=True has no ONNX Resize equivalent")
        batch_channels = helper._slice_helper(g, g.op("Shape", input), axes=[0], starts=[0], ends=[2])
        size = g.op("Cast", output_size, to_i=7)  # INT64
        sizes = g.op("Concat", batch_channels, size, axis_i=0)
        none = helper._optional_input_placeholder_tensor(g)
        return g.op("Resize", input, none, none, sizes, mode_s=mode, antialias_i=1, exclude_outside_i=1,
                    coordinate_transformation_mode_s="half_pixel", cubic_coeff_a_f=cubic_coeff_a)

    return symbolic


@dataclass(frozen=True)
class Patch:
    """One rewrite: what it replaces, the architectures it was written for, and how."""

    name: str
    replaces: str
    serves: tuple[str, ...]
    function: Callable | None = None  # a Python replacement of `replaces`
    symbolic: Callable | None = None  # or a legacy-exporter symbolic for the aten op `replaces`


PATCHES = (
    Patch("rms_norm", "torch.nn.functional.rms_norm",
          ("transformer_chroma", "transformer_ltx", "transformer_ltx2", "transformer_hidream_image",
           "transformer_joyimage_edit_plus", "transformer_sana_wm_refiner"), function=rms_norm),
    Patch("isin", "torch.isin", ("grounding-dino", "mm-grounding-dino"), function=isin),
    Patch("diff", "torch.diff", ("mimi", "whisper"), function=diff),
    Patch("solve_triangular", "torch.linalg.solve_triangular",
          ("qwen3_5", "qwen3_5_moe", "qwen3_next", "olmo_hybrid"), function=solve_triangular),
    Patch("antialiased_bilinear_resize", "aten::_upsample_bilinear2d_aa",
          ("siglip2", "siglip2_vision_model", "lfm2_vl", "cosmos3_edge_vision"), symbolic=_resize_aa("linear", -0.5)),
    Patch("antialiased_bicubic_resize", "aten::_upsample_bicubic2d_aa", ("deepseek_ocr2",),
          symbolic=_resize_aa("cubic", -0.5)),
)

# The unpatched functions, for the replacements that fall back on them.
_originals: dict[str, Callable] = {}
# The patches the model called since `applied` began: meta.json names these, not all.
_called: set[str] = set()


def used() -> set[str]:
    """The names of the patches called during the last `applied` block."""
    return set(_called)


def _counting(patch: Patch) -> Callable:
    def call(*args, **kwargs):
        _called.add(patch.name)
        return patch.function(*args, **kwargs)

    return call


def _owner(path: str):
    module, _, attribute = path.rpartition(".")
    owner = torch
    for part in module.split(".")[1:]:
        owner = getattr(owner, part)
    return owner, attribute


def _counting_symbolic(patch: Patch) -> Callable:
    def symbolic(*args):
        _called.add(patch.name)
        return patch.symbolic(*args)

    return symbolic


@contextlib.contextmanager
def applied(opset: int, patches=PATCHES):
    """Applies every patch for the duration of a block (an export), and restores PyTorch after
    it, however the block ends. Yields the patches' names."""
    undo = []
    _called.clear()
    try:
        for patch in patches:
            if patch.function is not None:
                owner, attribute = _owner(patch.replaces)
                original = getattr(owner, attribute)
                _originals[patch.replaces] = original
                setattr(owner, attribute, _counting(patch))
                undo.append(lambda owner=owner, attribute=attribute, original=original: setattr(owner, attribute, original))
                if patch.replaces == "torch.nn.functional.rms_norm":  # also reached as torch.rms_norm
                    torch_original = torch.rms_norm
                    torch.rms_norm = _counting(patch)
                    undo.append(lambda original=torch_original: setattr(torch, "rms_norm", original))
            else:
                torch.onnx.register_custom_op_symbolic(patch.replaces, _counting_symbolic(patch), opset)
                undo.append(lambda name=patch.replaces: torch.onnx.unregister_custom_op_symbolic(name, opset))
        yield [p.name for p in patches]
    finally:
        for step in reversed(undo):
            step()

