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
import inspect
import math
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


def _cumulative_extreme(input, dim, largest: bool):
    """A cumulative maximum (or minimum) as a masked reduction over every earlier position: ONNX
    has no cumulative maximum, and torch.export has no decomposition of it. Quadratic in the
    length of `dim`, which is a text's length here (Grounding DINO's special-token masks). The
    indices are the last position holding each extreme, as PyTorch's."""
    x = input.movedim(dim, -1)
    n = x.shape[-1]
    earlier = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()  # [i, j]: j <= i
    info = torch.finfo(x.dtype) if x.dtype.is_floating_point else torch.iinfo(x.dtype)
    neutral = torch.full((), info.min if largest else info.max, dtype=x.dtype)
    candidates = torch.where(earlier, x.unsqueeze(-2), neutral)
    values = candidates.amax(-1) if largest else candidates.amin(-1)
    positions = torch.arange(n, device=x.device)
    holding = earlier & (x.unsqueeze(-2) == values.unsqueeze(-1))
    indices = torch.where(holding, positions, -1).amax(-1)
    return values.movedim(-1, dim), indices.movedim(-1, dim)


def cummax(input, dim):
    """`torch.cummax` (see `_cumulative_extreme`)."""
    return torch.return_types.cummax(_cumulative_extreme(input, dim, largest=True))


def cummin(input, dim):
    """`torch.cummin` (see `_cumulative_extreme`)."""
    return torch.return_types.cummin(_cumulative_extreme(input, dim, largest=False))


class Complex:
    """A complex tensor as its real and imaginary parts, for the rotary embeddings written with
    complex numbers (`torch.polar`, `view_as_complex`, a product, `view_as_real`): neither
    torch.onnx exporter translates complex dtypes. It supports what those functions do between
    building the rotation and applying it (indexing, reshaping, products, `to`); anything else
    raises, and the attempt fails with that error."""

    SHAPE_METHODS = ("unsqueeze", "reshape", "view", "expand", "flatten", "squeeze", "permute", "transpose",
                     "contiguous", "repeat", "repeat_interleave", "clone", "detach", "narrow", "unflatten", "__getitem__")

    def __init__(self, real, imag):
        self.real, self.imag = real, imag

    @classmethod
    def of(cls, value):
        """Any operand of a product, as a Complex (a real tensor or number has no imaginary part)."""
        if isinstance(value, Complex):
            return value
        if isinstance(value, torch.Tensor) and value.is_complex():
            return cls(value.real, value.imag)
        return None

    @property
    def shape(self):
        return self.real.shape

    @property
    def ndim(self):
        return self.real.ndim

    @property
    def device(self):
        return self.real.device

    def dim(self):
        return self.real.dim()

    def size(self, *args):
        return self.real.size(*args)

    def __getattr__(self, name):
        if name in Complex.SHAPE_METHODS:
            return lambda *a, **k: Complex(getattr(self.real, name)(*a, **k), getattr(self.imag, name)(*a, **k))
        raise AttributeError(f"the export patch's complex numbers have no {name!r}")

    def __getitem__(self, index):
        return Complex(self.real[index], self.imag[index])

    def split(self, *args, **kwargs):
        return tuple(Complex(r, i) for r, i in zip(self.real.split(*args, **kwargs), self.imag.split(*args, **kwargs)))

    split_with_sizes = split

    def conj(self):
        return Complex(self.real, -self.imag)

    def chunk(self, *args, **kwargs):
        return tuple(Complex(r, i) for r, i in zip(self.real.chunk(*args, **kwargs), self.imag.chunk(*args, **kwargs)))

    def to(self, *args, **kwargs):
        # A complex dtype is the representation itself; a device or real dtype applies to both parts.
        args = [a for a in args if not (isinstance(a, torch.dtype) and a.is_complex)]
        if isinstance(kwargs.get("dtype"), torch.dtype) and kwargs["dtype"].is_complex:
            kwargs.pop("dtype")
        return Complex(self.real.to(*args, **kwargs), self.imag.to(*args, **kwargs))

    def __mul__(self, other):
        pair = Complex.of(other)
        if pair is None:
            return Complex(self.real * other, self.imag * other)
        return Complex(self.real * pair.real - self.imag * pair.imag, self.real * pair.imag + self.imag * pair.real)

    __rmul__ = __mul__


def polar(abs, angle, *, out=None):
    """`torch.polar` as a Complex (see `Complex`)."""
    return Complex(abs * torch.cos(angle), abs * torch.sin(angle))


def view_as_complex(input):
    """`torch.view_as_complex` as a Complex: the last axis of 2 is (real, imaginary)."""
    return Complex(input[..., 0], input[..., 1])


def view_as_real(input):
    """`torch.view_as_real` of a Complex: (real, imaginary) stacked on a new last axis."""
    pair = Complex.of(input)
    if pair is None:
        return _originals["torch.view_as_real"](input)
    return torch.stack([pair.real, pair.imag], -1)


def _joining(name: str):
    """`torch.cat` or `torch.stack` of Complex parts (rotary tables built per axis), else
    PyTorch's own."""

    def join(tensors, dim=0, **kwargs):
        original = _originals[f"torch.{name}"]
        if kwargs or not any(isinstance(t, Complex) for t in tensors):
            return original(tensors, dim, **kwargs)
        _called.add(f"complex_{name}")
        parts = [Complex.of(t) or Complex(t, torch.zeros_like(t)) for t in tensors]
        return Complex(original([p.real for p in parts], dim), original([p.imag for p in parts], dim))

    return join


@contextlib.contextmanager
def complex_attributes(model):
    """The model's complex tensors held as plain attributes (rotary tables a first call computed
    and cached: Z-Image, Sana-WM), as Complex parts while a patched export traces it, so no
    complex constant reaches the exporter; restored after it, however it ends."""
    def converted(value):
        if isinstance(value, torch.Tensor) and value.is_complex():
            return Complex(value.real.clone(), value.imag.clone())
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) and v.is_complex() for v in value):
            return type(value)(converted(v) for v in value)
        return None

    # Modules, and the plain helper objects they hold (Z-Image's RopeEmbedder is no Module).
    holders = list(model.modules())
    holders += [value for module in model.modules() for value in vars(module).values()
                if hasattr(value, "__dict__") and not isinstance(value, (torch.nn.Module, torch.Tensor, type))
                and not inspect.isroutine(value)]
    undo = []
    try:
        for module in holders:
            for name, value in list(vars(module).items()):
                replacement = converted(value)
                if replacement is not None:
                    _called.add("complex_attributes")
                    setattr(module, name, replacement)
                    undo.append((module, name, value))
        yield
    finally:
        for module, name, value in reversed(undo):
            setattr(module, name, value)


def _cast_like(g, value, like):
    from torch.onnx._internal.torchscript_exporter import _type_utils

    return g.op("Cast", value, to_i=_type_utils.JitScalarType.from_value(like).onnx_type())


def _bitwise_or(g, input, other):
    """A legacy-exporter symbolic for `|` (and `|=`) on integer tensors, ONNX's BitwiseOr
    (opset 18); booleans keep their `Or`. torch.onnx's own refuses integers."""
    from torch.onnx._internal.torchscript_exporter import symbolic_helper as helper

    if helper._is_bool(input):
        return g.op("Or", input, _cast_like(g, other, input))
    return g.op("BitwiseOr", input, _cast_like(g, other, input))


def _scaled_by(factor: float):
    """A legacy-exporter symbolic for a product by a constant (`rad2deg`, `deg2rad`)."""

    def symbolic(g, input):
        return g.op("Mul", input, _cast_like(g, g.op("Constant", value_t=torch.tensor(factor)), input))

    return symbolic


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
    # A replacement that falls back on the original for most calls says itself when it was used.
    counted_by_itself: bool = False


COMPLEX_ROTARY = ("llama4", "llama4_text", "deepseek_v2", "transformer_z_image", "transformer_bria_fibo2",
                  "transformer_lumina2", "transformer_anyflow", "transformer_sana_wm")
INTEGER_OR = ("cpmant", "modernvbert", "ultravbert")

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
    Patch("cummax", "torch.cummax", ("grounding-dino", "mm-grounding-dino"), function=cummax),
    Patch("cummin", "torch.cummin", ("grounding-dino", "mm-grounding-dino"), function=cummin),
    # The three parts of complex rotary embeddings: a Complex never reaches an exporter.
    Patch("complex_polar", "torch.polar", COMPLEX_ROTARY, function=polar),
    Patch("complex_view", "torch.view_as_complex", COMPLEX_ROTARY, function=view_as_complex),
    Patch("complex_as_real", "torch.view_as_real", COMPLEX_ROTARY, function=view_as_real),
    Patch("complex_cat", "torch.cat", COMPLEX_ROTARY, function=_joining("cat"), counted_by_itself=True),
    Patch("complex_stack", "torch.stack", COMPLEX_ROTARY, function=_joining("stack"), counted_by_itself=True),
    Patch("integer_bitwise_or", "aten::bitwise_or", INTEGER_OR, symbolic=_bitwise_or),
    Patch("integer_or", "aten::__or_", INTEGER_OR, symbolic=_bitwise_or),
    Patch("integer_or_in_place", "aten::__ior_", INTEGER_OR, symbolic=_bitwise_or),
    Patch("rad2deg", "aten::rad2deg", ("transformer_sana_wm",), symbolic=_scaled_by(180.0 / math.pi)),
    Patch("deg2rad", "aten::deg2rad", ("transformer_sana_wm",), symbolic=_scaled_by(math.pi / 180.0)),
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


def _unregister_symbolic(name: str, opset: int) -> None:
    """Removes a patch's symbolic, and the registry's entry for the op where torch.onnx had no
    symbolic of its own: `unregister_custom_op_symbolic` leaves an empty entry behind, and the
    next legacy export that meets the op fails with "min() arg is an empty sequence" instead of
    torch.onnx's "Exporting the operator ... is not supported" (a later model in the same worker
    would record the wrong error)."""
    from torch.onnx._internal.torchscript_exporter import registration

    torch.onnx.unregister_custom_op_symbolic(name, opset)
    group = registration.registry._registry.get(name)
    if group is not None and not group._functions:  # private: the registry has no public removal
        del registration.registry._registry[name]


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
                setattr(owner, attribute, patch.function if patch.counted_by_itself else _counting(patch))
                undo.append(lambda owner=owner, attribute=attribute, original=original: setattr(owner, attribute, original))
                if patch.replaces == "torch.nn.functional.rms_norm":  # also reached as torch.rms_norm
                    torch_original = torch.rms_norm
                    torch.rms_norm = _counting(patch)
                    undo.append(lambda original=torch_original: setattr(torch, "rms_norm", original))
            else:
                torch.onnx.register_custom_op_symbolic(patch.replaces, _counting_symbolic(patch), opset)
                undo.append(lambda name=patch.replaces: _unregister_symbolic(name, opset))
        yield [p.name for p in patches]
    finally:
        for step in reversed(undo):
            step()

