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
import importlib
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
                     "contiguous", "repeat", "repeat_interleave", "clone", "detach", "narrow", "unflatten")

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


def _earlier_or_same(length: int, device) -> torch.Tensor:
    """[t, s]: whether s <= t, for a sequence of `length`."""
    positions = torch.arange(length, device=device)
    return positions[:, None] >= positions[None, :]


def selective_scan(hidden_states, dt, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                   return_last_state=False, **_kernel_options):
    """Mamba's selective scan (transformers' `mamba_selective_scan`, one copy per architecture) in
    closed form, without its Python loop over the sequence, which the legacy trace unrolls to the
    example's length (the graph then fails on any other): the state after step t is
    sum over s <= t of exp(L_t - L_s) * dt_s B_s x_s, where L is the running sum of A * dt, the
    same recurrence h_t = exp(A dt_t) h_(t-1) + dt_t B_t x_t written as one masked reduction.
    Quadratic in the sequence length (a [batch, channels, length, length, state] product): for
    the fixtures' short sequences, as Mamba-2's chunked scan does within a chunk."""
    input_dtype = hidden_states.dtype
    if delta_bias is not None:
        dt = dt + delta_bias.to(dt.dtype)[..., None]
    if delta_softplus:
        dt = torch.nn.functional.softplus(dt)
    B, C = B.transpose(1, 2), C.transpose(1, 2)  # [batch, length, state]
    decay_log = torch.cumsum(A[None, :, None, :] * dt[:, :, :, None], dim=2)  # L_t: [batch, channels, length, state]
    inputs = dt[:, :, :, None] * B[:, None, :, :].float() * hidden_states[:, :, :, None].float()
    causal = _earlier_or_same(hidden_states.shape[-1], hidden_states.device)[None, None, :, :, None]
    between = decay_log.unsqueeze(3) - decay_log.unsqueeze(2)  # L_t - L_s: [batch, channels, t, s, state]
    # Masked before the exponential: L_t - L_s is positive for s > t and could overflow.
    decay = torch.exp(torch.where(causal, between, torch.full((), float("-inf"), dtype=between.dtype)))
    states = (decay * inputs.unsqueeze(2)).sum(3)  # [batch, channels, length, state]
    scan_output = (states.to(input_dtype) * C[:, None, :, :]).sum(-1)
    if D is not None:
        scan_output = scan_output + hidden_states * D[None, :, None]
    if z is not None:
        scan_output = scan_output * torch.nn.functional.silu(z)
    return (scan_output, states[:, :, -1].to(input_dtype)) if return_last_state else scan_output


def rnn_scan(self, hidden_states, recurrent_gate, reset, recurrent_states, acc_dtype=torch.float32):
    """RecurrentGemma's linear recurrence (`RecurrentGemmaRglru._rnn_scan`) h_t = a_t h_(t-1) + x_t
    in closed form, without the Python loop over the sequence that the legacy trace unrolls:
    h_t = sum over s <= t of exp(G_t - G_s) x_s + exp(G_t) h_(-1), G the running sum of log a.
    A reset gate of 0 is taken as 1e-30 (a product through a document boundary is then 1e-30
    times the input instead of 0). One step (decoding) is the original's."""
    if hidden_states.shape[1] == 1:
        return _originals["transformers.models.recurrent_gemma.modeling_recurrent_gemma.RecurrentGemmaRglru._rnn_scan"](
            self, hidden_states, recurrent_gate, reset, recurrent_states, acc_dtype)
    gate = (recurrent_gate * ~reset).type(acc_dtype)  # [batch, length, width]
    log_gate = torch.cumsum(torch.log(gate.clamp_min(1e-30)), dim=1)  # G_t
    between = log_gate.unsqueeze(2) - log_gate.unsqueeze(1)  # G_t - G_s: [batch, t, s, width]
    causal = _earlier_or_same(hidden_states.shape[1], hidden_states.device)[None, :, :, None]
    decay = torch.exp(torch.where(causal, between, torch.full((), float("-inf"), dtype=between.dtype)))
    states = (decay * hidden_states.type(acc_dtype).unsqueeze(1)).sum(2)
    if recurrent_states is not None:
        states = states + torch.exp(log_gate) * recurrent_states[:, None].to(states.device)
    return states.type(hidden_states.dtype), states[:, -1]


def rwkv_linear_attention_cpu(time_decay, time_first, key, value, state=None, return_state=False):
    """RWKV's WKV (`rwkv_linear_attention_cpu`) without its Python loop over the sequence: the
    output at t is a softmax over s <= t of k_s + w (t - 1 - s) (s < t) and u + k_t (s = t),
    applied to the values, where w = -exp(time_decay) and u = time_first; the state after the
    last step (numerator, denominator and the running maximum the loop keeps) from the same
    weights. With a state passed in (decoding), the original's."""
    if state is not None:
        return _originals["transformers.models.rwkv.modeling_rwkv.rwkv_linear_attention_cpu"](
            time_decay, time_first, key, value, state=state, return_state=return_state)
    length = key.shape[1]
    w = -torch.exp(time_decay)  # [channels]
    k, v = key.float(), value.float()  # [batch, length, channels]
    positions = torch.arange(length, device=key.device).float()
    steps = (positions[:, None] - positions[None, :])[None, :, :, None]  # t - s: [1, t, s, 1]
    causal = _earlier_or_same(length, key.device)[None, :, :, None]
    lowest = torch.full((), float("-inf"))
    earlier = torch.where(causal & (steps > 0), k.unsqueeze(1) + w * (steps - 1), lowest)  # s < t
    weights = torch.where(steps == 0, (time_first + k).unsqueeze(2), earlier)  # s = t: u + k_t
    output = (torch.softmax(weights, dim=2) * v.unsqueeze(1)).sum(2).to(key.dtype)
    if not return_state:
        return output, None
    # The loop's state after the last token: sums over every s of exp(k_s + w (T - 1 - s)), scaled
    # by its running maximum, max over s of k_s + w (T - 1 - s).
    decayed = k + w * (length - 1 - positions)[None, :, None]  # [batch, s, channels]
    maximum = decayed.amax(1)
    scale = torch.exp(decayed - maximum.unsqueeze(1))
    return output, [(scale * v).sum(1), scale.sum(1), maximum]


def unfold(self, dimension: int, size: int, step: int):
    """`Tensor.unfold` (sliding windows of `size` every `step` along a dimension, the window as a
    new last dimension) as a gather of the windows' positions: torch.onnx's legacy Unfold needs
    the dimension's size as a constant, and a graph with that size dynamic (Idefics2's image
    height and width, Inkling's sequences) stops at it."""
    dimension = dimension % self.dim()
    count = (self.shape[dimension] - size) // step + 1
    starts = torch.arange(count, device=self.device) * step
    positions = (starts[:, None] + torch.arange(size, device=self.device)[None, :]).reshape(-1)
    windows = self.index_select(dimension, positions)
    shape = [*self.shape[:dimension], count, size, *self.shape[dimension + 1:]]
    return windows.reshape(shape).movedim(dimension + 1, -1)


def full(size, fill_value, *args, dtype=None, **kwargs):
    """`torch.full` with the dtype PyTorch infers from an integer or boolean fill (int64, bool)
    written out: traced without it, the fill's type is lost and the tensor comes out float32
    (Idefics2's position ids, then an embedding's indices, which ONNX refuses as float)."""
    if dtype is None and not args and isinstance(fill_value, (bool, int)):
        _called.add("full_integer_dtype")
        dtype = torch.bool if isinstance(fill_value, bool) else torch.int64
    return _originals["torch.full"](size, fill_value, *args, dtype=dtype, **kwargs)


def _bool_scalar_as_int(path: str, value_at: int):
    """`path` (a function or Tensor method whose argument `value_at` is a scalar fill) with a
    Python bool fill passed as the int it equals (True is 1 in every dtype, a bool tensor's
    included): TorchScript's alias analysis has no schema for these ops with a bool scalar
    (`scatter(..., True)`, `masked_fill(mask, False)`, `full_like(x, True)`), and the legacy
    exporter stops at an internal assertion."""

    def call(*args, **kwargs):
        original = _originals[path]
        if path.endswith(".masked_fill") and len(args) == 3 and isinstance(args[2], bool) \
                and isinstance(args[0], torch.Tensor) and args[0].dtype == torch.bool:
            # A bool tensor's fill as logic: ONNX Runtime has no Where kernel for bool values.
            _called.add("bool_scalar_as_int")
            tensor, mask, value = args
            return tensor | mask if value else tensor & ~mask
        if len(args) > value_at and isinstance(args[value_at], bool):
            _called.add("bool_scalar_as_int")
            args = (*args[:value_at], int(args[value_at]), *args[value_at + 1:])
        elif isinstance(kwargs.get("value"), bool):
            _called.add("bool_scalar_as_int")
            kwargs = {**kwargs, "value": int(kwargs["value"])}
        elif isinstance(kwargs.get("fill_value"), bool):
            _called.add("bool_scalar_as_int")
            kwargs = {**kwargs, "fill_value": int(kwargs["fill_value"])}
        return original(*args, **kwargs)

    return call


# (function, position of its scalar fill): self counts as the first argument of a method.
BOOL_SCALAR_FILLS = (("torch.Tensor.scatter", 3), ("torch.Tensor.scatter_", 3), ("torch.scatter", 3),
                     ("torch.Tensor.masked_fill", 2), ("torch.Tensor.masked_fill_", 2), ("torch.masked_fill", 2),
                     ("torch.full_like", 1))


MIMI_CONV1D = "transformers.models.mimi.modeling_mimi.MimiConv1d.forward"


def mimi_conv1d_forward(self, hidden_states, padding_cache=None):
    """MimiConv1d's forward with its padding computed in Python integers from the convolution's
    own sizes. Mimi keeps stride, kernel size and total padding in int64 buffers, so every
    convolution's padding is a tensor that `pad` reads back as a number: torch.export makes each
    one a data-dependent symbol and stops at a guard on their sum (its draft mode gets through,
    in 150 s). ceil((length - kernel + padding_total) / stride + 1) - 1, the frames the original
    counts in floating point, is ceil(length / stride) - 1 = (length - 1) // stride in integers:
    a floor division of a non-negative number, since the exported graph divides sizes with ONNX's
    Div, which truncates towards zero (a negative numerator's floor would come out one too high:
    the output 32 samples short on the second shape). With a streaming padding cache, the
    original's."""
    if padding_cache is not None:
        return _originals[MIMI_CONV1D](self, hidden_states, padding_cache)
    _called.add("mimi_conv1d_padding")
    stride = self.conv.stride[0]
    kernel = (self.conv.kernel_size[0] - 1) * self.conv.dilation[0] + 1
    padding_total = kernel - stride
    length = hidden_states.shape[-1]
    frames = (length - 1) // stride
    extra = (frames + 1) * stride - length  # frames * stride + kernel - padding_total - length
    if self.causal:
        paddings = (padding_total, extra)
    else:
        right = padding_total // 2
        paddings = (padding_total - right, right + extra)
    return self.conv(self._pad1d(hidden_states, paddings, mode=self.pad_mode))


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
# Architectures with their own identical copy of transformers' `mamba_selective_scan`.
SELECTIVE_SCAN = ("mamba", "falcon_mamba", "zamba", "jamba")

BOOL_SCALAR = ("dots3_note", "mistral_large4", "transformer_hunyuan_video", "aria")
RMS_NORM = ("transformer_chroma", "transformer_ltx", "transformer_ltx2", "transformer_hidream_image",
            "transformer_joyimage_edit_plus", "transformer_sana_wm_refiner")

PATCHES = (
    # Reached as either name.
    Patch("rms_norm", "torch.nn.functional.rms_norm", RMS_NORM, function=rms_norm),
    Patch("rms_norm", "torch.rms_norm", RMS_NORM, function=rms_norm),
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
    *(Patch("selective_scan", f"transformers.models.{name}.modeling_{name}.mamba_selective_scan", SELECTIVE_SCAN,
            function=selective_scan) for name in SELECTIVE_SCAN),
    Patch("rnn_scan", "transformers.models.recurrent_gemma.modeling_recurrent_gemma.RecurrentGemmaRglru._rnn_scan",
          ("recurrent_gemma",), function=rnn_scan),
    Patch("rwkv_attention", "transformers.models.rwkv.modeling_rwkv.rwkv_linear_attention_cpu", ("rwkv",),
          function=rwkv_linear_attention_cpu),
    *(Patch("bool_scalar_as_int", path, BOOL_SCALAR, function=_bool_scalar_as_int(path, at), counted_by_itself=True)
      for path, at in BOOL_SCALAR_FILLS),
    Patch("full_integer_dtype", "torch.full", ("idefics2", "grounding-dino", "mm-grounding-dino", "aria"), function=full,
          counted_by_itself=True),
    Patch("unfold", "torch.Tensor.unfold", ("idefics2", "inkling2_text"), function=unfold),
    Patch("mimi_conv1d_padding", MIMI_CONV1D, ("mimi",), function=mimi_conv1d_forward, counted_by_itself=True),
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
    """The module (or class) that holds a replaced function, and the function's name in it."""
    owner_path, _, attribute = path.rpartition(".")
    parts = owner_path.split(".")
    for split in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            owner = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for part in parts[split:]:
            owner = getattr(owner, part)
        return owner, attribute
    raise ModuleNotFoundError(path)


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
            else:
                torch.onnx.register_custom_op_symbolic(patch.replaces, _counting_symbolic(patch), opset)
                undo.append(lambda name=patch.replaces: _unregister_symbolic(name, opset))
        yield [p.name for p in patches]
    finally:
        for step in reversed(undo):
            step()

