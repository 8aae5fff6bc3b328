"""The diffusion category, from `diffusers`: what `registry.py` does for transformers.

diffusers has no task registries, so the category is decided by the class family:

- the architectures are diffusers' model classes (subclasses of `ModelMixin` exported at the
  top level) of the three families the category covers: UNets (`UNet*Model`), autoencoders
  (`Autoencoder*`, `VQModel`) and diffusion transformers (`*Transformer2DModel`,
  `*Transformer3DModel`, `*DiT2DModel`); ControlNets and adapters condition another model
  and are left out;
- an architecture's `model_type` is the diffusers module that defines its class
  (`unet_2d_condition`, `autoencoder_kl`, `transformer_sd3`), with the class name appended when
  one module defines several;
- the tiny config is the constructor's defaults shrunk generically (`shrink`): 32 channels
  per block, one layer per block, 2 transformer layers of 4 heads of 8, 16x16 samples;
- the inputs come from the forward parameters by name (`candidate_layouts`): the noisy sample or latent
  image, the timestep, the text conditioning and pooled projection where the model takes them,
  the class label where the config embeds classes.
"""

from __future__ import annotations

import functools
import inspect
import re

from tiny import MAX_PARAMETERS, cap_widths, check_size, tensor

FAMILIES = re.compile(r"^(UNet\w*Model|Autoencoder\w*|VQModel|\w*Transformer[23]DModel|\w*DiT2DModel)$")
LEFT_OUT = re.compile(r"ControlNet|Adapter|Multi")

# Constructor arguments that are widths, depths or sizes, and the value a tiny model gets.
SHRINK = {
    32: ["cross_attention_dim", "joint_attention_dim", "pooled_projection_dim", "caption_channels",
         "caption_projection_dim", "text_embed_dim", "hidden_size", "text_dim", "time_embed_dim", "dim", "model_dim",
         "base_dim", "decoder_dim", "encoder_hidden_size", "cap_feat_dim", "in_text_dim", "in_text_dim2"],
    64: ["ffn_dim", "ff_dim"],
    8: ["attention_head_dim"],
    4: ["num_attention_heads"],  # 4 heads of 8: an inner width of 32, like the widths above
    2: ["num_layers"],
    1: ["layers_per_block", "transformer_layers_per_block", "num_single_layers"],
    16: ["sample_size"],
}
BLOCK_CHANNELS = 32  # every block; also a multiple of the default 32 norm groups


@functools.cache
def rows() -> list[dict]:
    """One row per diffusion architecture, like registry.registry_rows()."""
    import diffusers
    from diffusers.models.modeling_utils import ModelMixin

    classes = []
    for name in sorted(dir(diffusers)):
        if not FAMILIES.match(name) or LEFT_OUT.search(name):
            continue
        try:
            cls = getattr(diffusers, name)
        except Exception:  # noqa: BLE001 - a class whose optional dependency is missing
            continue
        if inspect.isclass(cls) and issubclass(cls, ModelMixin):
            classes.append((cls.__module__.rsplit(".", 1)[-1], name))
    per_module = {}
    for module, _ in classes:
        per_module[module] = per_module.get(module, 0) + 1
    return [{"model_type": module if per_module[module] == 1 else f"{module}_{name.lower()}", "base_class": name,
             "registries": ["diffusers"], "config_class": None, "library": "diffusers",
             "from": f"diffusers {diffusers.__version__}"}
            for module, name in classes]


def classify(row: dict) -> dict:
    name = row["base_class"]
    autoencoder = name.startswith(("Autoencoder", "VQModel"))
    return {"category": "diffusion", "architecture": "diffusion", "modality": "vision",
            "task": "image-autoencoding" if autoencoder else "denoising",
            "why": f"a diffusers {'autoencoder' if autoencoder else 'UNet' if name.startswith('UNet') else 'diffusion transformer'}"}


def shrink(row: dict, wide: bool = False) -> dict:
    """The constructor arguments of a tiny model: the defaults that are widths or depths, smaller.
    `wide` also caps every other width-named default (tiny.WIDE_KEY), for a model the table
    leaves over the parameter limit."""
    from export import model_class

    params = inspect.signature(model_class(row["base_class"]).__init__).parameters
    out = {}
    if wide:

        cap_widths({k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}, out)
    for target, keys in SHRINK.items():
        for key in keys:
            default = params[key].default if key in params else None
            if isinstance(default, int) and not isinstance(default, bool) and default > target:
                out[key] = target
    for key in ("block_out_channels", "encoder_block_out_channels", "decoder_block_out_channels"):
        default = params[key].default if key in params else None
        if isinstance(default, (list, tuple)) and all(isinstance(v, int) for v in default):
            out[key] = [BLOCK_CHANNELS] * len(default)
    return out


def build(row: dict, tiny_config: dict, wide: bool = False, limit: int = MAX_PARAMETERS):
    """The tiny model and its config (diffusers' frozen dict of constructor arguments), once
    its parameter count is under the tiny-model limit (building one that is not could take
    the machine's memory: three classes would need tens of billions of parameters)."""
    from export import model_class

    cls = model_class(row["base_class"])
    check_size(lambda: cls(**tiny_config), limit, mild=False, wide=wide)
    model = cls(**tiny_config)
    return model, model.config


def _size(config) -> int:
    size = config.get("sample_size")
    return size if isinstance(size, int) else 16


def candidate_layouts(params: list[str], config) -> list[tuple[list[dict], list[dict]]]:
    """Inputs by forward parameter name: the sample, then what conditions it."""

    first = params[0]
    if first not in ("sample", "hidden_states"):
        return []
    channels = config.get("in_channels") or 3
    image = [tensor(first, "float32", ["batch", "channels", "height", "width"], "normal")]
    inputs = list(image)
    if "timestep" in params:
        inputs.append(tensor("timestep", "float32", ["batch"], "timesteps"))
    text_dim = next((config.get(k) for k in ("cross_attention_dim", "joint_attention_dim", "caption_channels")
                     if isinstance(config.get(k), int)), None)
    if "encoder_hidden_states" in params and text_dim:
        inputs.append(tensor("encoder_hidden_states", "float32", ["batch", "text_sequence", "text_hidden"], "normal"))
    if "pooled_projections" in params and isinstance(config.get("pooled_projection_dim"), int):
        inputs.append(tensor("pooled_projections", "float32", ["batch", "pooled"], "normal"))
    if "class_labels" in params and (config.get("num_class_embeds") or config.get("num_embeds_ada_norm")):
        inputs.append(tensor("class_labels", "int64", ["batch"], "labels"))
    size = _size(config)
    shapes = [{"batch": b, "channels": channels, "frames": FRAMES, "height": size, "width": size, "text_sequence": 8,
               "text_hidden": text_dim or 0, "pooled": config.get("pooled_projection_dim") or 0} for b in (1, 2)]

    def layout(tensors):  # with only the axes its tensors have
        used = {a for t in tensors for a in t["axes"]}
        return tensors, [{k: v for k, v in s.items() if k in used} for s in shapes]

    # Video models (3D VAEs and transformers) take [batch, channels, frames, height, width].
    video = [tensor(first, "float32", ["batch", "channels", "frames", "height", "width"], "normal")]
    layouts = [layout(inputs), layout(video + inputs[1:])]
    if len(inputs) > 1:  # the sample alone (an unconditional model)
        layouts += [layout(image), layout(video)]
    return layouts


# Frames of a video sample: a causal video VAE takes 1 + 4k frames.
FRAMES = 5
