"""What transformers' own registries say about each architecture, for `gen derive`.

Everything here is derived, never guessed:

- the architectures are the keys of the base-model registry (MODEL_MAPPING_NAMES);
- category, architecture type and task come from the task registries an architecture
  appears in (`CATEGORY_RULES`, first match wins) and from its config's structure (a vision
  tower and a text model, experts, a state-space mixer); where they cannot decide, `derive`
  says so and the spec needs a hand-written field;
- the tiny config is the real config shrunk generically (`shrink`), the way transformers'
  model testers do by hand: small vocabulary, hidden size 32, 2 layers, small images;
- the inputs are the base model's forward parameters for its modality, and the outputs are
  what the model really returns on two shapes (names, dtypes, and named axes: an output axis
  that follows an input axis across both shapes gets that axis' name).
"""

from __future__ import annotations

import functools
import inspect
import re

import torch
import transformers

import diffusion
from tiny import MAX_PARAMETERS, cap_widths, check_size, tensor
from transformers.models.auto import configuration_auto, modeling_auto

# ---- registries ---------------------------------------------------------------------------

# (mapping, short name, task): the task registries that decide categories. Short names are what
# specs record as evidence (`imported.registries`).
TASK_MAPPINGS = [
    ("MODEL_FOR_VIDEO_CLASSIFICATION_MAPPING_NAMES", "video-classification", "video-classification"),
    ("MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "speech-seq2seq", "automatic-speech-recognition"),
    ("MODEL_FOR_TEXT_TO_SPECTROGRAM_MAPPING_NAMES", "text-to-spectrogram", "text-to-speech"),
    ("MODEL_FOR_TEXT_TO_WAVEFORM_MAPPING_NAMES", "text-to-waveform", "text-to-audio"),
    ("MODEL_FOR_RNNT_MAPPING_NAMES", "rnnt", "automatic-speech-recognition"),
    ("MODEL_FOR_TDT_MAPPING_NAMES", "tdt", "automatic-speech-recognition"),
    ("MODEL_FOR_CTC_MAPPING_NAMES", "ctc", "automatic-speech-recognition"),
    ("MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "audio-classification", "audio-classification"),
    ("MODEL_FOR_AUDIO_FRAME_CLASSIFICATION_MAPPING_NAMES", "audio-frame-classification", "audio-classification"),
    ("MODEL_FOR_AUDIO_XVECTOR_MAPPING_NAMES", "audio-xvector", "audio-classification"),
    ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "image-text-to-text", "image-text-to-text"),
    ("MODEL_FOR_VISUAL_QUESTION_ANSWERING_MAPPING_NAMES", "visual-question-answering", "visual-question-answering"),
    ("MODEL_FOR_DOCUMENT_QUESTION_ANSWERING_MAPPING_NAMES", "document-question-answering", "document-question-answering"),
    ("MODEL_FOR_TEXT_RECOGNITION_MAPPING_NAMES", "text-recognition", "image-to-text"),
    ("MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES", "multimodal-lm", "any-to-any"),
    ("MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES", "zero-shot-image-classification", "zero-shot-image-classification"),
    ("MODEL_FOR_ZERO_SHOT_OBJECT_DETECTION_MAPPING_NAMES", "zero-shot-object-detection", "zero-shot-object-detection"),
    ("MODEL_FOR_RETRIEVAL_MAPPING_NAMES", "retrieval", "visual-document-retrieval"),
    ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "seq2seq-lm", "text2text-generation"),
    ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "masked-lm", "fill-mask"),
    ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "causal-lm", "text-generation"),
    ("MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES", "text-encoding", "feature-extraction"),
    ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "sequence-classification", "text-classification"),
    ("MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", "token-classification", "token-classification"),
    ("MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES", "question-answering", "question-answering"),
    ("MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES", "multiple-choice", "multiple-choice"),
    ("MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES", "object-detection", "object-detection"),
    ("MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES", "semantic-segmentation", "image-segmentation"),
    ("MODEL_FOR_UNIVERSAL_SEGMENTATION_MAPPING_NAMES", "universal-segmentation", "image-segmentation"),
    ("MODEL_FOR_INSTANCE_SEGMENTATION_MAPPING_NAMES", "instance-segmentation", "image-segmentation"),
    ("MODEL_FOR_IMAGE_SEGMENTATION_MAPPING_NAMES", "image-segmentation", "image-segmentation"),
    ("MODEL_FOR_DEPTH_ESTIMATION_MAPPING_NAMES", "depth-estimation", "depth-estimation"),
    ("MODEL_FOR_MASK_GENERATION_MAPPING_NAMES", "mask-generation", "mask-generation"),
    ("MODEL_FOR_KEYPOINT_DETECTION_MAPPING_NAMES", "keypoint-detection", "keypoint-detection"),
    ("MODEL_FOR_KEYPOINT_MATCHING_MAPPING_NAMES", "keypoint-matching", "keypoint-matching"),
    ("MODEL_FOR_POSE_ESTIMATION_MAPPING_NAMES", "pose-estimation", "keypoint-detection"),
    ("MODEL_FOR_IMAGE_TO_IMAGE_MAPPING_NAMES", "image-to-image", "image-to-image"),
    ("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "image-classification", "image-classification"),
    ("MODEL_FOR_MASKED_IMAGE_MODELING_MAPPING_NAMES", "masked-image-modeling", "image-feature-extraction"),
    ("MODEL_FOR_BACKBONE_MAPPING_NAMES", "backbone", "image-feature-extraction"),
    ("MODEL_FOR_IMAGE_MAPPING_NAMES", "image", "image-feature-extraction"),
    ("MODEL_FOR_TIME_SERIES_CLASSIFICATION_MAPPING_NAMES", "time-series-classification", "time-series-classification"),
    ("MODEL_FOR_TIME_SERIES_PREDICTION_MAPPING_NAMES", "time-series-prediction", "time-series-forecasting"),
    ("MODEL_FOR_DECISION_MAPPING_NAMES", "decision", "reinforcement-learning"),
]

VISION_LANGUAGE = {"image-text-to-text", "visual-question-answering", "document-question-answering", "text-recognition", "multimodal-lm"}
SPEECH_TEXT = {"speech-seq2seq", "text-to-spectrogram", "text-to-waveform", "rnnt", "tdt"}
AUDIO = {"ctc", "audio-classification", "audio-frame-classification", "audio-xvector"}
DUAL_ENCODER = {"zero-shot-image-classification", "zero-shot-object-detection", "retrieval"}
TEXT_ENCODER = {"masked-lm", "text-encoding", "sequence-classification", "token-classification", "question-answering", "multiple-choice"}
VISION = {"object-detection", "semantic-segmentation", "universal-segmentation", "instance-segmentation", "image-segmentation",
          "depth-estimation", "mask-generation", "keypoint-detection", "keypoint-matching", "pose-estimation", "image-to-image",
          "image-classification", "masked-image-modeling", "backbone", "image"}


def registry_rows() -> list[dict]:
    """One row per architecture of the base-model registry: its base class and the task
    registries it appears in."""
    rows = []
    for model_type, base_class in sorted(modeling_auto.MODEL_MAPPING_NAMES.items()):
        if isinstance(base_class, (list, tuple)):
            base_class = base_class[0]
        found = [short for mapping, short, _ in TASK_MAPPINGS if model_type in getattr(modeling_auto, mapping, {})]
        rows.append({"model_type": model_type, "base_class": base_class, "registries": found,
                     "config_class": configuration_auto.CONFIG_MAPPING_NAMES.get(model_type)})
    return rows + diffusion.rows()


def _config_parts(config) -> set[str]:
    """The towers a config is built from: text, vision, audio (by its sub-configs' names)."""
    parts = set()
    for key in getattr(config, "sub_configs", {}) or {}:
        for part in ("text", "vision", "audio", "speech"):
            if part in key:
                parts.add("audio" if part == "speech" else part)
    return parts


def _is_moe(config) -> bool:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    keys = text.to_dict()
    for key in ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok"):
        value = keys.get(key)
        if isinstance(value, int) and value > 1:
            return True
    return False


def _is_state_space(config) -> bool:
    keys = (config.get_text_config() if hasattr(config, "get_text_config") else config).to_dict()
    return any(k in keys for k in ("state_size", "ssm_state_size", "mamba_d_state", "d_state"))


def classify(row: dict, config) -> dict:
    """Category, architecture type, modality and task from the registries (first rule that
    matches), or `{"undecided": why}`."""
    if row.get("library") == "diffusers":
        return diffusion.classify(row)
    found = set(row["registries"])
    parts = _config_parts(config)
    task = next((t for _, short, t in TASK_MAPPINGS if short in found), None)
    main = getattr(getattr(transformers, row["base_class"], None), "main_input_name", None)

    def result(category, architecture, modality, why):
        return {"category": category, "architecture": architecture, "modality": modality,
                "task": task or "feature-extraction", "why": why}

    if "video-classification" in found:
        return result("video", "vision", "video", "in the video-classification registry")
    if found & SPEECH_TEXT:
        return result("speech_text", "speech", "audio", f"in the {sorted(found & SPEECH_TEXT)[0]} registry")
    if found & AUDIO:
        return result("audio", "speech", "audio", f"in the {sorted(found & AUDIO)[0]} registry")
    if found & VISION_LANGUAGE:
        return result("vision_language", "vision-encoder-text-decoder", "multimodal", f"in the {sorted(found & VISION_LANGUAGE)[0]} registry")
    if found & DUAL_ENCODER or ("text" in parts and ("vision" in parts or "audio" in parts)):
        why = f"in the {sorted(found & DUAL_ENCODER)[0]} registry" if found & DUAL_ENCODER else f"its config has {' and '.join(sorted(parts))} towers"
        return result("multimodal", "multimodal", "multimodal", why)
    if "seq2seq-lm" in found:
        arch = "mixture-of-experts" if _is_moe(config) else "encoder-decoder"
        return result("encoder_decoders", arch, "text", "in the seq2seq-lm registry")
    if "causal-lm" in found and "masked-lm" not in found:
        arch = "mixture-of-experts" if _is_moe(config) else "state-space" if _is_state_space(config) else "decoder-only"
        return result("text_decoders", arch, "text", "in the causal-lm registry and not the masked-lm one")
    if found & TEXT_ENCODER or ("causal-lm" in found and "masked-lm" in found):
        why = ("in the masked-lm registry (a causal-LM head too does not make it a decoder)" if "masked-lm" in found
               else f"in the {sorted(found & TEXT_ENCODER)[0]} registry")
        return result("text_encoders", "encoder-only", "text", why)
    if found & VISION:
        return result("vision", "vision", "vision", f"in the {sorted(found & VISION)[0]} registry")
    # In no task registry that decides: the main input and the towers may still.
    if main == "pixel_values" or parts == {"vision"}:
        return result("vision", "vision", "vision", "its base model's main input is pixel_values")
    if main in ("input_values", "input_features") or parts == {"audio"}:
        return result("audio", "speech", "audio", f"its base model's main input is {main}")
    if found & {"time-series-classification", "time-series-prediction", "decision"}:
        return {"undecided": f"in the {sorted(found)[0]} registry, which no hwmatrix category covers"}
    return {"undecided": f"in no task registry that decides a category (registries: {sorted(found) or 'none'}; main input {main})"}


# ---- tiny configs -------------------------------------------------------------------------

# Generic shrinking: a config key that exists with a larger int value gets this value.
SHRINK = {
    32: ["hidden_size", "d_model", "n_embd", "embed_dim", "emb_dim", "dim", "model_dim", "d_embed", "word_embed_proj_dim",
         "embedding_size", "projection_dim", "text_embed_dim", "vision_embed_dim", "hidden_dim", "proj_dim",
         # a vision tower's output width, which its language model takes (Qwen2-VL's merger)
         "out_hidden_size"],
    64: ["intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "n_inner", "mlp_dim",
         "moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size", "decoder_hidden_size"],
    2: ["num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
        "num_decoder_layers", "num_encoder_layers", "num_experts_per_tok", "num_experts_per_token", "top_k"],
    4: ["num_attention_heads", "n_head", "n_heads", "encoder_attention_heads", "decoder_attention_heads",
        "num_heads", "num_experts", "num_local_experts", "n_routed_experts", "linear_num_heads"],
    8: ["head_dim", "d_kv", "kv_channels", "rotary_dim", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "linear_head_dim"],
    16: ["max_source_positions", "kv_lora_rank", "q_lora_rank"],
    512: ["max_position_embeddings"],
    1024: ["vocab_size", "vocab_size_per_layer_input", "entity_vocab_size"],
}
SHRINK_VOCAB = 1024
KV_HEADS = ["num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num"]
UNSET_BUT_NEEDED = {"vocab_size": SHRINK_VOCAB, "num_experts_per_tok": 2, "n_routed_experts": 4, "n_shared_experts": 1}
LAYER_TYPE_LISTS = ["layer_types", "layers_block_type", "block_types", "attention_layers", "mlp_layer_types"]


# The milder shrinking, tried when the generic one breaks an architecture's own rules (widths
# tied to each other, channels to norm groups): every width stays, only depth, vocabulary and
# positions shrink. It is kept only when the model still fits the one parameter limit.
MILD_SHRINK = {2: SHRINK[2], 512: ["max_position_embeddings"], SHRINK_VOCAB: ["vocab_size"]}
# The parameter limit every tiny model keeps is tiny.MAX_PARAMETERS.

# The placeholder tokens an image-text or audio-text prompt repeats.
PLACEHOLDER_KEYS = {"image_token_id", "image_token_index", "audio_token_id", "audio_token_index"}


def _shrink_one(config, mild: bool = False, small_images: bool = True, wide: bool = False) -> dict:
    """The overrides that make one (sub-)config tiny; sub-configs become nested dicts."""
    values = config.to_dict()
    out = {}
    for target, keys in (MILD_SHRINK if mild else SHRINK).items():
        for key in keys:
            value = values.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > target:
                out[key] = target
    heads = out.get("num_attention_heads", values.get("num_attention_heads"))
    for key in KV_HEADS if not mild else []:
        value = values.get(key)
        if isinstance(value, int) and isinstance(heads, int) and value > 0:
            out[key] = 2 if value < values.get("num_attention_heads", value + 1) else heads
        elif key in values and value is None and isinstance(heads, int) and "hidden_size" in out:
            out[key] = heads  # unset means "as many as heads" in the config, not always in the model
    # Sizes some default configs leave unset although their model needs them.
    for key, value in UNSET_BUT_NEEDED.items():
        if key in values and values[key] is None:
            out[key] = value
    # Expert groups (DeepSeek-V3's routing): the few experts left make one group.
    for group_key in ("n_group", "num_expert_group"):
        if isinstance(values.get(group_key), int) and values[group_key] > 1 and any(k in out for k in ("n_routed_experts", "num_experts")):
            out[group_key] = 1
            if isinstance(values.get("topk_group"), int):
                out["topk_group"] = 1
    # MLA's query/key head is its unrotated and rotated parts together.
    if isinstance(values.get("qk_head_dim"), int) and "qk_nope_head_dim" in out and "qk_rope_head_dim" in out:
        out["qk_head_dim"] = out["qk_nope_head_dim"] + out["qk_rope_head_dim"]
    # An unset head_dim is hidden_size / heads in some configs and read as-is by their model.
    if "head_dim" in values and values["head_dim"] is None and "hidden_size" in out and isinstance(heads, int):
        out["head_dim"] = out["hidden_size"] // heads
    # Multimodal RoPE splits half of each head into (temporal, height, width) sections: they must
    # still sum to half the smaller head (Qwen2-VL's [16, 24, 24] of 128 becomes [2, 1, 1] of 8).
    head = out.get("head_dim") or values.get("head_dim") or (
        out["hidden_size"] // heads if "hidden_size" in out and isinstance(heads, int) and heads else None)
    for rope_key in ("rope_parameters", "rope_scaling"):
        rope = values.get(rope_key)
        sections = rope.get("mrope_section") if isinstance(rope, dict) else None
        if isinstance(head, int) and isinstance(sections, list) and sections and sum(sections) != head // 2:
            half, n = head // 2, len(sections)
            out[rope_key] = {**rope, "mrope_section": [half // n + (1 if i < half % n else 0) for i in range(n)]}
    # Per-stage lists (convolutional and hierarchical backbones): fewer, smaller stages.
    for key in ("depths", "num_layers_per_stage"):
        if isinstance(values.get(key), list) and all(isinstance(v, int) for v in values[key]):
            out[key] = [1 for _ in values[key]]
    if not mild and isinstance(values.get("hidden_sizes"), list) and all(isinstance(v, int) for v in values["hidden_sizes"]):
        out["hidden_sizes"] = [min(v, 16 * 2 ** i) for i, v in enumerate(values["hidden_sizes"])]
    for key in ("num_heads", "num_attention_heads") if not mild else []:
        if isinstance(values.get(key), list) and all(isinstance(v, int) for v in values[key]):
            out[key] = [min(v, 2 ** i) for i, v in enumerate(values[key])]
    # Layer-type lists must keep one entry per (now 2) layers, and every kind of layer the
    # architecture mixes (a hybrid keeps its attention layer and its state-space one).
    layers = out.get("num_hidden_layers") or out.get("num_layers")
    for key in LAYER_TYPE_LISTS:
        if layers and isinstance(values.get(key), list) and len(values[key]) > layers:
            kept = values[key][:layers]
            missing = [t for t in dict.fromkeys(values[key]) if t not in kept]
            for i, kind in enumerate(missing[: layers - 1]):
                kept[layers - 1 - i] = kind
            out[key] = kept
    # GPT-Neo style: [[pattern, repeats], ...] that must expand to one entry per layer.
    types = values.get("attention_types")
    if layers and isinstance(types, list) and len(types) == 1 and isinstance(types[0], list) and len(types[0]) == 2:
        pattern = types[0][0]
        if isinstance(pattern, list) and pattern and layers % len(pattern) == 0:
            out["attention_types"] = [[pattern, layers // len(pattern)]]
    # State-space heads: heads x head size must equal expand x hidden size (Mamba-2 and hybrids).
    hidden = out.get("hidden_size")
    if hidden:
        for heads_key, size_key, expand_key in (("num_heads", "head_dim", "expand"), ("mamba_n_heads", "mamba_d_head", "mamba_expand")):
            if all(isinstance(values.get(k), int) for k in (heads_key, size_key, expand_key)):
                size = min(values[size_key], 8)
                out[size_key] = size
                out[heads_key] = values[expand_key] * hidden // size
                if heads_key == "mamba_n_heads" and isinstance(values.get("mamba_d_ssm"), int):
                    out["mamba_d_ssm"] = out[heads_key] * size  # Falcon-H1 states the product too
    patch = values.get("patch_size")
    if small_images and isinstance(values.get("image_size"), int) and values["image_size"] > 64:
        out["image_size"] = 32 if not isinstance(patch, int) or 32 % patch == 0 else patch * 2
    if "use_cache" in values:
        out["use_cache"] = False
    # Special token ids must stay inside the smaller vocabulary.
    # (Also in a composite config whose vocabulary lives in its text sub-config.)
    vocab = out.get("vocab_size") or SHRINK_VOCAB
    taken = iter(range(vocab - 1, 0, -1))
    for key in sorted(values):
        if key.endswith(("_token_id", "_token_index")) and isinstance(values[key], int) and values[key] >= vocab:
            out[key] = next(taken)
        elif key in PLACEHOLDER_KEYS and values[key] is None:  # unset in the default config (Voxtral's): the checkpoint sets it
            out[key] = next(taken)
        elif key.endswith("_token_id") and isinstance(values[key], list) and any(isinstance(v, int) and v >= vocab for v in values[key]):
            out[key] = [next(taken) if isinstance(v, int) and v >= vocab else v for v in values[key]]
    if wide:
        cap_widths(values, out)
    for key in getattr(config, "sub_configs", {}) or {}:
        sub = getattr(config, key, None)
        if sub is not None and hasattr(sub, "to_dict"):
            nested = _shrink_one(sub, mild, small_images, wide)
            # A sub-config given as a dict is built from its own class's defaults, not the
            # composite's: VipLlava's CLIP tower has patch 14, a bare CLIPVisionConfig 32. An image
            # size fitted to the patch keeps the patch it was fitted to.
            if "image_size" in nested and isinstance(getattr(sub, "patch_size", None), int):
                nested.setdefault("patch_size", sub.patch_size)
            if nested:
                out[key] = {"model_type": sub.model_type, **nested} if getattr(sub, "model_type", "") else nested
    return out


def shrink(model_type: str, mild: bool = False, small_images: bool = True, wide: bool = False) -> dict:
    config = transformers.AutoConfig.for_model(model_type)
    return _shrink_one(config, mild, small_images, wide)


# ---- inputs and outputs -------------------------------------------------------------------

def _forward_params(cls) -> list[str]:
    return list(inspect.signature(cls.forward).parameters)[1:]


def _vision_configs(config) -> tuple:
    """Where an image's size and channels are: the vision tower's config (a nested vision-language
    model's, export.vision_owner), then the config itself."""
    import export

    return getattr(export.vision_owner(config), "vision_config", None), config


def _image_size(config) -> int:
    for c in _vision_configs(config):
        size = getattr(c, "image_size", None) if c is not None else None
        if isinstance(size, int):
            return size
        if isinstance(size, (list, tuple)) and size and isinstance(size[0], int):
            return int(size[0])
    return 64


def _image_height_width(config) -> tuple[int, int]:
    """The image size a config asks for, as (height, width): MGP-STR's is 32 x 128."""
    for c in _vision_configs(config):
        size = getattr(c, "image_size", None) if c is not None else None
        if isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(v, int) for v in size):
            return int(size[0]), int(size[1])
    side = _image_size(config)
    return side, side


def _channels(config) -> int:
    for c in _vision_configs(config):
        value = getattr(c, "num_channels", None) if c is not None else None
        if isinstance(value, int):
            return value
    return 3


def _audio_configs(config) -> list:
    """The config, then its audio encoder's sub-config(s): `audio_config`, Granite Speech's `encoder_config`."""
    subs = [getattr(config, k, None) for k in getattr(config, "sub_configs", {}) or {} if re.search(r"audio|encoder|speech", k)]
    return [config, *[c for c in subs if c is not None]]


def _mel_bins(config) -> int:
    for c in _audio_configs(config):
        for key in ("num_mel_bins", "feature_size", "input_feat_per_channel", "n_mels", "num_mel_filters", "input_dim"):
            value = getattr(c, key, None)
            if isinstance(value, int):
                return value
    return 80


def _audio_frames(config) -> int:
    """Feature frames for one clip: a Whisper-style encoder takes exactly twice its (shrunk)
    `max_source_positions` (its convolutions halve the frames); others take 32."""
    for c in _audio_configs(config):
        positions = getattr(c, "max_source_positions", None)
        if isinstance(positions, int) and positions <= 64:
            return 2 * positions
    return 32


def audio_prompt_layouts(params: list[str], config) -> list[tuple[list[dict], None]]:
    """An audio-language model's prompt (Qwen2-Audio, Voxtral, Granite Speech): text with one
    clip's audio placeholder tokens, the clip's features (mel bins before frames as Whisper's
    encoder takes them, or after as Granite's), and the masks its forward takes (the features'
    all ones: a padded clip would make fewer audio features than placeholders)."""
    import export

    if not {"input_ids", "input_features"} <= set(params) or export.audio_token_id(config) is None:
        return []
    layouts = []
    for axes in (["batch", "mel_bins", "frames"], ["batch", "frames", "mel_bins"]):
        inputs = [tensor("input_ids", "int64", ["batch", "sequence"], "audio-text-tokens"),
                  tensor("input_features", "float32", axes, "normal")]
        for name in ("input_features_mask", "feature_attention_mask"):
            if name in params:
                inputs.append(tensor(name, "int64", ["batch", "frames"], "ones"))
        if "attention_mask" in params:
            inputs.append(tensor("attention_mask", "int64", ["batch", "sequence"], "mask"))
        layouts.append((inputs, None))  # shapes need the audio token count: `_placeholder_shapes`
    return layouts


def candidate_layouts(category: str, params: list[str], config) -> list[tuple[list[dict], list[dict]]]:
    """Input layouts to try, in order, for a base model of this category whose forward takes
    `params`: (inputs, two shapes). The first that runs on both shapes is the architecture's."""
    text = [tensor("input_ids", "int64", ["batch", "sequence"], "tokens")]
    if "attention_mask" in params:
        text.append(tensor("attention_mask", "int64", ["batch", "sequence"], "mask"))
    if "token_type_ids" in params:
        text.append(tensor("token_type_ids", "int64", ["batch", "sequence"], "zeros"))
    decoder = [tensor("decoder_input_ids", "int64", ["batch", "decoder_sequence"], "decoder-tokens")] if "decoder_input_ids" in params else []
    text_shapes = [{"batch": 1, "sequence": 8}, {"batch": 2, "sequence": 13}]
    dec_shapes = [{"decoder_sequence": 4}, {"decoder_sequence": 7}]
    (height, width), channels = _image_height_width(config), _channels(config)
    image = [tensor("pixel_values", "float32", ["batch", "channels", "height", "width"], "normal")]
    image_shapes = [{"batch": 1, "channels": channels, "height": height, "width": width},
                    {"batch": 2, "channels": channels, "height": height, "width": width}]
    both = lambda shapes, extra: [{**s, **e} for s, e in zip(shapes, extra)]
    layouts = []
    if category in ("text_encoders", "text_decoders", "encoder_decoders"):
        layouts.append((text + decoder, both(text_shapes, dec_shapes) if decoder else text_shapes))
    elif category == "vision":
        layouts.append((image, image_shapes))
        # A bare Qwen2-VL-style tower (HunYuan-VL's): flat patches and each image's patch grid.
        import export

        grid, grid_name = export.patch_grid(config), next((p for p in ("grid_thw", "image_grid_thw") if p in params), None)
        if grid and grid_name and params and params[0] in ("pixel_values", "hidden_states"):
            patches = [tensor(params[0], "float32", ["patches", "patch_dim"], "normal"), tensor(grid_name, "int64", ["images", "grid"], "image-grid")]
            layouts.append((patches, [{"patches": grid["patches"] * n, "patch_dim": grid["patch_dim"], "images": n, "grid": 3} for n in (1, 2)]))
    elif category == "video":
        frames = getattr(config, "num_frames", None) or 8
        name = "pixel_values_videos" if "pixel_values_videos" in params else "pixel_values"
        video = lambda axes: [tensor(name, "float32", axes, "normal")]
        shapes = [{**s, "frames": frames} for s in image_shapes]
        layouts.append((video(["batch", "frames", "channels", "height", "width"]), shapes))
        layouts.append((video(["batch", "channels", "frames", "height", "width"]), shapes))
    elif category in ("audio", "speech_text"):
        layouts += audio_prompt_layouts(params, config)
        if "input_values" in params:
            # A speech-to-text model on raw waveforms (Moonshine) also takes its decoder's tokens.
            samples = both([{"batch": 1}, {"batch": 2}], [{"samples": 1600}, {"samples": 2400}])
            layouts.append(([tensor("input_values", "float32", ["batch", "samples"], "normal")] + decoder,
                            both(samples, dec_shapes) if decoder else samples))
            # Codecs (EnCodec, DAC, Mimi, X-Codec) take waveforms with a channel axis.
            audio_channels = getattr(config, "audio_channels", None) or 1
            layouts.append(([tensor("input_values", "float32", ["batch", "channels", "samples"], "normal")],
                            both([{"batch": 1, "channels": audio_channels}, {"batch": 2, "channels": audio_channels}],
                                 [{"samples": 1600}, {"samples": 2400}])))
        if "input_features" in params:
            mel = _mel_bins(config)
            frames = 2 * getattr(config, "max_source_positions", 16) if getattr(config, "max_source_positions", None) == 16 else 32
            for axes in (["batch", "mel_bins", "frames"], ["batch", "frames", "mel_bins"]):
                feats = [tensor("input_features", "float32", axes, "normal")]
                if "attention_mask" in params and axes[1] == "frames":
                    feats.append(tensor("attention_mask", "int64", ["batch", "frames"], "mask"))
                if "input_features_mask" in params:  # required by FunASR's and Qwen3-ASR's encoders
                    feats.append(tensor("input_features_mask", "int64", ["batch", "frames"], "mask"))
                shapes = [{"batch": 1, "mel_bins": mel, "frames": frames}, {"batch": 2, "mel_bins": mel, "frames": frames}]
                layouts.append((feats + decoder, both(shapes, dec_shapes) if decoder else shapes))
        if "input_ids" in params and not layouts:  # text-to-speech: text in
            layouts.append((text + decoder, both(text_shapes, dec_shapes) if decoder else text_shapes))
    elif category == "multimodal":
        shapes = [{**t, **i, "batch": b} for t, i, b in zip(text_shapes, image_shapes, (2, 3))]
        layouts.append((text + image, shapes))
    elif category == "vision_language":
        layouts += audio_prompt_layouts(params, config)  # registered as image-text, yet takes audio (Qwen2-Audio)
        ids = [tensor("input_ids", "int64", ["batch", "sequence"], "image-text-tokens")]
        mask = [tensor("attention_mask", "int64", ["batch", "sequence"], "mask")] if "attention_mask" in params else []
        layouts.append((ids + image + mask, None))  # shapes need the image token count: see derive
        # Qwen2-VL-style towers take flat patches and each image's patch grid (export.patch_grid).
        import export

        if "image_grid_thw" in params and export.patch_grid(config):
            patches = [tensor("pixel_values", "float32", ["patches", "patch_dim"], "normal"),
                       tensor("image_grid_thw", "int64", ["images", "grid"], "image-grid")]
            # Multimodal RoPE reads which tokens are the image's (1) and which text (0).
            types = [tensor("mm_token_type_ids", "int64", ["batch", "sequence"], "image-token-types")] if "mm_token_type_ids" in params else []
            layouts.insert(0, (ids + patches + mask + types, None))
        # Idefics-style models take several images per prompt: [batch, images, channels, height, width].
        images = [tensor("pixel_values", "float32", ["batch", "images", "channels", "height", "width"], "normal")]
        layouts.append((ids + images + mask, None))
        # Registered as image-text models without an image-placeholder prompt: text and image side
        # by side (ViLT, UDOP), an image alone (PP-OCR's text recognisers), or text alone.
        layouts.append((text + image, [{**t, **i} for t, i in zip(text_shapes, image_shapes)]))
        layouts.append((image, image_shapes))
        # Text alone only for a model without an image or audio tower: for one with a tower it
        # would pass while the tower went untested (such a spec says so in a curated layout).
        if not _has_tower(config):
            layouts.append((text + decoder, both(text_shapes, dec_shapes) if decoder else text_shapes))
    return layouts


def _has_tower(config) -> bool:
    """Whether a config (or any of its sub-configs, T5Gemma2's encoder) holds a vision or audio tower."""
    for key in getattr(config, "sub_configs", {}) or {}:
        sub = getattr(config, key, None)
        if re.search(r"vision|audio|speech|image|visual", key) and sub is not None:
            return True
        if sub is not None and hasattr(sub, "sub_configs") and _has_tower(sub):
            return True
    return False


def name_output_axes(name: str, shapes: list[list[int]], input_axes: list[dict], config) -> list[str]:
    """Names an output's axes from its shape under the two input shapes: an axis that takes an
    input axis' sizes in both gets its name (batch, sequence...); a fixed one the config key it
    equals (hidden, vocab); any other `<output>_<i>`, which the runtime sizes from the fixture."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    known = {"hidden": getattr(text, "hidden_size", None), "vocab": getattr(text, "vocab_size", None)}
    axes = []
    for i, (a, b) in enumerate(zip(*shapes)):
        match = None
        if a != b:
            match = next((axis for axis in input_axes[0] if input_axes[0][axis] == a and input_axes[1].get(axis) == b
                          and axis not in axes), None)
        else:
            match = next((k for k, v in known.items() if v == a and k not in axes), None)
            if match is None and i == 0 and input_axes[0].get("batch") == a and input_axes[1].get("batch") == b:
                match = "batch"
        axes.append(match or f"{name}_{i}")
    return axes


DTYPES = {torch.float32: "float32", torch.int64: "int64", torch.int32: "int32", torch.bool: "bool"}


def _is_constant(t: torch.Tensor, abs_tol: float = 1e-4, rel_tol: float = 1e-3) -> bool:
    values = t.detach().double().flatten()
    if not t.is_floating_point():
        return bool((values == values[0]).all())
    return bool(((values - values.mean()).abs() <= abs_tol + rel_tol * values.abs()).all())


@functools.cache
def _rows_by_type() -> dict[str, dict]:
    """The registry rows, read once per worker process (every derive job needs one)."""
    return {r["model_type"]: r for r in registry_rows()}


def _row(model_type: str) -> dict:
    return _rows_by_type()[model_type]


def classify_only(model_type: str) -> dict:
    """Category, architecture type, modality and task without building a model (for
    `gen derive --check`): from the registries and the tiny config's structure."""
    row = _row(model_type)
    if row.get("library") == "diffusers":
        return {"registries": row["registries"], **diffusion.classify(row)}
    try:
        config = transformers.AutoConfig.for_model(model_type, **shrink(model_type))
    except Exception:  # noqa: BLE001 - the default config decides the same structure
        config = transformers.AutoConfig.for_model(model_type)
    return {"registries": row["registries"], **classify(row, config)}


def merge_config(config: dict, overrides: dict) -> dict:
    """`overrides` over `config`: nested dicts (sub-configs) merge key by key, the rest replaces
    (the same rule as gen's `merge_config`)."""
    out = dict(config)
    for key, value in overrides.items():
        out[key] = merge_config(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def derive(model_type: str, seed: int = 0, overrides: dict | None = None, layout: tuple | None = None,
           drawn: list | None = None, export_class: str | None = None, max_parameters: int | None = None) -> dict:
    """The imported fields of one architecture. Never raises: when transformers cannot build
    or run the tiny model, the result carries `known_issue` with the real error; when the
    registries cannot decide the category, `undecided` says why. `overrides` (the spec's
    curated `tiny_config_overrides`) go over the generic shrink; `layout` (its curated inputs
    and shapes) replaces the candidate layouts; `drawn` (its `export.drawn_weights`) are drawn
    as the fixture export draws them (export.draw_weights); `export_class` (its curated
    `export.class`) is the class run instead of the registry's base model, built from its own
    sub-config of the tiny config (export.own_config: a video tracker's image encoder);
    `max_parameters` (its curated `export.max_parameters`) replaces the tiny-model limit for an
    architecture that hard-codes a width no config reaches."""
    overrides = overrides or {}
    limit = max_parameters or MAX_PARAMETERS
    row = _row(model_type)
    if export_class:
        row = {**row, "base_class": export_class}
    found = {"registries": row["registries"], "export_class": row["base_class"], **({"from": row["from"]} if "from" in row else {})}
    if row.get("library") == "diffusers":
        decided = diffusion.classify(row)
        try:
            found["tiny_config"] = merge_config(diffusion.shrink(row), overrides)
            torch.manual_seed(seed)
            try:
                model, config = diffusion.build(row, found["tiny_config"], limit=limit)
            except RuntimeError as error:  # over the limit: every width-named default capped too
                if "parameters after shrinking" not in str(error):
                    raise
                found["tiny_config"] = merge_config(diffusion.shrink(row, wide=True), overrides)
                torch.manual_seed(seed)
                model, config = diffusion.build(row, found["tiny_config"], wide=True, limit=limit)
            params = _forward_params(type(model))
            # A spec's curated layout replaces the candidates here too (Flux's packed latents and ids).
            layouts = [layout] if layout else diffusion.candidate_layouts(params, config)
            io = _derive_io(row, config, decided, seed, found, model, layouts, drawn=drawn)
            return {**found, **decided, **io}
        except Exception as error:  # noqa: BLE001
            return {**found, **decided, **_stopped_running(error)}
    first = None  # the generic shrinking's result when the milder one fails too
    # Generic; then every width kept, with small images; then also the images' own size (a
    # model whose image size is tied to its widths), which makes the slowest tiny models.
    for mild, small_images in ((False, True), (True, True), (True, False)):
        result = _derive_with(row, model_type, dict(found), seed, mild, small_images, overrides, layout, drawn=drawn, limit=limit)
        if "known_issue" not in result:
            return result
        first = first or result
    # Every width the tables know is small, yet some other width kept the model over the limit.
    if "parameters after shrinking" in first.get("known_issue", ""):
        result = _derive_with(row, model_type, dict(found), seed, False, True, overrides, layout, wide=True, drawn=drawn,
                              limit=limit)
        if "known_issue" not in result:
            return result
    return first


# transformers' config validators name two widths an architecture ties together, with their values:
# "`vision_config.out_hidden_size` (1024) must equal `text_config.hidden_size` (32)"; the first
# is set to the value of the second.
TIED_WIDTHS = re.compile(r"`?([A-Za-z_][\w.]*)`? \((\d+)\) must (?:equal|match) (?:`[^`]+`|[\w.]+) \((\d+)\)")


def _tied_config(model_type: str, tiny: dict, overrides: dict, attempts: int = 4):
    """The config of `tiny`; where transformers' validator says a width must equal another, the
    first is set to the second's value (in `tiny`, in place) and the config built again. A width a
    person set (`overrides`) is never changed: its error stands."""
    for attempt in range(attempts + 1):
        try:
            return transformers.AutoConfig.for_model(model_type, **tiny)
        except Exception as error:  # noqa: BLE001 - the validator's message says what to tie
            tied = TIED_WIDTHS.search(str(error))
            path = tied.group(1).split(".") if tied else []
            person = overrides
            for key in path:
                person = person.get(key) if isinstance(person, dict) else None
            if tied is None or attempt == attempts or person is not None:
                raise
            target = tiny
            for key in path[:-1]:
                target = target.setdefault(key, {})
            target[path[-1]] = int(tied.group(3))
    raise AssertionError("unreachable")


def _derive_with(row: dict, model_type: str, found: dict, seed: int, mild: bool, small_images: bool, overrides: dict,
                 layout: tuple | None, wide: bool = False, drawn: list | None = None, limit: int = MAX_PARAMETERS) -> dict:
    import export

    try:
        found["tiny_config"] = merge_config(shrink(model_type, mild, small_images, wide), overrides)
        config = _tied_config(model_type, found["tiny_config"], overrides)
    except Exception as error:  # noqa: BLE001
        decided = classify_only(model_type)
        decided.pop("registries")
        return {**found, **decided, "known_issue": f"building the tiny config: {export._error_line(error)}", "stage": "config"}
    decided = classify(row, config)
    if "undecided" in decided:
        return {**found, **decided}
    try:
        cls = getattr(transformers, row["base_class"])
        check_size(lambda: export.instantiate(cls, config), limit, mild, wide)
        try:
            io = _derive_io(row, config, decided, seed, found, layout=layout, drawn=drawn)  # may add found["constant_outputs"]
        except NoInformativeOutput:
            # Every output flat: activations of a deep stack of narrow layers initialised with
            # std 0.02 vanish (MobileNets, LeViT, SAM's encoder). Wider weights keep them apart; the
            # narrowest that does wins, since too wide a one blows a deep stack up (EfficientNet's
            # reference reached 1e28 at std 1: no engine can be compared with that).
            key = next((k for k in INIT_KEYS if isinstance(getattr(config, k, None), float) and getattr(config, k) < 1.0), None)
            if key is None or key in overrides:  # a person chose this init: keep it, and its error
                raise
            for std in INIT_LADDER:
                found["tiny_config"][key] = std
                found.pop("constant_outputs", None)
                config = transformers.AutoConfig.for_model(model_type, **found["tiny_config"])
                try:
                    io = _derive_io(row, config, decided, seed, found, layout=layout, drawn=drawn)
                    break
                except NoInformativeOutput:
                    if std == INIT_LADDER[-1]:
                        raise
        return {**found, **decided, **io}
    except Exception as error:  # noqa: BLE001
        return {**found, **decided, **_stopped_running(error)}


def _stopped_running(error: BaseException) -> dict:
    """The known issue of a tiny model that would not run: our harness's gap (stage reference),
    or this environment's where transformers refused it for an optional library absent here
    (`missing_libraries`: natten, detectron2; found from the `requires_backends` call that
    raised, never from the message's words)."""
    import export

    issue = {"known_issue": f"running the tiny model: {export._error_line(error)}", "stage": "reference"}
    missing = missing_libraries(error)
    return {**issue, "missing_libraries": missing} if missing else issue


def missing_libraries(error: BaseException) -> list[str]:
    """The libraries transformers' `requires_backends` found absent, where that call raised
    `error` (its frame's `backends`, each checked against transformers' own availability
    test); empty for any other error."""
    from transformers.utils import import_utils

    traceback = error.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_code is import_utils.requires_backends.__code__:
            backends = frame.f_locals.get("backends") or []
            return sorted(b for b in backends if isinstance(b, str) and not import_utils.BACKENDS_MAPPING[b][0]())
        traceback = traceback.tb_next
    return []


# The config keys that set the standard deviation of a model's initial weights, and the
# standard deviations tried, narrowest first, when the default makes every output flat.
INIT_KEYS = ["initializer_range", "init_std"]
INIT_LADDER = (0.1, 0.3, 1.0)
# A reference this large overflowed somewhere: it says nothing an engine could be checked on.
BLOWN_UP = 1e6


class NoInformativeOutput(RuntimeError):
    """The tiny model ran but every output it returned is constant (or there were none)."""


# Inputs that may be ignored by a model; to find out, they are made all ones.
OPTIONAL_FILLS = {"mask", "zeros"}


def _outputs_unchanged(model, spec: dict, name: str, change, shape: dict, config, seed: int, names: list[str],
                       reference: dict) -> bool:
    """Whether the model's outputs stay bit-identical to `reference` (the second shape's) when
    input `name` is replaced by `change(value)`: the model does not read that input. A changed
    value that breaks the model counts as read."""
    import export

    values = export.build_inputs(spec, shape, config, seed, 1, model)
    values[name] = change(values[name])
    try:
        with torch.no_grad():
            out = export.model_outputs(model(**values, return_dict=True))
    except Exception:  # noqa: BLE001 - the other value is out of range: the model reads it
        return False
    return all(isinstance(out.get(n), torch.Tensor) and torch.equal(out[n], reference[n]) for n in names)


def _ignored_input(model, spec: dict, candidate: dict, shape: dict, config, seed: int, names: list[str], reference: dict) -> bool:
    """Whether the model ignores this optional input: its outputs stay the same when the input is
    made all ones (a padded mask, token types). The ONNX exporters drop such an input from the
    graph, so the spec must not declare it (deberta's token_type_ids when type_vocab_size is 0)."""
    if candidate.get("fill") not in OPTIONAL_FILLS or candidate is spec["inputs"][0]:
        return False
    return _outputs_unchanged(model, spec, candidate["name"], torch.ones_like, shape, config, seed, names, reference)


def _unread_input(model, spec: dict, candidate: dict, shape: dict, config, seed: int, names: list[str], reference: dict) -> bool:
    """Whether the model ignores a float input (pixels, features, latents) it was given: its
    outputs stay the same when the input is shifted by one. A forward that takes **kwargs
    accepts any name; the ONNX exporters then drop the input from the graph."""
    if not candidate["dtype"].startswith("float") or candidate is spec["inputs"][0]:
        return False
    return _outputs_unchanged(model, spec, candidate["name"], lambda value: value + 1.0, shape, config, seed, names, reference)


def _placeholder_shapes(inputs: list[dict], config, model) -> list[dict]:
    """The two shapes of an image-text or audio-text prompt: its sequence must hold the image's
    (clip's) placeholder tokens (as many as the model makes features of one), then 8 and 13 text
    tokens. Raises when the config has no placeholder (no tower to count): the next layout runs."""
    import export

    if any(i.get("fill") == "audio-text-tokens" for i in inputs):
        clip = {"mel_bins": _mel_bins(config), "frames": _audio_frames(config)}
        count = export.audio_token_count(model, {"inputs": inputs}, clip)
        return [{"batch": 1, "sequence": count + 8, **clip}, {"batch": 1, "sequence": count + 13, **clip}]
    count = export.image_token_count(config, model)
    size, channels = _image_size(config), _channels(config)
    shapes = [{"batch": 1, "sequence": count + 8, "channels": channels, "height": size, "width": size},
              {"batch": 1, "sequence": count + 13, "channels": channels, "height": size, "width": size}]
    if any("images" in i["axes"] for i in inputs):
        shapes = [{**s, "images": 1} for s in shapes]
    grid = export.patch_grid(config)
    if grid and any(i.get("fill") == "image-grid" for i in inputs):
        shapes = [{**s, "patches": grid["patches"], "patch_dim": grid["patch_dim"], "grid": 3} for s in shapes]
    used = {axis for i in inputs for axis in i["axes"]}  # a spec sizes only its inputs' axes
    return [{k: v for k, v in s.items() if k in used} for s in shapes]


def _derive_io(row: dict, config, decided: dict, seed: int, found: dict, model=None, layouts=None, layout=None,
               drawn: list | None = None) -> dict:
    import export  # the fixture exporter: inputs are built exactly as fixtures build them

    if model is None:
        cls = getattr(transformers, row["base_class"])
        params = _forward_params(cls)
        torch.manual_seed(seed)
        config = export.own_config(cls, config)
        model = export.instantiate(cls, config)
        layouts = [layout] if layout else candidate_layouts(decided["category"], params, config)
    params = _forward_params(type(model))
    export.draw_weights(model, drawn or [])
    model = export.ready(model)  # as the fixture export runs it
    errors, uninformative = [], False
    for inputs, shapes in layouts:
        spec = {"inputs": inputs}
        try:
            shapes = shapes or _placeholder_shapes(inputs, config, model)
            results = []
            for index, shape in enumerate(shapes):
                values = export.build_inputs(spec, shape, config, seed + index, index, model)
                with torch.no_grad():
                    out = model(**values, return_dict=True)
                results.append({k: v for k, v in export.model_outputs(out).items() if v.dtype in DTYPES and v.numel() > 0})
            with torch.no_grad():  # the same inputs again: a model that draws random numbers has no reference
                again = export.model_outputs(model(**values, return_dict=True))
        except Exception as error:  # noqa: BLE001 - the next layout may fit; all errors are kept
            errors.append(export._error_line(error))
            continue
        names = [n for n in results[0] if n in results[1] and results[0][n].dim() == results[1][n].dim()]
        # NaN or inf in a reference: no engine can be checked against it.
        broken = [n for n in names if any(r[n].is_floating_point() and not torch.isfinite(r[n]).all() for r in results)]
        if broken:
            errors.append(f"the tiny model's output {', '.join(broken)} is not finite (NaN or inf)")
            uninformative = True
            continue
        blown = [n for n in names if any(r[n].is_floating_point() and r[n].abs().max() > BLOWN_UP for r in results)]
        if blown:
            errors.append(f"the tiny model's output {', '.join(blown)} blows up (values beyond {BLOWN_UP:.0e})")
            uninformative = True
            continue
        random = [n for n in names if not (isinstance(again.get(n), torch.Tensor) and torch.equal(again[n], results[-1][n]))]
        if random:
            raise RuntimeError(f"the tiny model is not deterministic: output {', '.join(random)} differs between two runs on "
                               "the same inputs (its forward draws random numbers), so no reference can check an engine")
        # A reference a constant would match cannot catch a wrong model (the runtime refuses it).
        constant = [n for n in names if any(_is_constant(r[n]) for r in results)]
        names = [n for n in names if n not in constant]
        if constant:
            found["constant_outputs"] = constant
        if not names:
            flat = f"the model returned no tensor output (it returned {list(results[0])})" if not constant else \
                f"every output of the tiny model is constant ({', '.join(constant)}): a reference a constant matches checks nothing"
            errors.append(flat)
            uninformative = True
            continue
        unread = [i["name"] for i in inputs if _unread_input(model, spec, i, shapes[1], config, seed + 1, names, results[1])]
        if unread:  # swallowed by **kwargs (Qwen2-Audio takes no pixel_values): this layout is not the model's
            errors.append(f"the model does not read its input {', '.join(unread)} (its outputs stay the same when it changes)")
            continue
        inputs = [i for i in inputs if not _ignored_input(model, spec, i, shapes[1], config, seed + 1, names, results[1])]
        taken = {i["name"] for i in inputs}
        outputs = [tensor(export.output_name(n, taken), DTYPES[results[0][n].dtype],
                          name_output_axes(n, [list(r[n].shape) for r in results], shapes, config)) for n in names]
        return {"inputs": inputs, "outputs": outputs, "shapes": shapes}
    if not errors:
        raise RuntimeError(f"no input layout is known for a {decided['category']} base model taking {params[:6]}")
    if uninformative:  # a layout that ran says more than those that did not
        raise NoInformativeOutput(next(e for e in errors if e.startswith(("every output", "the model returned no", "the tiny model's output"))))
    raise RuntimeError(errors[0].split(": ", 1)[1] if errors[0].startswith("RuntimeError: ") else errors[0])
