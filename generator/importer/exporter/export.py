"""Build one hwmatrix fixture: a real transformers architecture with tiny random
weights, exported to ONNX (float32 and the formats deployments ship: fp16, int8, q4, q4f16,
qdq8) and TorchScript, with reference inputs and outputs for two shapes.

`gen fixtures` runs this once per model that needs a (re)build and passes the
job as JSON on stdin:

    {"spec": <the model's spec, as loaded and validated by gen>,
     "out_dir": "<$HWMATRIX_FIXTURES>/<model_type>", "cache_key": "...", "seed": 0}

It writes the fixture contract of DESIGN.md into a temporary folder next to
out_dir and renames it into place only when everything succeeded, so a
half-built fixture never exists. On failure it exits 1 and the last line of
stderr is the real error, which gen stores in `<out_dir>.error.txt`.

For working on a spec without gen: `python export.py --spec-yaml FILE --out DIR`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import fractions
import functools
import inspect
import io
import json
import os
import re
import shutil
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers

EXPORTER_VERSION = 14


def normalized_vocab_size(config) -> int:
    """The text vocabulary, wherever this architecture keeps it (cf. optimum's NormalizedConfig)."""
    config = vision_owner(config)  # a nested vision-language model's (PI0's PaliGemma)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return int(getattr(text, "vocab_size"))


def vision_owner(config):
    """The config that holds the vision tower and the image placeholder: the config itself, or
    the sub-config of a model that nests a whole vision-language model (PI0's `vlm_config`, a
    PaliGemma; T5Gemma2's `encoder`)."""
    if getattr(config, "vision_config", None) is not None:
        return config
    for key in getattr(config, "sub_configs", None) or {}:
        sub = getattr(config, key, None)
        if getattr(sub, "vision_config", None) is not None:
            return sub
    return config


def image_placeholder_id(config) -> int:
    """The id of the image placeholder token, wherever the vision-language config keeps it."""
    owner = vision_owner(config)
    for key in ("image_token_id", "image_token_index"):
        if isinstance(getattr(owner, key, None), int):
            return getattr(owner, key)
    raise ValueError(f"{type(owner).__name__} has no image_token_id or image_token_index: an image-text prompt needs one")


def image_features_owner(model):
    """The module whose `get_image_features` makes the image tokens: the model, or the nested
    vision-language model of one that has none itself (PI0's PaliGemma, T5Gemma2's encoder)."""
    if model is None or hasattr(model, "get_image_features"):
        return model
    return next((m for m in model.modules() if hasattr(m, "get_image_features")), model)


def image_token_count(config, model=None) -> int:
    """How many image placeholder tokens a LLaVA-style prompt needs for one image: measured
    from the model when it can say (`measured_image_tokens`), else counted from the config.

    LLaVA: one feature per patch (plus CLS with the "full" strategy). LLaVA-NeXT (a config with
    `image_grid_pinpoints`, "anyres"): that base image, then the unpadded tile grid with one newline
    feature per row, counted as LlavaNextProcessor._get_number_of_features does for an image of
    image_size x image_size, the size the `image-size` fill gives."""
    config, model = vision_owner(config), image_features_owner(model)
    if model is not None:
        # Measured once per model: every shape's inputs (and the derive's trials) ask again.
        if not hasattr(model, "_hwmatrix_image_tokens"):
            model._hwmatrix_image_tokens = measured_image_tokens(model, config)
        if model._hwmatrix_image_tokens is not None:
            return model._hwmatrix_image_tokens
    vision = config.vision_config
    (height, width), (patch_height, patch_width) = height_width(vision.image_size), height_width(vision.patch_size)
    # A projector that pools each crop's patch grid (Granite 4 Vision's downsample_rate "1/2":
    # one token per 2 x 2 window) makes that fraction of tokens along each side.
    rate = fractions.Fraction(str(getattr(config, "downsample_rate", None) or 1))
    patch_height, patch_width = int(patch_height / rate), int(patch_width / rate)
    strategy = getattr(config, "vision_feature_select_strategy", "default")
    base = (height // patch_height) * (width // patch_width) + (1 if strategy == "full" else 0)
    pinpoints = getattr(config, "image_grid_pinpoints", None)
    if not pinpoints:
        return base
    side = height // patch_height
    from transformers.image_processing_utils import select_best_resolution

    size = vision.image_size
    best_height, best_width = select_best_resolution([size, size], pinpoints)
    height, width = side * (best_height // size), side * (best_width // size)
    if width > height:  # the square original is padded left and right
        width -= (width - height) // 2 * 2
    elif height > width:  # padded top and bottom
        height -= (height - width) // 2 * 2
    return base + height * width + height


def height_width(size) -> tuple[int, int] | None:
    """An image (or patch) size as (height, width): configs give one int for a square, or a
    [height, width] pair (InternVL, Molmo2)."""
    if isinstance(size, int) and not isinstance(size, bool):
        return size, size
    if isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(v, int) for v in size):
        return int(size[0]), int(size[1])
    return None


def patch_grid(config) -> dict | None:
    """Qwen2-VL-style vision towers take an image as a flat list of patches with its grid
    (`image_grid_thw`: temporal, height and width in patches) instead of [C, H, W] pixels. One
    image is a 1 x (2 merge) x (2 merge) grid, so the patch merger (merge x merge patches to one
    token) makes 4 image tokens; each patch holds channels x temporal_patch_size x patch_size^2
    values. None for a config without such a tower."""
    # A composite config's vision tower, or a bare tower's own config (HunYuan-VL's vision model).
    vision = getattr(config, "vision_config", None) or config
    patch = getattr(vision, "patch_size", None)
    temporal = getattr(vision, "temporal_patch_size", None)
    if temporal is None and isinstance(getattr(vision, "spatial_merge_size", None), int):
        temporal = 1  # an image-only tower with a patch merger (PaddleOCR-VL, VideoLLaMA3)
    if not isinstance(patch, int) or not isinstance(temporal, int):
        return None
    merge = getattr(vision, "spatial_merge_size", 2) or 2
    channels = getattr(vision, "in_channels", None) or getattr(vision, "num_channels", None) or 3
    side = 2 * merge
    return {"grid": [1, side, side], "merge": merge, "patches": side * side, "patch_dim": channels * temporal * patch * patch}


def measured_image_tokens(model, config) -> int | None:
    """The image features the model itself makes of one image (its `get_image_features`, the
    projected features that replace the placeholder tokens), one per feature row; None when the
    model has no such method or it fails. Projectors that pool or merge patches (Cohere2-Vision,
    GOT-OCR2, Step3) make far fewer features than patches, which no config formula knows."""
    method = getattr(model, "get_image_features", None)
    vision = getattr(config, "vision_config", None)
    size = getattr(vision, "image_size", None)
    grid = patch_grid(config)
    if method is not None and grid and "image_grid_thw" in inspect.signature(method).parameters:
        patches = torch.randn(grid["patches"], grid["patch_dim"], generator=torch.Generator().manual_seed(0))
        try:
            with torch.no_grad():
                out = method(pixel_values=patches, image_grid_thw=torch.tensor([grid["grid"]]))
            return _feature_rows(out, merged_grid=(grid["grid"][1] // grid["merge"], grid["grid"][2] // grid["merge"]))
        except Exception:  # noqa: BLE001 - the config formula is the fallback
            return None
    if method is None or height_width(size) is None:
        return None
    (height, width), channels = height_width(size), getattr(vision, "num_channels", 3) or 3
    image = torch.randn(1, channels, height, width, generator=torch.Generator().manual_seed(0))
    out = None
    # One image as [1, C, H, W], or as Idefics-style models take it, [1, images, C, H, W].
    for pixel_values in (image, image.unsqueeze(0)):
        kwargs = {"pixel_values": pixel_values}
        if "image_sizes" in inspect.signature(method).parameters:
            kwargs["image_sizes"] = torch.tensor([[height, width]])
        try:
            with torch.no_grad():
                out = method(**kwargs)
            break
        except Exception:  # noqa: BLE001 - the next layout, then the config formula
            continue
    if out is None:
        return None
    return _feature_rows(out)


def _feature_rows(out, merged_grid: tuple[int, int] | None = None) -> int | None:
    """The feature rows (one per image token) in what get_image_features returned: rows of
    features, or (a patch-grid tower's, `merged_grid` its height and width in tokens) one
    [channels, height, width] map per image, one token per position (GLM-Image's)."""
    features = out.get("pooler_output") if hasattr(out, "get") else out
    if features is None and hasattr(out, "get"):
        features = out.get("last_hidden_state")
    tensors = [features] if isinstance(features, torch.Tensor) else list(features or [])
    if not tensors or not all(isinstance(t, torch.Tensor) and t.dim() >= 1 for t in tensors):
        return None
    if merged_grid and all(t.dim() == 3 and tuple(t.shape[1:]) == merged_grid for t in tensors):
        return sum(t.shape[1] * t.shape[2] for t in tensors)
    return sum(t.numel() // t.shape[-1] for t in tensors)


def padding_mask(dims: list[int], keep_prefix: int = 1) -> torch.Tensor:
    """A 0/1 mask of shape [batch, *positions] that pads some rows at the end (right padding).

    Row 0 stays all ones; rows 1..batch-1 (row 0 too when batch is 1, so that something is
    masked) keep a prefix and are zero after it along every non-batch axis: for a sequence mask
    the last positions, for a spatial mask ([batch, height, width], DETR's pixel_mask) the bottom
    rows and right columns. The j-th of the n padded rows pads floor(free * j / (3 * n))
    positions of an axis of size `size`, where free = size - keep_prefix: at most a third of what
    may be padded, a different amount for each padded row, and never the first `keep_prefix`
    positions (so no row is empty and no query attends to nothing). Deterministic: no randomness.
    E.g. [2, 13] -> row 0: 13 ones; row 1: 9 ones, 4 zeros. [3, 13] -> 13, 11, 9 ones."""
    batch, positions = dims[0], dims[1:]
    mask = torch.ones(dims, dtype=torch.int64)
    padded = list(range(1, batch)) if batch > 1 else [0]
    for j, row in enumerate(padded, start=1):
        for axis, size in enumerate(positions, start=1):
            free = max(0, size - max(1, keep_prefix))
            pad = free * j // (3 * len(padded))
            if pad:
                mask[row].narrow(axis - 1, size - pad, pad).zero_()
    return mask


def make_input(spec_input: dict, dims: list[int], config, gen: torch.Generator, shape_index: int = 0,
               keep_prefix: int = 1, placeholders: int | None = None) -> torch.Tensor:
    """One input tensor, filled the way its spec says (`fill`), with a seeded generator.

    `mask` is all ones in the first shape (the one the ONNX graph is traced with) and padded by
    `padding_mask` in the second, so a graph that traced masking away fails the second shape.
    `keep_prefix` is how many leading positions a padded mask must keep (the image placeholders
    of an `image-text-tokens` prompt)."""
    fill = spec_input.get("fill") or ("normal" if spec_input["dtype"].startswith("float") else "tokens")
    dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int64": torch.int64,
             "int32": torch.int32, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}[spec_input["dtype"]]
    if fill == "tokens":
        # Stay clear of the ids an architecture reserves at the top of the vocabulary.
        high = min(normalized_vocab_size(config), 1000)
        return torch.randint(3, high, dims, generator=gen, dtype=dtype)
    if fill == "mask":
        if shape_index == 0:
            return torch.ones(dims, dtype=dtype)
        return padding_mask(dims, keep_prefix).to(dtype)
    if fill == "zeros":
        return torch.zeros(dims, dtype=dtype)
    if fill == "normal":
        return torch.randn(dims, generator=gen, dtype=torch.float32).to(dtype)
    if fill == "uniform":
        return torch.rand(dims, generator=gen, dtype=torch.float32).to(dtype)
    if fill == "decoder-tokens":
        start = getattr(config, "decoder_start_token_id", None)
        ids = torch.randint(3, min(normalized_vocab_size(config), 1000), dims, generator=gen, dtype=dtype)
        if start is not None:
            ids[..., 0] = start
        return ids
    if fill in ("image-text-tokens", "audio-text-tokens"):
        # Random text with one image's (one clip's) placeholder tokens at positions 1..1+count.
        if fill == "image-text-tokens":
            placeholder, count, what = image_placeholder_id(config), placeholders if placeholders is not None else image_token_count(config), "image"
        else:
            placeholder, count, what = audio_token_id(config), placeholders, "audio"
            if placeholder is None or count is None:
                raise ValueError(f"audio-text-tokens needs the config's audio token id ({' or '.join(AUDIO_TOKEN_KEYS)}) and the model's audio features")
        batch, sequence = dims
        if sequence <= count:
            raise ValueError(f"sequence {sequence} must exceed the {count} {what} tokens this config needs")
        high = min(normalized_vocab_size(config), 1000)
        ids = torch.randint(3, high, dims, generator=gen, dtype=dtype)
        ids[ids == placeholder] = 3
        ids[:, 1 : 1 + count] = placeholder
        return ids
    if fill == "ones":
        # An all-ones mask the model must not see padded (an audio clip's frames, an image's
        # attention mask): unlike `mask`, never padded in the second shape.
        return torch.ones(dims, dtype=dtype)
    if fill == "image-token-types":
        # 1 on the image placeholders an `image-text-tokens` prompt puts at 1..1+count, else 0.
        count = placeholders if placeholders is not None else image_token_count(config)
        types = torch.zeros(dims, dtype=dtype)
        types[:, 1 : 1 + count] = 1
        return types
    if fill == "halves":
        # Roles of a packed sequence: the first value over the first half of the last axis.
        first, second = spec_input["values"]
        roles = torch.full(dims, second, dtype=dtype)
        roles[..., : dims[-1] // 2] = first
        return roles
    if fill == "image-grid":
        # image_grid_thw: each image's (temporal, height, width) in patches (`patch_grid`).
        return torch.tensor([patch_grid(config)["grid"]] * dims[0], dtype=dtype)
    if fill == "boxes":
        # Layout boxes (LayoutLM's bbox): [x0, y0, x1, y1] on a 0..1000 page, x0 <= x1 and y0 <= y1.
        corners = torch.randint(0, 1000, [*dims[:-1], 2, 2], generator=gen)
        low, high = corners.min(dim=-2).values, corners.max(dim=-2).values
        return torch.stack([low[..., 0], low[..., 1], high[..., 0], high[..., 1]], dim=-1).to(dtype)
    if fill == "timesteps":
        # A diffusion timestep per sample, anywhere in the usual 1000-step schedule.
        return torch.randint(0, 1000, dims, generator=gen).to(dtype)
    if fill == "labels":
        # A class label per sample, below the number of classes the config embeds.
        classes = config.get("num_class_embeds") or config.get("num_embeds_ada_norm")
        return torch.randint(0, min(int(classes), 10), dims, generator=gen, dtype=dtype)
    if fill == "image-size":
        # LLaVA-NeXT's image_sizes: (height, width) of each original image.
        size = vision_owner(config).vision_config.image_size
        return torch.full(dims, size, dtype=dtype)
    raise ValueError(f"unknown fill {fill!r}")


def build_inputs(spec: dict, shape: dict, config, seed: int, shape_index: int, model=None) -> dict[str, torch.Tensor]:
    """The inputs of one shape. `model` lets an image-text or audio-text prompt measure its
    placeholder tokens."""
    gen = torch.Generator().manual_seed(seed)
    # Padding never covers position 0 nor a prompt's placeholders (positions 1..1+count).
    keep_prefix, placeholders = 1, None
    fills = {inp.get("fill") for inp in spec["inputs"]}
    if "image-text-tokens" in fills:
        placeholders = image_token_count(config, model)
    elif "audio-text-tokens" in fills:
        placeholders = audio_token_count(model, spec, shape)
    if placeholders is not None:
        keep_prefix = 1 + placeholders
    return {
        inp["name"]: make_input(inp, [int(shape[axis]) for axis in inp["axes"]], config, gen, shape_index, keep_prefix, placeholders)
        for inp in spec["inputs"]
    }


AUDIO_TOKEN_KEYS = ("audio_token_id", "audio_token_index")


def audio_token_id(config) -> int | None:
    """The id of the audio placeholder token an audio-text prompt repeats, if the config has one."""
    return next((getattr(config, k) for k in AUDIO_TOKEN_KEYS if isinstance(getattr(config, k, None), int)), None)


def audio_token_count(model, spec: dict, shape: dict) -> int:
    """How many audio placeholder tokens a prompt needs for one clip of the spec's
    `input_features` at this shape: the feature rows the model's audio path makes of it
    (`get_audio_features`, else its `audio_tower`), measured on one clip. Raises when the model
    has neither."""
    features = next(i for i in spec["inputs"] if i["name"] == "input_features")
    dims = [1 if axis == "batch" else int(shape[axis]) for axis in features["axes"]]
    key = tuple(dims)
    known = getattr(model, "_hwmatrix_audio_tokens", {})
    if key in known:
        return known[key]
    values = torch.randn(dims, generator=torch.Generator().manual_seed(0))
    frames = dims[features["axes"].index("frames")] if "frames" in features["axes"] else dims[-1]
    ones = torch.ones(1, frames, dtype=torch.int64)
    method = getattr(model, "get_audio_features", None)
    with torch.no_grad():
        if method is not None:
            params = inspect.signature(method).parameters
            extra = {name: ones for name in ("input_features_mask", "feature_attention_mask") if name in params}
            # Other required arguments it may not use (MOSS's `padding_mask`): None.
            extra.update({name: None for name, p in params.items() if name not in extra and name != "input_features"
                          and p.default is inspect.Parameter.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)})
            out = method(input_features=values, **extra)
        elif getattr(model, "audio_tower", None) is not None:
            out = model.audio_tower(values)
        else:
            raise ValueError(f"{type(model).__name__} has neither get_audio_features nor an audio_tower to count audio tokens with")
    count = _feature_rows(out)
    if not count:
        raise ValueError(f"{type(model).__name__}'s audio features have no rows to count")
    model._hwmatrix_audio_tokens = {**known, key: count}
    return count


# Real text for a checkpoint's tokenizer: one sentence, then a batch of two of different lengths
# (so the second shape pads, as the tiny fixtures' masks do).
CHECKPOINT_TEXTS = [
    ["Hardware matrices tell maintainers where their models really run."],
    ["A short sentence.", "The second sentence of this batch is a good deal longer than the first one is."],
]


def checkpoint_tokenizer(checkpoint: str, spec: dict):
    """The checkpoint's own tokenizer when it has one and the model takes only what a tokenizer
    gives (input_ids, attention_mask, token_type_ids); else None (inputs filled as for tiny)."""
    if not all(i["name"] in ("input_ids", "attention_mask", "token_type_ids") for i in spec["inputs"]):
        return None
    try:
        return transformers.AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)
    except Exception:  # noqa: BLE001 - a checkpoint without a tokenizer gets generated inputs
        return None


def tokenized_inputs(tokenizer, spec: dict, index: int) -> tuple[dict[str, torch.Tensor], dict]:
    encoded = tokenizer(CHECKPOINT_TEXTS[index], padding=True, return_tensors="pt")
    inputs = {}
    for inp in spec["inputs"]:
        value = encoded.get(inp["name"])
        if value is None:  # e.g. token_type_ids from a tokenizer that does not make them
            value = torch.zeros_like(encoded["input_ids"])
        inputs[inp["name"]] = value.to(torch.int64)
    batch, sequence = encoded["input_ids"].shape
    return inputs, {"batch": int(batch), "sequence": int(sequence)}


# ONNX names are unique in a graph: an output named like an input (diffusers' `sample` in, the
# denoised `sample` out) is declared with this suffix, and read from the model without it.
OUTPUT_SUFFIX = "_output"


def output_name(key: str, input_names) -> str:
    """The declared name of the model output `key`."""
    return key + OUTPUT_SUFFIX if key in input_names else key


def output_key(name: str, input_names) -> str:
    """The model output a declared name reads (the inverse of output_name)."""
    if name.endswith(OUTPUT_SUFFIX) and name[: -len(OUTPUT_SUFFIX)] in input_names:
        return name[: -len(OUTPUT_SUFFIX)]
    return name


def model_outputs(out) -> dict:
    """A model's outputs by name, tensors only: a tuple of tensors (a backbone's
    `feature_maps`, MGP-STR's per-head `logits`) becomes one output per element, named
    `<name>_<i>`. Derive and export read outputs through this one function, so the names a
    spec declares are the names the exported graph has."""
    flat = {}
    for key, value in out.items():
        if isinstance(value, torch.Tensor):
            flat[key] = value
        elif hasattr(value, "items"):
            # A nested output (InstructBLIP's `language_model_outputs`): its tensors as `<name>_<field>`.
            for field, item in value.items():
                if isinstance(item, torch.Tensor) and f"{key}_{field}" not in out:
                    flat[f"{key}_{field}"] = item
        elif isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                if isinstance(item, torch.Tensor) and f"{key}_{i}" not in out:
                    flat[f"{key}_{i}"] = item
    return flat


class NamedOutputs(torch.nn.Module):
    """Calls the model with keyword inputs and returns the spec's outputs, in order, as a tuple."""

    def __init__(self, model, input_names, output_names):
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.output_names = output_names
        # The spec's fixed inputs (`export.fixed_inputs`): plain Python data, not graph inputs.
        self.fixed = {}

    def forward(self, *args):
        out = model_outputs(self.model(**dict(zip(self.input_names, args)), **self.fixed, return_dict=True))
        keys = [output_key(n, self.input_names) for n in self.output_names]
        missing = [k for k in keys if out.get(k) is None]
        if missing:
            raise KeyError(f"model output has no {missing}; it has {list(out.keys())}")
        return tuple(out[k] for k in keys)


def own_config(cls, config):
    """The config `cls` is built from: `config`, or the sub-config of the class `cls` takes when
    the registry's base model is one tower of a composite config (MusicgenModel, the decoder of
    MusicgenConfig, takes its `decoder` sub-config)."""
    wanted = getattr(cls, "config_class", None)
    if wanted is None or isinstance(config, wanted):
        return config
    for key in getattr(config, "sub_configs", {}) or {}:
        sub = getattr(config, key, None)
        if isinstance(sub, wanted):
            return sub
    return config


def instantiate(cls, config):
    """The model with eager attention and eager experts: transformers' fused grouped-matmul
    experts have no ONNX translation, the eager loop over experts exports. The model is built from
    a copy of the config: timm's builder consumes the block arguments it is given (Gemma3n's
    MobileNetV5 `block_args` lose their `block_type`), so a second build from the same config,
    as the derive makes one, would fail."""
    return cls._from_config(copy.deepcopy(own_config(cls, config)), attn_implementation="eager", experts_implementation="eager")


def model_class(name: str):
    """The model class a spec names: transformers', else diffusers' (the diffusion category)."""
    if hasattr(transformers, name):
        return getattr(transformers, name)
    import diffusers

    return getattr(diffusers, name)


def ready(model):
    """A built model as every export path runs it: in eval mode, its parameters frozen (torch.export
    would otherwise trace for backward too, and FlexAttention has no backward on CPU), and a
    forward argument `*attention_kwargs` that defaults to None but is spread with ** (Lumina-Next's
    `cross_attention_kwargs`) given an empty dict. Derive and export both build through this."""
    model.eval()
    model.requires_grad_(False)
    params = inspect.signature(type(model).forward).parameters
    spread = {name: {} for name, p in params.items() if name.endswith("attention_kwargs") and p.default is None}
    if spread:
        model.forward = functools.partial(model.forward, **spread)
    return model


# The spread of a drawn weight: transformers' usual initializer_range.
DRAWN_STD = 0.02


def draw_weights(model, names: list[str]) -> None:
    """Draws the parameters a spec lists in `export.drawn_weights` from a normal distribution
    (mean 0, DRAWN_STD): weights the architecture initializes to zero and every checkpoint
    has learned (Gemma 3's image projection, a DiT's zero-initialized final layer), behind
    which a tiny random model computes nothing a check can see. Each must be a parameter of
    the model and all zero: a name that is not, or a library that now initializes it, is an
    error, not a silent no-op. Seeded per name, so derive and export draw the same values."""
    parameters = dict(model.named_parameters())
    for name in names:
        if name not in parameters:
            raise ValueError(f"export.drawn_weights names {name!r}, which is not a parameter of {type(model).__name__} "
                             f"(its zero parameters: {[n for n, p in parameters.items() if p.dim() >= 2 and not p.any()]})")
        parameter = parameters[name]
        if parameter.any():
            raise ValueError(f"export.drawn_weights names {name!r}, which {type(model).__name__} does not initialize to zero")
        generator = torch.Generator().manual_seed(int.from_bytes(name.encode()[-8:].rjust(8, b"\0"), "little") % (2**63))
        with torch.no_grad():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * DRAWN_STD)


def build_model(spec: dict, seed: int, checkpoint: str | None = None):
    cls = model_class(spec["export"]["class"])
    if checkpoint:
        # A maintainer's real model: its own config and weights (local files only).
        model = ready(cls.from_pretrained(checkpoint, attn_implementation="eager", local_files_only=True))
        return model, model.config
    torch.manual_seed(seed)
    drawn = spec["export"].get("drawn_weights") or []
    if not hasattr(transformers, cls.__name__):  # diffusers: the config is the constructor's arguments
        model = cls(**(spec.get("tiny_config") or {}))
        draw_weights(model, drawn)
        return ready(model), model.config
    config = own_config(cls, transformers.AutoConfig.for_model(spec["model_type"], **(spec.get("tiny_config") or {})))
    model = instantiate(cls, config)
    draw_weights(model, drawn)
    return ready(model), config


def dynamic_axes(spec: dict) -> dict[str, dict[int, str]]:
    """Axes whose size differs between the two shapes are exported as dynamic."""
    first, second = spec["shapes"]
    varying = {axis for axis in first if first[axis] != second.get(axis)}
    result = {}
    fixed = set(spec["export"].get("fixed_inputs") or [])
    for tensor in [i for i in spec["inputs"] if i["name"] not in fixed] + spec["outputs"]:
        axes = {i: a for i, a in enumerate(tensor["axes"]) if a in varying}
        if axes:
            result[tensor["name"]] = axes
    return result


def save_npy_dir(folder: Path, tensors: dict[str, torch.Tensor]) -> list[dict]:
    folder.mkdir(parents=True)
    described = []
    for name, tensor in tensors.items():
        tensor = tensor.detach().cpu().contiguous()
        # numpy has no bfloat16: its bit patterns go in as uint16, which the runtime reads back as bfloat16.
        array = tensor.view(torch.uint16).numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
        np.save(folder / f"{name}.npy", array, allow_pickle=False)
        described.append({"name": name, "dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(array.shape)})
    return described


# The webgpu cells' quantization checks (runtime/src/quant) quantize real weight matrices
# and multiply them with the activations the layer really received on the export shape.
LINEAR_LAYERS = 24  # at most, spread evenly over the forward pass
LINEAR_ROWS = 16  # activation rows per layer, spread evenly over the batch and positions
LINEAR_MAX_WEIGHTS = 1 << 20  # larger matrices are skipped (a tiny config has none)
# The saved layers' bytes at most (fewer layers, still evenly spread, when theirs are more): they
# copy weights the model files hold too, and a fixture folder stays under 16 MiB (issue 19).
LINEAR_MAX_BYTES = 1 << 20


def linear_role(name: str) -> str:
    """The role seed 002's 4-bit mixed precision keys on: attention, embedding and output
    projections stay at 8 bits, feed-forward layers go to 4."""
    lowered = name.lower()
    leaf = lowered.rsplit(".", 1)[-1]
    if "embed" in lowered or "patch" in lowered:
        return "embedding"
    if any(k in lowered for k in ("attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj", "qkv", "query", "key", "value", "out_proj")):
        return "attention"
    if any(k in leaf for k in ("lm_head", "classifier", "score", "head", "proj_out", "pooler")) or "pooler" in lowered:
        return "output"
    return "feed_forward"


def as_matmul(module, x: torch.Tensor):
    """(activations [rows, in], weight [out, in], kind) of a layer that is a matrix product,
    or None: nn.Linear, transformers' Conv1D (weight stored [in, out]), and ungrouped
    Conv1d/Conv2d as the product of their unfolded input patches with the flattened kernel."""
    if isinstance(module, torch.nn.Linear):
        if x.shape[-1] != module.in_features:
            return None
        return x.reshape(-1, x.shape[-1]), module.weight, "linear"
    if type(module).__name__ == "Conv1D" and hasattr(module, "nf"):
        return x.reshape(-1, x.shape[-1]), module.weight.t(), "conv1d-transposed"
    if isinstance(module, (torch.nn.Conv1d, torch.nn.Conv2d)) and module.groups == 1 and isinstance(module.padding, tuple):
        two_d = isinstance(module, torch.nn.Conv2d)
        image = x if two_d else x.unsqueeze(-2)
        pair = lambda v: tuple(v) if two_d else (1, v[0])
        # Subclasses may lay their input out otherwise (parakeet's CTC head transposes in forward).
        if image.dim() != 4 or image.shape[1] != module.in_channels:
            return None
        patches = torch.nn.functional.unfold(image, pair(module.kernel_size), dilation=pair(module.dilation),
                                             padding=pair(module.padding), stride=pair(module.stride))
        return patches.transpose(1, 2).reshape(-1, patches.shape[1]), module.weight.reshape(module.out_channels, -1), "conv2d" if two_d else "conv1d"
    return None


@contextlib.contextmanager
def capture_linear_layers(model):
    """Records the first input of every matrix-product layer during one forward pass."""
    captured, handles = [], []
    seen = set()

    def hook(name):
        def pre(module, args):
            if name in seen or not args or not torch.is_tensor(args[0]) or not args[0].is_floating_point():
                return
            seen.add(name)
            product = as_matmul(module, args[0].detach())
            if product is not None and product[1].numel() <= LINEAR_MAX_WEIGHTS:
                captured.append((name, *product))
        return pre

    for name, module in model.named_modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d)) or type(module).__name__ == "Conv1D":
            handles.append(module.register_forward_pre_hook(hook(name)))
    try:
        yield captured
    finally:
        for handle in handles:
            handle.remove()


def evenly(count: int, most: int) -> list[int]:
    """`most` indices out of range(count), first and last included, evenly spaced."""
    if count <= most:
        return list(range(count))
    if most <= 1:
        return [0][:most]
    return [round(i * (count - 1) / (most - 1)) for i in range(most)]


def save_linear_layers(folder: Path, captured: list) -> dict:
    """Up to LINEAR_LAYERS captured layers, in forward order, as float32 npy files."""
    layers = []
    size = lambda picks: sum(4 * (w.numel() + min(x.shape[0], LINEAR_ROWS) * x.shape[1]) for _, x, w, _ in picks)
    for most in range(LINEAR_LAYERS, 0, -1):
        picked = [captured[i] for i in evenly(len(captured), most)]
        if size(picked) <= LINEAR_MAX_BYTES:
            break
    for n, (name, x, weight, kind) in enumerate(picked):
        rows = x[evenly(x.shape[0], LINEAR_ROWS)].float()
        weight = weight.detach().float()
        tensors = save_npy_dir(folder / f"{n:02}", {"x": rows, "w": weight})
        layers.append({"name": name, "role": linear_role(name), "kind": kind, "dir": f"linear/{n:02}",
                       "rows": tensors[0]["shape"][0], "in": tensors[1]["shape"][1], "out": tensors[1]["shape"][0]})
    return {"layers": layers, "captured": len(captured),
            "method": f"forward pre-hooks on the export shape: up to {LINEAR_LAYERS} layers ({LINEAR_MAX_BYTES >> 20} MiB) and {LINEAR_ROWS} rows each, evenly spread"}


def export(job: dict) -> None:
    spec = job["spec"]
    seed = int(job.get("seed", 0))
    out_dir = Path(job["out_dir"])
    # This process's own scratch folder: a concurrent or leftover export of the same model
    # (another worker, a killed run) never collides with it. gen removes leftovers.
    tmp = out_dir.with_name(f"{out_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)

    checkpoint = job.get("checkpoint")
    model, config = build_model(spec, seed, checkpoint)
    tokenizer = checkpoint_tokenizer(checkpoint, spec) if checkpoint else None
    # Fixed inputs are data of the fixture, given to the model as Python values: the graph is
    # specialised to the export shape's values (LLaVA-NeXT's image_sizes pick the tile grid in
    # Python control flow, which no exporter can keep symbolic). Each shape's reference is
    # computed with its own values, so a graph that does not generalise fails on shape 2.
    fixed_names = list(spec["export"].get("fixed_inputs") or [])
    input_names = [i["name"] for i in spec["inputs"] if i["name"] not in fixed_names]
    output_names = [o["name"] for o in spec["outputs"]]
    wrapper = NamedOutputs(model, input_names, output_names).eval()

    shapes_meta, second = [], None
    for index, shape in enumerate(spec["shapes"]):
        if tokenizer is not None:
            inputs, shape = tokenized_inputs(tokenizer, spec, index)
        else:
            inputs = build_inputs(spec, shape, config, seed + index, index, model)
        fixed = {name: inputs.pop(name).tolist() for name in fixed_names}
        wrapper.fixed = fixed
        with torch.no_grad(), (capture_linear_layers(model) if index == 0 else contextlib.nullcontext()) as captured:
            outputs = wrapper(*inputs.values())
        if index == 0:
            linear = save_linear_layers(tmp / "linear", captured)
        suffix = "" if index == 0 else str(index + 1)
        shapes_meta.append({
            "axes": {k: int(v) for k, v in sorted(shape.items())},
            **({"fixed_inputs": fixed} if fixed else {}),
            "inputs": save_npy_dir(tmp / f"inputs{suffix}", inputs),
            "outputs": save_npy_dir(tmp / f"outputs{suffix}", dict(zip(output_names, outputs))),
        })
        if index == 0:
            example, example_fixed = tuple(inputs.values()), fixed
        elif index == 1 and not fixed_names:
            second = tuple(inputs.values())
    wrapper.fixed = example_fixed  # the graph is traced with the export shape's values

    verify = lambda: verify_with_onnxruntime(tmp, len(spec["shapes"]), job.get("tolerance") or DEFAULT_TOLERANCE)
    exporter, errors = export_onnx(wrapper, example, input_names, output_names, dynamic_axes(spec), tmp / "model.onnx", spec, verify,
                                   second_example=second)
    meta = {
        **fixture_fields(spec, job, f"checkpoint:{checkpoint}" if checkpoint else "tiny-random", (exporter, errors),
                         wrapper, example, tmp, linear, shapes_meta),
        "versions": library_versions(),
        "config": config_json(config),
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)


def fixture_fields(spec: dict, job: dict, source: str, exported: tuple, wrapper, example, tmp: Path, linear: dict,
                   shapes_meta: list[dict]) -> dict:
    """The meta.json fields of a fixture whose float32 graph `tmp/model.onnx` is exported
    (`exported`: the recipe's attempt that made it and the errors of those before it): the TorchScript
    trace of the same wrapper, the precision variants of the graph, its integer nodes, and
    the shapes' inputs and references. A whole model and a component build theirs alike."""
    exporter, errors = exported
    return {
        "model_type": spec["model_type"],
        "source": source,
        "class": spec["export"]["class"],
        "seed": int(job.get("seed", 0)),
        "cache_key": job.get("cache_key"),
        "exporter": {**exporter, "version": EXPORTER_VERSION, "fallback_errors": errors},
        "torchscript": export_torchscript(wrapper, example, tmp / "model.pt", attempt_named(exporter.get("name"))),
        **precision_variants(tmp),
        "integer_nodes": integer_nodes(tmp / "model.onnx"),
        "linear_layers": linear,
        "inputs": shapes_meta[0]["inputs"],
        "outputs": shapes_meta[0]["outputs"],
        "shapes": shapes_meta,
    }


def config_json(config) -> dict:
    """A tiny model's config as meta.json records it: transformers' differences from the class
    defaults, or diffusers' constructor arguments."""
    if hasattr(config, "to_json_string"):
        return json.loads(config.to_json_string(use_diff=True))
    return json.loads(json.dumps(dict(config), default=str))


def library_versions() -> dict:
    return {"torch": torch.__version__, "transformers": transformers.__version__, "numpy": np.__version__}


def export_torchscript(wrapper, example, path: Path, attempt: "Attempt | None") -> dict:
    """The TorchScript export the libtorch engine runs: the same wrapper traced with the export
    shape's inputs, returning the spec's outputs in order, with the patches and experts of the
    recipe's attempt that made the ONNX graph (a loop the ONNX graph needed rewritten is unrolled
    by this trace alike). Tracing records one path through the model's Python; the second shape's
    check tells whether it generalises. A model that cannot be traced gets its error in meta.json
    (its torch cells fail with it, and `gen import --platform cpu` records that as their known
    issue) instead of failing the fixture."""
    try:
        with torch.no_grad(), warnings.catch_warnings(), attempt_context(attempt, wrapper):
            warnings.simplefilter("ignore")  # TracerWarnings: the second-shape check measures what they warn of
            # A compilation unit of its own: in the process-wide one, the classes a trace makes are
            # named by how many traces the worker made before (`___torch_mangle_N`), so the same
            # fixture's bytes would depend on the order `gen fixtures` built it in.
            traced = torch.jit.trace(
                wrapper, example, check_trace=False, strict=False, _compilation_unit=torch._C.CompilationUnit()
            )
            traced.save(str(path))
        return {"file": path.name, "method": "torch.jit.trace", "torch": torch.__version__}
    except Exception as error:  # noqa: BLE001 - the error is the record
        path.unlink(missing_ok=True)
        return {"error": _error_line(error)}


def precision_variants(tmp: Path) -> dict:
    """The formats deployments ship, each made from `tmp/model.onnx` by the standard tool with
    the settings its users use, as `model.<precision>.onnx` (the precision checks run them;
    runtime/cell's `Precision` names them): meta.json keeps, per precision, how it was made or
    the converter's error (a failed conversion is that check's known issue, not the fixture's).
    q4f16 is made from q4, so it comes after it."""
    return {name: make_variant(name, make, tmp) for name, make in VARIANTS.items()}


def make_variant(name: str, make, tmp: Path) -> dict:
    import logging

    import onnxruntime

    path = tmp / f"model.{name}.onnx"
    try:
        # The quantizers log every node at INFO and warn about pre-processing on stderr.
        logging.disable(logging.WARNING)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            method = make(tmp, path)
        return {"file": path.name, "method": method, "onnxruntime": onnxruntime.__version__}
    except Exception as error:  # noqa: BLE001 - the error is the record
        path.unlink(missing_ok=True)
        return {"error": _error_line(error)}
    finally:
        logging.disable(logging.NOTSET)


def variant_int8(tmp: Path, path: Path) -> str:
    """ONNX Runtime's dynamic quantization, per channel: int8 weights with a scale per output
    channel, activations quantized at run time, as users quantize for CPU inference."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(tmp / "model.onnx"), str(path), weight_type=QuantType.QInt8, per_channel=True)
    return "onnxruntime.quantization.quantize_dynamic, weight_type QInt8, per_channel"


def variant_int8_avx2(tmp: Path, path: Path) -> str:
    """int8 as optimum's `avx2` preset quantizes for CPUs without VNNI (AutoQuantizationConfig.avx2,
    dynamic): uint8 weights, symmetric, per channel, uint8 activations, reduce_range off; the same
    operators as variant_int8, so the two differ in the weights' type alone. ONNX Runtime multiplies
    u8 x u8 widened to 16 bits, which cannot saturate where int8's u8 x s8 pairs can (AVX2, AVX-512
    without VNNI)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(tmp / "model.onnx"), str(path), weight_type=QuantType.QUInt8, per_channel=True,
                     reduce_range=False, extra_options={"WeightSymmetric": True, "ActivationSymmetric": False})
    return "onnxruntime.quantization.quantize_dynamic, weight_type QUInt8, per_channel, WeightSymmetric (optimum's avx2 preset)"


def variant_fp16(tmp: Path, path: Path) -> str:
    """Weights and arithmetic in float16 with float32 inputs and outputs (casts at the graph's
    edges), for the platforms that compute in half precision. Ops ONNX Runtime lists as unsafe
    in float16 stay float32."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    onnx.save(convert_float_to_float16(onnx.load(str(tmp / "model.onnx")), keep_io_types=True), str(path))
    return "onnxruntime.transformers.float16.convert_float_to_float16, keep_io_types"


def variant_q4(tmp: Path, path: Path) -> str:
    """4-bit weights of every matrix product with a constant weight, in blocks of 32, symmetric
    (MatMulNBits): what transformers.js calls q4, and what onnxruntime-web's WebGPU provider
    runs natively. Other nodes stay float32."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(onnx.load(str(tmp / "model.onnx")), block_size=32, is_symmetric=True)
    quantizer.process()
    # A graph without such a product (a convolutional network's) would come out as the float32
    # model under another name, and its check would measure nothing about 4 bits.
    if not any(node.op_type == "MatMulNBits" for node in all_nodes(quantizer.model.model.graph)):
        raise RuntimeError("MatMulNBitsQuantizer quantized no node: the graph has no MatMul with a constant 2-D weight (its convolutions and Gemms stay float32)")
    quantizer.model.save_model_to_file(str(path), False)
    return "onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer, block_size 32, is_symmetric"


def variant_q4f16(tmp: Path, path: Path) -> str:
    """q4 with float16 activations (transformers.js's default for language models on WebGPU):
    the q4 graph converted to float16, float32 inputs and outputs kept."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    q4 = tmp / "model.q4.onnx"
    if not q4.is_file():
        raise RuntimeError("no q4 variant to convert (its conversion failed)")
    onnx.save(convert_float_to_float16(onnx.load(str(q4)), keep_io_types=True), str(path))
    return "model.q4.onnx through onnxruntime.transformers.float16.convert_float_to_float16, keep_io_types"


def variant_qdq8(tmp: Path, path: Path) -> str:
    """Static QDQ as ONNX Runtime documents it for QNN's HTP (the format Snapdragon NPUs and
    WebNN NPUs take): the graph first fused into the ops the HTP runs whole
    (`qnn_preprocess_model`: LayerNormalization, Gelu...), then QuantizeLinear/DequantizeLinear
    around every node, uint8 activations and uint8 weights (`get_qnn_qdq_config`'s defaults),
    activation ranges calibrated (min-max) on the fixture's own inputs, both shapes.
    Measured on the HTP emulator: int8 weights (per channel or per tensor) leave the
    LayerNormalizations and their weights' DequantizeLinear on the CPU (bert: 16 nodes)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config, qnn_preprocess_model

    class FixtureInputs(CalibrationDataReader):
        """The fixture's inputs of both shapes, those the graph takes (an exporter drops an
        input the traced model never read)."""

        def __init__(self):
            import onnx

            taken = {i.name for i in onnx.load(str(tmp / "model.onnx"), load_external_data=False).graph.input}
            folders = sorted(p for p in tmp.iterdir() if p.is_dir() and re.fullmatch(r"inputs\d*", p.name))
            self.batches = iter([{f.stem: np.load(f) for f in sorted(folder.glob("*.npy")) if f.stem in taken} for folder in folders])

        def get_next(self):
            return next(self.batches, None)

    fused = tmp / "model.qnn-preprocessed.onnx"
    try:
        source = fused if qnn_preprocess_model(str(tmp / "model.onnx"), str(fused), fuse_layernorm=True) else tmp / "model.onnx"
        config = get_qnn_qdq_config(str(source), FixtureInputs(), activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)
        with _rewiring_only_consumers(), _calibrating_at_graph_end():
            quantize(str(source), str(path), config)
    finally:
        fused.unlink(missing_ok=True)
    return "onnxruntime.quantization: qnn_preprocess_model (fuse_layernorm), then quantize with get_qnn_qdq_config (QDQ, activations QUInt8, weights QUInt8), min-max calibration on the fixture's inputs"


@contextlib.contextmanager
def _rewiring_only_consumers():
    """ONNX Runtime's QDQ quantizer rewires each quantized tensor's consumers by calling a Python
    function on every node of the graph (`ONNXModel.replace_input_of_all_nodes`): quadratic in
    the graph's size, 32 of bailing_hybrid's 65 s. The same rewiring through an index of each
    tensor's consumers, kept up to date as the quantizer appends its QuantizeLinear and
    DequantizeLinear nodes and as it renames inputs (`replace_node_input`), and rebuilt whenever
    the node list changed otherwise, writes the same graph byte for byte (test_export.py): a
    scan of every node's inputs per tensor still took 9 of bailing_hybrid's 14 s."""
    from onnxruntime.quantization.onnx_model import ONNXModel

    original_all, original_one = ONNXModel.replace_input_of_all_nodes, ONNXModel.replace_node_input
    indexes: dict[int, dict] = {}  # per ONNXModel: consumers by tensor, nodes indexed, the last one's name

    def consumers(model) -> dict:
        nodes = model.model.graph.node
        index = indexes.get(id(model))
        if index is None or index["count"] > len(nodes) or (
                index["count"] and nodes[index["count"] - 1].name != index["last"]):
            index = indexes[id(model)] = {"by_tensor": {}, "count": 0, "last": None}
        for node in nodes[index["count"]:]:
            for name in node.input:
                index["by_tensor"].setdefault(name, []).append(node)
        index["count"], index["last"] = len(nodes), nodes[-1].name if len(nodes) else None
        return index["by_tensor"]

    def replace_input_of_consumers(self, old_input_name, new_input_name):
        by_tensor = consumers(self)
        for node in by_tensor.pop(old_input_name, []):
            if old_input_name in node.input:
                original_one(node, old_input_name, new_input_name)
                by_tensor.setdefault(new_input_name, []).append(node)

    def replace_node_input(node, old_input_name, new_input_name):
        original_one(node, old_input_name, new_input_name)
        for index in indexes.values():
            index["by_tensor"].setdefault(new_input_name, []).append(node)

    ONNXModel.replace_input_of_all_nodes = replace_input_of_consumers
    ONNXModel.replace_node_input = staticmethod(replace_node_input)
    try:
        yield
    finally:
        ONNXModel.replace_input_of_all_nodes = original_all
        ONNXModel.replace_node_input = staticmethod(original_one)


@contextlib.contextmanager
def _calibrating_at_graph_end():
    """ONNX Runtime's min-max calibrator adds a ReduceMin and a ReduceMax (each reshaped to one
    dimension) of every tensor it calibrates as outputs of a copy of the graph, and inserts each
    pair before the tensor's first consumer, which it finds by scanning every node, and reads the
    tensor's type from a dictionary of every value it rebuilds per pair: quadratic in the graph's
    size, 30 of bailing_hybrid's 54 s. The same nodes and outputs appended at the end of the graph
    (they read tensors the graph already computes, so the order stays topological) give the same
    ranges, hence the same quantized graph byte for byte (test_export.py). Per-channel
    calibration, which the QDQ config here does not use, keeps ONNX Runtime's own."""
    import onnx
    from onnx import helper, numpy_helper
    from onnxruntime.quantization.calibrate import MinMaxCalibrater

    original = MinMaxCalibrater.augment_graph

    def augment_graph(self):
        if self.per_channel:
            return original(self)
        tensors, value_infos = self.select_tensors_to_calibrate(self.model)
        graph = self.model.graph
        flat = "hwmatrix_calibration_flat_shape"
        graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), flat))
        nodes, outputs = [], []
        for tensor in sorted(tensors):
            if tensor not in value_infos:
                raise ValueError(f"no type known for tensor {tensor!r} to calibrate; run shape inference first")
            element = value_infos[tensor].type.tensor_type.elem_type
            for reduce in ("ReduceMin", "ReduceMax"):
                # The output names are the calibrator's own: it reads the tensor's name back from them.
                out = f"{tensor}_{reduce}"
                nodes.append(helper.make_node(reduce, [tensor], [out + "_Reshape"], keepdims=1, name=out))
                nodes.append(helper.make_node("Reshape", [out + "_Reshape", flat], [out], name=out + "_Reshape"))
                outputs.append(helper.make_tensor_value_info(out, element, [None]))
        graph.node.extend(nodes)
        graph.output.extend(outputs)
        onnx.save(self.model, self.augmented_model_path, save_as_external_data=self.use_external_data_format)

    MinMaxCalibrater.augment_graph = augment_graph
    try:
        yield
    finally:
        MinMaxCalibrater.augment_graph = original


def all_nodes(graph):
    """A graph's nodes and those of its subgraphs (If and Loop bodies), depth first."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            for subgraph in [attribute.g] if attribute.HasField("g") else attribute.graphs:
                yield from all_nodes(subgraph)


# Every precision variant, by the name its precision check uses; q4f16 converts q4.
VARIANTS = {"int8": variant_int8, "int8_avx2": variant_int8_avx2, "fp16": variant_fp16, "q4": variant_q4, "q4f16": variant_q4f16, "qdq8": variant_qdq8}


FLOAT_TYPES = {1, 10, 11, 16}  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16


def integer_nodes(model: Path) -> dict:
    """Which of model.onnx's nodes compute on index and shape data only: those with no
    floating-point output (Shape, Gather on shapes, Range, Unsqueeze...) or no
    floating-point input (a Cast of positions to float, ConstantOfShape). Web and GPU
    providers leave such int64 nodes to ONNX Runtime's CPU provider by design; a fallback
    node listed under `float` computes on floats, and the placement check fails it. A
    node in neither list was made by ONNX Runtime's optimizer. A tensor whose type shape
    inference cannot tell counts as floating-point."""
    try:
        import onnx

        graph = onnx.shape_inference.infer_shapes(onnx.load(str(model))).graph
        types = {v.name: v.type.tensor_type.elem_type for v in [*graph.input, *graph.value_info, *graph.output]}
        types.update({t.name: t.data_type for t in graph.initializer})
        is_float = lambda name: types.get(name, 0) in FLOAT_TYPES | {0}
        integer, floating = [], []
        for node in graph.node:
            if not node.name:
                continue
            outputs = [o for o in node.output if o]
            inputs = [i for i in node.input if i]
            on_integers = not any(map(is_float, outputs)) or (inputs and not any(map(is_float, inputs)))
            (integer if on_integers else floating).append(node.name)
        return {
            "names": sorted(integer),
            "float": sorted(floating),
            "method": "onnx.shape_inference over model.onnx; names: no float output or no float input",
        }
    except Exception as error:  # noqa: BLE001 - the error is the record
        return {"error": _error_line(error)}


@contextlib.contextmanager
def _env(name: str, value: str):
    """Sets one environment variable for the duration of a block."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


def _error_line(error: BaseException) -> str:
    """One line for an exporter error: its first line, plus that of its root cause when chained.

    torch.onnx's dynamo errors open with a generic "Failed to ... This is step N/3" line and
    keep the real reason (e.g. a missing ONNX function) in the chained cause. Never shortened:
    the line is stored as evidence whole (an error cut at a length lost dynamo's cause behind
    the legacy exporter's message); displays shorten it where they must."""
    def first_line(e: BaseException) -> str:
        lines = [l.strip() for l in str(e).splitlines() if l.strip()]
        return f"{type(e).__name__}: " + re.sub(r"\s*Next steps:$", "", lines[0] if lines else "")

    root = error
    while root.__cause__ is not None and root.__cause__ is not root:
        root = root.__cause__
    line = first_line(error)
    if root is not error:
        line += f" (cause: {first_line(root)})"
    return re.sub(r"\x1b\[[0-9;]*m", "", line)


DEFAULT_TOLERANCE = {"abs": 1e-4, "rel": 1e-3}


class OtherShapeFailure(RuntimeError):
    """The graph passed onnxruntime against PyTorch on the export shape and failed on another:
    the exporter baked that shape in (a size, a split, a loop count)."""


def verify_with_onnxruntime(folder: Path, shapes: int, tolerance: dict) -> None:
    """Runs the exported graph with onnxruntime's CPU provider on every shape and compares it
    with the PyTorch reference as the Rust checks do (|got - expected| <= abs + rel * |expected|).
    A graph that fails here never becomes a fixture: the error is the architecture's known issue,
    recorded by `gen import`, instead of a cell that fails in every test run. A failure past
    the export shape is an `OtherShapeFailure` (export_onnx may keep that graph)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001
        raise RuntimeError(f"onnxruntime cannot load the exported graph: {_error_line(error)}") from None
    graph_inputs = {i.name for i in session.get_inputs()}
    for index in range(shapes):
        suffix = "" if index == 0 else str(index + 1)
        failure = RuntimeError if index == 0 else OtherShapeFailure
        # Only the graph's inputs, as the cells feed them: the legacy exporter drops an input
        # the traced model never read (the references show whether it mattered).
        feeds = {p.stem: np.load(p) for p in sorted((folder / f"inputs{suffix}").glob("*.npy")) if p.stem in graph_inputs}
        names = [o.name for o in session.get_outputs()]
        try:
            got = dict(zip(names, session.run(names, feeds)))
        except Exception as error:  # noqa: BLE001
            raise failure(f"onnxruntime fails on shape {index + 1}: {_error_line(error)}") from None
        for path in sorted((folder / f"outputs{suffix}").glob("*.npy")):
            expected = np.load(path)
            actual = got.get(path.stem)
            if actual is None or actual.shape != expected.shape:
                raise failure(f"onnxruntime gives output {path.stem} shape {None if actual is None else list(actual.shape)} "
                              f"on shape {index + 1}, the reference has {list(expected.shape)}")
            if expected.dtype.kind == "f":
                bound = tolerance["abs"] + tolerance["rel"] * np.abs(expected)
                # Written as "not within" so that NaN on either side counts as a mismatch.
                bad = ~(np.abs(actual.astype(np.float64) - expected) <= bound)
            else:
                bad = actual != expected
            if bad.any():
                worst = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
                raise failure(f"onnxruntime output {path.stem} differs from PyTorch on shape {index + 1}: "
                              f"{int(bad.sum())} of {expected.size} elements outside abs {tolerance['abs']} + rel "
                              f"{tolerance['rel']} (max abs error {float(np.nanmax(worst)):.3e})")


def tidy_dynamo_graph(path: Path, input_names, axes) -> None:
    """Gives the dynamo graph's symbolic dimensions the spec's axis names, and drops what the
    exporter annotates each node with.

    With `Dim.AUTO`, dynamo names dimensions after its own symbols (`s33`), and not even
    consistently: input_ids' batch and attention_mask's batch can be two symbols. Runtimes that
    need static shapes fix dimensions by name (onnxruntime's `freeDimensionOverrides`, which WebNN
    requires), so a graph without the declared names keeps every node off WebNN. Each symbol is
    renamed wherever it appears: graph inputs, outputs and intermediate shapes.

    dynamo also writes every node's Python stack trace, FX node and module path into its
    `metadata_props`: no engine reads them, they carry the checkout's absolute paths (so a
    fixture's bytes would depend on where it was exported), and they were 174 MiB of the
    1,569 MiB store (a 6 MB minicpm_ocr graph held 0.8 MB of weights)."""
    import onnx

    model = onnx.load(str(path))
    rename = {}
    for graph_input in model.graph.input:
        declared = axes.get(graph_input.name, {})
        for index, dim in enumerate(graph_input.type.tensor_type.shape.dim):
            if dim.dim_param and index in declared:
                rename.setdefault(dim.dim_param, declared[index])
    for value in [*model.graph.input, *model.graph.output, *model.graph.value_info]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param in rename:
                dim.dim_param = rename[dim.dim_param]
    for graph in _graphs(model.graph):
        for node in graph.node:
            del node.metadata_props[:]
            node.doc_string = ""
    for function in model.functions:
        for node in function.node:
            del node.metadata_props[:]
            node.doc_string = ""
    onnx.save(model, str(path))


def _graphs(graph):
    """A graph and every subgraph of its nodes (If and Loop bodies), depth first."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                yield from _graphs(sub)


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One way of exporting, as the recipe tries it: which torch.onnx exporter, at which opset,
    traced on which shape, with or without patches.py's rewrites, and (dynamo) with
    torch.export's draft mode, which settles data-dependent guards by the example's values."""

    name: str
    dynamo: bool
    opset: int
    on_second_shape: bool = False
    patched: bool = False
    draft: bool = False
    batched_experts: bool = False


# The recipe, in order. The first three are today's fixtures' exporters: a model they get
# through keeps its graph (and its evidence on every platform). The rest are what the
# ecosystem's exporters do where those fail: opset 18 (Resize with antialias), rewrites of the
# functions torch.onnx cannot translate (optimum's model patchers), and torch.export's draft
# mode for the guards on data-dependent values it stops at.
#
# Opset 18 throughout: the opset of today's dynamo graphs, which every engine here runs (cpu,
# openvino, qnn, webgpu, webnn); a newer one was not measured on those providers, whose kernels
# are registered per opset.
RECIPE = (
    Attempt("legacy", dynamo=False, opset=17),
    Attempt("dynamo on shape 2", dynamo=True, opset=18, on_second_shape=True),
    Attempt("dynamo", dynamo=True, opset=18),
    Attempt("legacy at opset 18, patched", dynamo=False, opset=18, patched=True),
    Attempt("dynamo, patched", dynamo=True, opset=18, on_second_shape=True, patched=True),
    Attempt("legacy at opset 18, patched, batched experts", dynamo=False, opset=18, patched=True, batched_experts=True),
    Attempt("dynamo, patched, batched experts", dynamo=True, opset=18, on_second_shape=True, patched=True, batched_experts=True),
    Attempt("dynamo draft export, patched", dynamo=True, opset=18, on_second_shape=True, patched=True, draft=True),
)


def expert_modules(model) -> list:
    """The mixture-of-experts layers whose implementation transformers lets one choose (the
    classes of its `@use_experts_implementation`, which read `config._experts_implementation` at
    every call)."""
    return [m for m in model.modules() if hasattr(m, "_is_expert_parallel") and hasattr(m, "is_concatenated")]


@contextlib.contextmanager
def experts_batched(model):
    """The model's experts computed by transformers' `batched_mm` implementation while it is
    exported: each token's chosen experts' weights gathered and applied as one batched matmul, a
    graph of static shapes, where the eager loop over the experts a batch hit (`nonzero`, then
    `index_add_` per expert) is data-dependent: the legacy trace bakes which experts the example
    hit, and torch.export stops at a guard on their count. The same sum of the same products, so
    the graph is checked against the references the eager experts computed."""
    configs = {id(m.config): m.config for m in expert_modules(model)}
    before = {key: config._experts_implementation for key, config in configs.items()}
    try:
        for config in configs.values():
            config._experts_implementation = "batched_mm"
        yield
    finally:
        for key, config in configs.items():
            config._experts_implementation = before[key]


@contextlib.contextmanager
def onnx_export_mode(model):
    """transformers' own ONNX-export mode (`config.onnx_export`) on while a patched attempt traces:
    Longformer and LED read it to build their overlapping attention chunks with `unfold` instead
    of `as_strided` over a reshaped view, whose legacy translation ONNX Runtime computes 2e-4 to
    4e-4 away from PyTorch (1.6e-3 in one self-attention layer alone; PyTorch in float32 and
    float64 differ by 6.5e-7, so it is not rounding). The same windows of the same values (the
    graph is checked against the references the default mode computed); the configs are
    restored after it."""
    configs = {id(m.config): m.config for m in model.modules() if hasattr(m, "config")}
    before = {key: config.__dict__.get("onnx_export") for key, config in configs.items()}
    try:
        for config in configs.values():
            config.onnx_export = True
        yield
    finally:
        for key, config in configs.items():
            if before[key] is None:
                config.__dict__.pop("onnx_export", None)
            else:
                config.onnx_export = before[key]


def attempt_named(name: str | None) -> Attempt | None:
    """The recipe's attempt of that name (meta.json's `exporter.name`); None for a fixture
    without an ONNX graph (torchscript.py)."""
    return next((a for a in RECIPE if a.name == name), None)


@contextlib.contextmanager
def attempt_context(attempt: Attempt | None, model):
    """What an attempt changes while it traces `model`: patches.py's rewrites (and the complex
    tables the model cached, as parts) with transformers' ONNX-export mode, and the experts
    computed batched. Nothing without one."""
    import patches

    if attempt is None:
        yield
        return
    with (patches.applied(attempt.opset) if attempt.patched else contextlib.nullcontext()), \
            (patches.complex_attributes(model) if attempt.patched else contextlib.nullcontext()), \
            (onnx_export_mode(model) if attempt.patched else contextlib.nullcontext()), \
            (experts_batched(model) if attempt.batched_experts else contextlib.nullcontext()):
        yield


def recipe(spec: dict, second_example) -> list[Attempt]:
    """The attempts for a spec: its `export.exporter` choice keeps one exporter's attempts;
    tracing on the second shape is left out where fixed inputs tie the graph to the export shape
    (the patched attempts then trace on the export shape). The
    attempt that made the model's last fixture (`export.attempt`, which gen import records)
    goes first, the others after it in order; except draft export, which stays last: it runs
    the model on real tensors beside the fake ones (mimi's took 150 s, a tenth of a cold export),
    so a patch that lets an earlier attempt through gets its chance first. Where that attempt's
    graph runs at the export shape only (`export.shape_only`), it is the only one."""
    choice = spec["export"].get("exporter", "auto")
    attempts = [a for a in RECIPE
                if (choice == "auto" or a.dynamo == (choice == "dynamo"))
                and not (a.on_second_shape and not a.patched and second_example is None)]
    first = [a for a in attempts if a.name == spec["export"].get("attempt") and not a.draft]
    if spec["export"].get("shape_only") and first:
        # That attempt's graph runs at the export shape only, and none of the others passed
        # both shapes when gen import recorded it: they would fail again on every export.
        return first
    return first + [a for a in attempts if a not in first]


def worth_trying(attempt: Attempt, errors: dict, used: set, has_experts: bool) -> bool:
    """Whether an attempt can get further than those before it: a patched dynamo export only if
    the model called a patched function, batched experts only for a model with experts, draft
    export only past a data-dependent guard. The
    first attempt (the one that made the last fixture, where gen import recorded it) always."""
    if not errors:
        return True
    if attempt.batched_experts:
        return has_experts
    if attempt.draft:
        return any("GuardOnDataDependentSymNode" in e for e in errors.values())
    if attempt.dynamo and attempt.patched:
        return bool(used)
    return True


@contextlib.contextmanager
def dynamo_speedups():
    """What shortens a dynamo export here and never changes its graph (the same nodes,
    attributes and weights; only the names torch.export numbers its values with differ:
    test_export.py). Each is where PyTorch 2.13 and onnxscript 0.7 spend time that the graph
    does not need, measured on olmo_hybrid's export (38 s before the first two, 17 s after) and
    autoencoder_kl_cosmos's (the last two: the optimizer 3.4 s before, 2.6 s after):

    - FakeTensor's dispatch cache off: a cache hit rebuilds the output's symbolic sizes from the
      entry through sympy, which costs more than computing them again (torch.export's trace and
      its decompositions' re-trace, 27 of olmo_hybrid's 38 s, became 12 s).
    - onnxscript's rewriter asks every rule at every node, and a rule's matcher does its work
      (for a pattern of several output nodes: indexing the whole graph by op, quadratic) before
      it compares the node's op with the op of the pattern's output node, which every match
      starts with. Rules are asked only at nodes of their own op (`_rules_tried_at_their_op`).
    - torch.onnx builds its registry of torchlib's translations (reading the source of a
      thousand functions) at every export: 0.25 s each. It is built once per opset and
      copied (`_torchlib_registry_built_once`)."""
    with torch._dynamo.config.patch(fake_tensor_cache_enabled=False), _rules_tried_at_their_op(), \
            _torchlib_registry_built_once():
        yield


@contextlib.contextmanager
def _rules_tried_at_their_op():
    """onnxscript's RewriteRule.try_rewrite answers "no rewrite" at once at a node of another op
    type than its pattern's first output node (a constant op type, matched by the default
    SimplePatternMatcher): that matcher starts every match by comparing exactly these (the
    pattern node's `matches`: `op.matches(node.op_type)` first), and fails. A rule with another
    matcher or an op pattern that is not a constant, or a traced rewrite, is asked as before."""
    from onnxscript.rewriter import _matcher, _pattern_ir, _rewrite_rule

    original = _rewrite_rule.RewriteRule.try_rewrite

    def op_type_of(rule) -> str | None:
        op = rule._target_pattern.output_nodes[0].op
        constant = isinstance(rule._matcher, _matcher.SimplePatternMatcher) and isinstance(op, _pattern_ir.StringConstantPattern)
        return op.value() if constant else None

    def try_rewrite(self, model, graph_or_function, node, *, verbose=None, tracer=None):
        if tracer is None:
            op_type = op_type_of(self)
            if op_type is not None and op_type != node.op_type:
                return None
        return original(self, model, graph_or_function, node, verbose=verbose, tracer=tracer)

    _rewrite_rule.RewriteRule.try_rewrite = try_rewrite
    try:
        yield
    finally:
        _rewrite_rule.RewriteRule.try_rewrite = original


_TORCHLIB_REGISTRIES: dict = {}  # by opset: torch.onnx's registry of torchlib's translations


@contextlib.contextmanager
def _torchlib_registry_built_once():
    """torch.onnx's ONNXRegistry.from_torchlib, built once per opset in this process; each
    export gets its own registry object with its own lists (the exports here register no
    custom translation, and torch.onnx only reads the registry otherwise)."""
    from torch.onnx._internal.exporter import _registration

    original = _registration.ONNXRegistry.__dict__["from_torchlib"]

    def from_torchlib(cls, opset_version=_registration._constants.TORCHLIB_OPSET):
        built = _TORCHLIB_REGISTRIES.get((cls, opset_version))
        if built is None:
            built = _TORCHLIB_REGISTRIES[(cls, opset_version)] = original.__func__(cls, opset_version)
        registry = cls()
        registry._opset_version = built._opset_version
        registry.functions = {target: list(metas) for target, metas in built.functions.items()}
        return registry

    _registration.ONNXRegistry.from_torchlib = classmethod(from_torchlib)
    try:
        yield
    finally:
        _registration.ONNXRegistry.from_torchlib = original


def export_with(attempt: Attempt, wrapper, example, input_names, output_names, axes, path: Path) -> None:
    """Writes the graph of one attempt to `path`."""
    if not attempt.dynamo:
        torch.onnx.export(wrapper, example, str(path), dynamo=False, input_names=input_names,
                          output_names=output_names, dynamic_axes=axes, opset_version=attempt.opset)
        return
    # The wrapper's forward takes *args: its one parameter gets the tuple of per-input shapes.
    dims = tuple({axis: torch.export.Dim.AUTO for axis in axes.get(name, {})} for name in input_names)
    # transformers' input-consistency checks (torch_compilable_check) trace to
    # aten._is_all_true, which has no ONNX translation; they guard inputs only, so they
    # are switched off while tracing (the references were computed with them on).
    with _env("TRANSFORMERS_DISABLE_TORCH_CHECK", "1"), dynamo_speedups():
        model = wrapper
        if attempt.draft:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = torch.export.draft_export(wrapper, example, dynamic_shapes=(dims,))
        program = torch.onnx.export(model, example, dynamo=True, input_names=input_names,
                                    output_names=output_names, dynamic_shapes=None if attempt.draft else (dims,),
                                    opset_version=attempt.opset, external_data=False)
    program.save(str(path), external_data=False)
    tidy_dynamo_graph(path, input_names, axes)


def export_onnx(wrapper, example, input_names, output_names, axes, path: Path, spec: dict, verify, second_example=None):
    """Tries the recipe's attempts in order until one's graph passes `verify` (onnxruntime
    against PyTorch on both shapes); returns that attempt (its name and the patches its model
    called) and the whole error of each attempt before it.

    Legacy TorchScript-based export first (fast): it bakes some shapes and branches in as
    constants, which the second shape catches, and dynamo keeps them symbolic.

    torch.export specialises every dimension of size 1 to the constant 1, so a graph dynamo
    traced on a batch of one cannot take a batch of two (a Reshape to [1, ...] fails on shape 2:
    diffusers' transformers). So dynamo traces on the second shape's inputs first
    (`second_example`, absent when fixed inputs tie the graph to the export shape), and on the
    export shape's only when that fails. Tracing the export shape first paid for two dynamo
    exports (5 to 20 s each here) in 33 of the 87 fixtures dynamo made.

    Where no attempt's graph passes every shape, the first whose graph passed the export shape
    and failed another is the fixture, with that failure as its `export_shape_only`: the graph
    users of that exporter would get, which runs at the export shape and has the other baked
    in. Its cells run for real, and each platform's dynamic_shapes check fails on the second
    shape with the engine's own error, where an export failure would have left the model no
    cell at all (the errors of the attempts after it stay beside those before it)."""
    import patches

    errors, used, has_experts = {}, set(), bool(expert_modules(wrapper))
    kept, export_shape_only = path.with_name(f"{path.stem}.export-shape-only.onnx"), None
    for attempt in recipe(spec, second_example):
        if not worth_trying(attempt, errors, used, has_experts):
            continue
        traced_on = second_example if attempt.on_second_shape and second_example is not None else example
        try:
            try:
                with attempt_context(attempt, wrapper):
                    export_with(attempt, wrapper, traced_on, input_names, output_names, axes, path)
            finally:
                if attempt.patched:
                    used |= patches.used()
            made = {"name": attempt.name, "opset": attempt.opset, **({"patches": sorted(used)} if attempt.patched else {})}
            verify()
            kept.unlink(missing_ok=True)
            return made, errors
        except Exception as error:  # noqa: BLE001 - every exporter error is reported, none swallowed
            errors[attempt.name] = _error_line(error)
            if isinstance(error, OtherShapeFailure) and export_shape_only is None:
                path.replace(kept)
                export_shape_only = {**made, "export_shape_only": errors[attempt.name]}
            path.unlink(missing_ok=True)
    if export_shape_only is not None:
        kept.replace(path)
        return export_shape_only, {k: v for k, v in errors.items() if k != export_shape_only["name"]}
    raise RuntimeError("; ".join(f"{k} exporter: {v}" for k, v in errors.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec-yaml", help="export straight from a model spec file (for spec work without gen)")
    parser.add_argument("--out", help="output folder with --spec-yaml")
    args = parser.parse_args()
    if args.spec_yaml:
        import yaml

        job = {"spec": yaml.safe_load(open(args.spec_yaml)), "out_dir": args.out, "seed": 0}
    else:
        job = json.load(sys.stdin)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    try:
        export(job)
    except Exception as error:  # noqa: BLE001
        traceback.print_exc()
        print(f"{type(error).__name__}: {error}".splitlines()[0][:800], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
