"""What makes a model tiny, shared by the registry's transformers models (registry.py) and
diffusers' models (diffusion.py): the parameter limit and its check, the widest shrinking, and
how an input is declared."""

from __future__ import annotations

import re

import torch

# Every tiny model, however it was shrunk, must make a fixture folder of 16 MB or less, every
# variant included (float32 ONNX and TorchScript, float16, int8: about 11 bytes a parameter),
# so that the whole store stays near 1.5 GB and the web engines load it quickly. transformers'
# and diffusers' own testers stay far below this; more means some width the shrinking does not
# know stayed full size. diffusers' tiny models (diffusion.build) have the same limit.
MAX_PARAMETERS = 1_400_000


# The widest shrinking, tried last and only for a model the others leave over the parameter
# limit: every int key that names a width (below) and is over 64 becomes 32 (64 for a feed-forward
# width), and lists of widths (per-stage channels) are capped at 32. Such keys are architecture-
# specific spellings the registry's SHRINK table does not list (`vision_hidden_size`, `codebook_dim`...).
WIDE_KEY = re.compile(r"(hidden|_dim$|^dim$|_dims$|width|channels|embed|ffn|intermediate|inner|_size$)")
WIDE_SKIP = re.compile(r"(vocab|position|image|patch|token|kernel|stride|window|bins|sample|group|layer|head|batch|chunk|"
                       r"length|frames|rate|num_|max_|min_|seq|n_fft|hop|pad|spatial|temporal|resolution|codebook_size|bucket)")


def cap_widths(values: dict, out: dict) -> None:
    for key, value in values.items():
        if key in out or WIDE_SKIP.search(key) or not WIDE_KEY.search(key):
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value > 64:
            out[key] = 64 if re.search(r"ffn|intermediate|inner", key) else 32
        elif isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value) and max(value) > 64:
            out[key] = [min(v, 32) for v in value]


def check_size(build, limit: int, mild: bool, wide: bool = False) -> None:
    """Refuses a model over `limit` parameters, counted on a model `build()` makes on the meta
    device (no memory): transformers' and diffusers' tiny models alike."""
    with torch.device("meta"):
        count = sum(p.numel() for p in build().parameters())
    if count > limit:
        kept = ("with every width-named key capped at 32" if wide else "with every width kept" if mild
                else "after shrinking (some width it does not know stayed full size)")
        raise RuntimeError(f"the tiny model has {count / 1e6:.1f}M parameters {kept}; the limit is {limit / 1e6:.1f}M")


def tensor(name, dtype, axes, fill=None) -> dict:
    return {"name": name, "dtype": dtype, "axes": axes, **({"fill": fill} if fill else {})}
