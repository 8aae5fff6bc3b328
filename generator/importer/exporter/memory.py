"""What an architecture weighs at its real size: `gen memory`'s worker job.

The tiny fixtures cannot say how much memory a model needs; the architecture's default
configuration can (transformers' and diffusers' defaults are, for most architectures, the
size of the checkpoint the library was written for). The model is built from it on PyTorch's
meta device: shapes without storage, so a 400-billion-parameter default costs no memory and
downloads nothing. From the shapes:

- parameters, total, and how many are embeddings (token and position tables, read by a
  Gather) and matrix products (linear layers and stacked experts: what quantizers compress);
- the weights' bytes in each format the fixtures ship, by the rules their converters follow
  (export.py's VARIANTS; `FORMAT_RULES` says each), with the scales and zero points each adds;
- for a model that generates, what its cache of past states holds per token and at 2k, 8k
  and 32k tokens: measured by running the generating class on the meta device over prompts of
  one and two tokens (the growth is one token's; layers that keep a sliding window stop
  growing at it), else counted from the config's attention layers, heads and head size.

The job: {"spec": {...}, "task": ..., "checkpoint": optional folder}. A checkpoint folder's
config.json replaces the defaults (the real model's size, as `gen fixtures --checkpoint`).
"""

from __future__ import annotations

import math

import torch

# One per format: how the converter in export.py stores each kind of parameter.
FORMAT_RULES = {
    "fp32": "every parameter in 4 bytes",
    "fp16": "every parameter in 2 bytes (convert_float_to_float16)",
    "int8": "matrix products, convolutions and embeddings in 1 byte with a float32 scale and an int8 zero point per "
            "output channel (quantize_dynamic, per channel); the rest in 4 bytes",
    "q4": "matrix products in 4 bits with a float32 scale per block of 32 (MatMulNBits, symmetric: no zero points); "
          "the rest in 4 bytes",
    "q4f16": "matrix products in 4 bits with a float16 scale per block of 32; the rest in 2 bytes",
    "qdq8": "every weight in 1 byte with one scale and zero point per tensor, biases in int32 (static QDQ for QNN)",
    # NNCF's formats (nncf_variants.py), OpenVINO IR: the .bin's bytes.
    "nncf_int8": "matrix products, convolutions and embeddings in 1 byte with a float16 scale and a uint8 zero point "
                 "per output channel (NNCF INT8_ASYM); the rest in 4 bytes",
    "nncf_int4": "matrix products but the last in 4 bits with a float16 scale and a 4-bit zero point per group of "
                 "128 (NNCF INT4_ASYM, ratio 1.0); embeddings, convolutions and the last matrix product as "
                 "nncf_int8; the rest in 4 bytes",
}
TOKENS = (2048, 8192, 32768)
BLOCK = 32
NNCF_GROUP = 128


def compute(job: dict) -> dict:
    spec = job["spec"]
    checkpoint = job.get("checkpoint")
    model, source = build_on_meta(spec, checkpoint)
    kinds = parameter_kinds(model)
    result = {
        "source": source,
        "class": type(model).__name__,
        "parameters": {kind: sum(n for n, _ in values) for kind, values in kinds.items()},
        "weights": weight_bytes(kinds),
        "rules": FORMAT_RULES,
    }
    result["parameters"]["total"] = sum(result["parameters"][k] for k in kinds)
    if spec.get("cache"):
        try:
            result["cache"] = cache_bytes(spec, job.get("task") or spec.get("task"), checkpoint)
        except Exception as error:  # noqa: BLE001 - the reason is the row
            from export import _error_line

            result["cache"] = {"error": _error_line(error)}
    return result


def default_config(spec: dict, cls, checkpoint: str | None):
    """The config the model is built from: a checkpoint's config.json, else the library's
    defaults for the spec's model_type (the sub-config the class takes, for a composite one)."""
    import transformers
    from export import own_config

    if checkpoint:
        config = transformers.AutoConfig.from_pretrained(checkpoint, local_files_only=True)
        return own_config(cls, config), f"checkpoint {checkpoint} (config.json)"
    config = transformers.AutoConfig.for_model(spec["model_type"])
    return own_config(cls, config), f"transformers {transformers.__version__} defaults ({type(config).__name__}())"


def build_on_meta(spec: dict, checkpoint: str | None):
    import transformers
    from export import model_class

    cls = model_class(spec["export"]["class"])
    if not hasattr(transformers, cls.__name__):  # diffusers: the constructor's defaults
        import diffusers

        with torch.device("meta"):
            model = cls()
        return model, f"diffusers {diffusers.__version__} defaults ({cls.__name__}())"
    config, source = default_config(spec, cls, checkpoint)
    with torch.device("meta"):
        model = cls._from_config(config)
    return model, source


def parameter_kinds(model) -> dict[str, list[tuple[int, tuple]]]:
    """Each parameter (a tied one once) and each float buffer saved with the model, by what
    the converters do with it: (element count, shape) per kind."""
    from transformers.pytorch_utils import Conv1D

    kinds: dict[str, list] = {"embedding": [], "matmul": [], "conv": [], "bias": [], "other": []}
    seen = set()
    for module_name, module in model.named_modules():
        for name, tensor in list(module.named_parameters(recurse=False)) + [
                (n, b) for n, b in module.named_buffers(recurse=False)
                if b is not None and b.is_floating_point() and n not in module._non_persistent_buffers_set]:
            if id(tensor) in seen:
                continue
            seen.add(id(tensor))
            kinds[kind_of(module, name, tensor, Conv1D)].append((tensor.numel(), tuple(tensor.shape)))
    return kinds


def kind_of(module, name: str, tensor, conv1d) -> str:
    if name == "bias" or name.endswith("_bias"):
        return "bias"
    if isinstance(module, (torch.nn.Embedding, torch.nn.EmbeddingBag)):
        return "embedding"
    if isinstance(module, (torch.nn.Linear, conv1d)) and tensor.dim() == 2:
        return "matmul"
    if isinstance(module, torch.nn.modules.conv._ConvNd):
        return "conv"
    # Stacked experts (transformers' fused MoE weights: experts × in × out): matrix products.
    if tensor.dim() == 3 and "expert" in type(module).__name__.lower():
        return "matmul"
    return "other"


def output_channels(shape: tuple, kind: str) -> int:
    """The channels a per-channel scale is kept for: a linear layer's or a convolution's
    outputs (dim 0), an embedding table's rows, an expert stack's experts × outputs."""
    if not shape:
        return 1
    if kind == "matmul" and len(shape) == 3:
        return shape[0] * shape[2]
    return shape[0]


def weight_bytes(kinds: dict) -> dict[str, int]:
    def total(per_kind) -> int:
        return int(sum(per_kind(kind, n, shape) for kind, values in kinds.items() for n, shape in values))

    def int8(kind, n, shape):
        if kind in ("matmul", "conv", "embedding"):
            return n + 5 * output_channels(shape, kind)
        return 4 * n

    def q4(kind, n, shape, rest, scale):
        if kind == "matmul":
            return n / 2 + math.ceil(n / BLOCK) * scale
        return rest * n

    def qdq8(kind, n, shape):
        return 4 * n if kind == "bias" else n + 5

    def nncf_int8(kind, n, shape):
        if kind in ("matmul", "conv", "embedding"):
            return n + 3 * output_channels(shape, kind)
        return 4 * n

    # NNCF keeps the last matrix product (a language model's head) in its int8 backup.
    last = len(kinds.get("matmul", [])) - 1

    def nncf_int4() -> float:
        total_bytes = 0.0
        for kind, values in kinds.items():
            for index, (n, shape) in enumerate(values):
                if kind == "matmul" and index != last:
                    total_bytes += n / 2 + math.ceil(n / NNCF_GROUP) * 2.5
                else:
                    total_bytes += nncf_int8(kind, n, shape)
        return int(total_bytes)

    return {
        "fp32": total(lambda kind, n, shape: 4 * n),
        "fp16": total(lambda kind, n, shape: 2 * n),
        "int8": total(int8),
        "q4": total(lambda kind, n, shape: q4(kind, n, shape, 4, 4)),
        "q4f16": total(lambda kind, n, shape: q4(kind, n, shape, 2, 2)),
        "qdq8": total(qdq8),
        "nncf_int8": total(nncf_int8),
        "nncf_int4": nncf_int4(),
    }


def cache_bytes(spec: dict, task: str, checkpoint: str | None) -> dict:
    """The cache's bytes per token (float32, as the fixtures keep it; float16 is half), what it
    holds whatever the length (a state-space layer's states), and its size at TOKENS."""
    try:
        layers, method = measured_cache(spec, task, checkpoint), "measured: the generating class run on the meta device over 1 and 2 tokens"
    except Exception as error:  # noqa: BLE001 - counted from the config instead, and the row says why
        from export import _error_line

        layers = counted_cache(spec, task, checkpoint)
        method = f"counted from the config's attention layers (the meta-device run failed: {_error_line(error)})"
    per_token = sum(layer["per_token"] for layer in layers)
    fixed = sum(layer["fixed"] for layer in layers)
    at = {str(t): int(sum(layer["fixed"] + layer["per_token"] * min(t, layer.get("window") or t) for layer in layers))
          for t in TOKENS}
    windows = sorted({layer["window"] for layer in layers if layer.get("window")})
    return {"per_token_bytes": int(per_token), "fixed_bytes": int(fixed), "at_tokens": at, "dtype": "float32",
            "layers": len(layers), "sliding_windows": windows, "method": method}


def measured_cache(spec: dict, task: str, checkpoint: str | None) -> list[dict]:
    import copy

    import generation

    cls, seq2seq = generation.generating_class(spec, task)
    config, _ = default_config(spec, cls, checkpoint)
    config = copy.deepcopy(config)
    config.use_cache = True
    if hasattr(config, "get_text_config"):
        config.get_text_config().use_cache = True
    with torch.device("meta"):
        try:  # eager experts: the grouped-matmul ones take bfloat16 only
            model = cls._from_config(config, attn_implementation="eager", experts_implementation="eager")
        except (KeyError, ValueError, TypeError):
            model = cls._from_config(config, attn_implementation="eager")
    model.eval()
    sizes = []
    for length in (1, 2):
        ids = torch.ones(1, length, dtype=torch.long, device="meta")
        kwargs = {"input_ids": ids, "use_cache": True}
        if seq2seq:
            kwargs["decoder_input_ids"] = ids
        with torch.no_grad():
            out = model(**kwargs)
        cache = getattr(out, "past_key_values", None)
        if cache is None:
            raise RuntimeError(f"{cls.__name__} returned no past_key_values")
        # An encoder-decoder's cache: the decoder's own (self-attention) part grows per token.
        cache = getattr(cache, "self_attention_cache", cache)
        sizes.append([(layer, sum(4 * t.numel() for t in layer_tensors(layer))) for layer in generation.layers_of(cache)])
    layers = []
    for (layer, one), (_, two) in zip(*sizes):
        window = getattr(layer, "sliding_window", None)
        layers.append({"per_token": two - one, "fixed": 2 * one - two, "window": window if isinstance(window, int) else None})
    return layers


def layer_tensors(layer) -> list:
    tensors = []
    for name, value in vars(layer).items():
        if name.startswith("_"):
            continue
        if isinstance(value, torch.Tensor):
            tensors.append(value)
        elif isinstance(value, dict):
            tensors += [t for t in value.values() if isinstance(t, torch.Tensor)]
    return tensors


def counted_cache(spec: dict, task: str, checkpoint: str | None) -> list[dict]:
    """A key and a value per attention layer: layers × 2 × key-value heads × head size."""
    import generation

    cls, _ = generation.generating_class(spec, task)
    config, _ = default_config(spec, cls, checkpoint)
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    heads = getattr(text, "num_attention_heads", None)
    layers = getattr(text, "num_hidden_layers", None) or getattr(text, "decoder_layers", None)
    if not heads or not layers:
        raise RuntimeError(f"{type(text).__name__} names no attention heads or layers to count a cache from")
    kv = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    types = getattr(text, "layer_types", None) or ["full_attention"] * layers
    window = getattr(text, "sliding_window", None)
    return [{"per_token": 2 * kv * head_dim * 4, "fixed": 0, "window": window if kind == "sliding_attention" else None}
            for kind in types if "attention" in kind and "linear" not in kind]
