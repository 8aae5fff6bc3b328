"""Build one hwmatrix generation fixture: a text decoder with its cache of past keys and values
as graph inputs and outputs, and the reference of PyTorch's own `generate()` to check it by.

`gen fixtures` sends a job like export.py's ({"spec", "out_dir", "cache_key", "seed"}, and the spec's "task") for every
model that generates text (task text-generation or text2text-generation, and a vision-language
model's language component: image-text-to-text). The fixture
(`<fixtures>/generation/<model_type>/`), one format for every kind:

    meta.json          the graphs and their inputs (with named axes), which graph each step runs,
                       the cache (`carried`: each input fed from an earlier output), the tokens
    <graph>.onnx       decoder-only: `decoder.onnx`, one graph for every step (feeds +
                       past_key_values.<layer>.<key|value> in, logits + present.<layer>.<key|value>
                       out; the prefill's past is empty, its sequence axis 0), as transformers.js
                       and optimum's merged decoders take it. A model whose cache holds states of a
                       fixed size (Mamba's conv and SSM states: past_key_values.<layer>.conv_state,
                       .recurrent_state), or whose prefill generate() fed more than its later steps,
                       is split: `decoder.onnx` for the prefill (no past in), `decoder_with_past.onnx`
                       after it, since its prefill computes the states another way than a step
                       reads them. A vision-language model's is its
                       language component (LanguageComponent: `inputs_embeds` in, as transformers.js's
                       decoder_model_merged takes them), on a prompt of text. Encoder-decoders, split as optimum
                       and transformers.js split them: `encoder.onnx` once, `decoder.onnx` for the
                       first step (it makes the cross-attention cache,
                       present.<layer>.encoder.<key|value>), `decoder_with_past.onnx` after it
                       (past_key_values.<layer>.decoder.* grow, .encoder.* are the first step's)
    prologue/<graph>/  the encoder's inputs
    steps/<i>/         what generate() fed the model at step i, recorded from its own forward calls
    reference/<i>.npy  PyTorch's logits for the last position at step i, [batch, vocab]

A batch of two prompts of different lengths, padded (decoder-only: on the left, as generate()
pads them; encoder-decoders: the source on the right), so the masks over the cache are
exercised; 8 new tokens, sampled with a seed (tiny random models repeat a token under greedy
decoding). A check teacher-forces these tokens: step i feeds what generate() fed, with the cache
the engine itself returned before.

Its own file with its own cache key (hwmatrix_specs' fixture_key covers it), so changing it
rebuilds generation fixtures only, not the 489 float32 fixtures.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

import export as ex

GENERATION_EXPORTER_VERSION = 2
NEW_TOKENS = 8
PROMPT_LENGTHS = (6, 4)
# Cache attributes that are a layer's keys and values, named as optimum and transformers.js name them.
ATTRIBUTE_NAMES = {"keys": "key", "values": "value"}
# Tasks whose model is a vision-language one: its language component generates (LanguageComponent).
VISION_LANGUAGE_TASKS = {"image-text-to-text"}


def generating_class(spec: dict, task: str):
    """The class that generates: the spec's export class when it has an LM head, else the
    causal-LM (for text2text-generation the seq2seq-LM, for a vision-language model the
    image-text-to-text) class transformers' registry maps the model_type to. Returns (class, is_seq2seq)."""
    from transformers.models.auto import modeling_auto as auto

    seq2seq = task == "text2text-generation"
    named = spec["export"]["class"]
    if task in VISION_LANGUAGE_TASKS:
        if named.endswith("ForConditionalGeneration"):
            return getattr(transformers, named), False
        mapping, kind = auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES, "image-text-to-text"
    elif not seq2seq and (named.endswith("ForCausalLM") or named.endswith("LMHeadModel")):
        return getattr(transformers, named), False
    else:
        mapping = auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES if seq2seq else auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        kind = "seq2seq-LM" if seq2seq else "causal-LM"
    name = mapping.get(spec["model_type"])
    if not name or not hasattr(transformers, name):
        raise RuntimeError(f"transformers {transformers.__version__} maps {spec['model_type']} to no {kind} class")
    return getattr(transformers, name), seq2seq


def build(spec: dict, task: str, seed: int):
    cls, seq2seq = generating_class(spec, task)
    tiny = dict(spec.get("tiny_config") or {})
    tiny["use_cache"] = True  # the float32 fixtures export one forward pass without it
    torch.manual_seed(seed)
    config = ex.own_config(cls, transformers.AutoConfig.for_model(spec["model_type"], **tiny))
    if task in VISION_LANGUAGE_TASKS:  # its language model's config decides whether generate() keeps a cache
        config.get_text_config().use_cache = True
    try:
        # Experts as one batched matmul over the tokens' chosen experts: the eager loop over experts
        # has data-dependent shapes (tokens per expert), which a trace bakes in, and a decode step's
        # one token per row leaves most experts without tokens. Same weights, same result.
        model = cls._from_config(copy.deepcopy(config), attn_implementation="eager", experts_implementation="batched_mm")
    except (KeyError, ValueError, TypeError):
        model = ex.instantiate(cls, config)
    return ex.ready(model), config, seq2seq


def prompts(config, seed: int, left: bool, avoid: frozenset = frozenset()) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Two prompts of PROMPT_LENGTHS tokens, none of them in `avoid`, the shorter padded (on the
    left or the right), with their mask."""
    vocab = ex.normalized_vocab_size(config)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    pad = text.pad_token_id if isinstance(getattr(text, "pad_token_id", None), int) else 0
    generator = torch.Generator().manual_seed(seed)
    width = max(PROMPT_LENGTHS)
    if avoid:
        allowed = torch.tensor([i for i in range(3, vocab) if i not in avoid])
        ids = allowed[torch.randint(0, len(allowed), (len(PROMPT_LENGTHS), width), generator=generator)]
    else:
        ids = torch.randint(3, vocab, (len(PROMPT_LENGTHS), width), generator=generator)
    mask = torch.ones_like(ids)
    for row, length in enumerate(PROMPT_LENGTHS):
        padding = slice(0, width - length) if left else slice(length, width)
        ids[row, padding] = pad
        mask[row, padding] = 0
    return ids, mask, pad


def reference_generate(model, ids, mask, pad: int, seed: int, recorded=None):
    """PyTorch's generate(): the sampled tokens, each step's raw logits, and the tensor
    arguments generate() passed to the model's forward at each step (its feeds), or to the
    forward of the module `recorded` (a vision-language model's language model) where given. An
    encoder-decoder whose config names no decoder start token starts from the pad token, as
    T5's family does."""
    start = {}
    if model.config.is_encoder_decoder and model.generation_config.decoder_start_token_id is None and model.config.bos_token_id is None:
        start["decoder_start_token_id"] = pad
    calls, masks = [], []

    def record(_module, _args, kwargs):
        # cache_position is the past's length, which a graph with its past does not take.
        calls.append({k: v.clone() for k, v in kwargs.items() if isinstance(v, torch.Tensor) and not (recorded and k == "cache_position")})

    hooks = [(recorded or model).register_forward_pre_hook(record, with_kwargs=True)]
    if recorded is not None:
        hooks.append(model.register_forward_pre_hook(lambda _m, _a, kwargs: masks.append(kwargs.get("attention_mask")), with_kwargs=True))
    try:
        torch.manual_seed(seed)
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                 do_sample=True, top_k=0, top_p=1.0, temperature=1.0, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=pad, eos_token_id=None, **start)
    finally:
        for hook in hooks:
            hook.remove()
    # A vision-language model may hand its language model masks it made itself (a mapping of
    # mask kinds, or a 4-D mask): its language component takes the 2-D padding mask
    # deployments feed, from which its language model makes its own.
    for call, outer in zip(calls, masks):
        if isinstance(outer, torch.Tensor) and (call.get("attention_mask") is None or call["attention_mask"].dim() != 2):
            call["attention_mask"] = outer.clone()
    if len(calls) != NEW_TOKENS:
        raise RuntimeError(f"generate() called the model {len(calls)} times for {NEW_TOKENS} new tokens")
    # The prefill may be fed more than the steps after it (Mamba's mask only pads the prompt):
    # such a model gets a graph of its own for the prefill.
    if any(set(c) != set(calls[1]) for c in calls[1:]):
        raise RuntimeError(f"generate() fed the model different tensors across steps: {[sorted(c) for c in calls]}")
    return out.sequences, [logits.float() for logits in out.logits], calls


def layers_of(cache):
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise RuntimeError(f"the model's cache is a {type(cache).__name__}, not a layered cache (DynamicCache) this exporter can flatten")
    return layers


def cache_layout(cache) -> list[list[str]]:
    """Per layer, the names of the tensors its cache holds: attributes (`keys`, `values`) or,
    for a layer that keeps its states by index (a linear-attention or Mamba layer's
    `conv_states` and `recurrent_states`), `attribute.index`."""
    layout = []
    for layer in layers_of(cache):
        names = []
        # Private tensors (a sliding-window layer's `_sliding_window_tensor`) are settings, not state.
        for a, v in vars(layer).items():
            if a.startswith("_"):
                continue
            if isinstance(v, torch.Tensor):
                names.append(a)
            elif isinstance(v, dict):
                names += [f"{a}.{i}" for i, t in v.items() if isinstance(t, torch.Tensor)]
        layout.append(sorted(names))
    return layout


def cache_tensor(layer, name: str) -> torch.Tensor:
    attr, _, index = name.partition(".")
    return getattr(layer, attr)[int(index)] if index else getattr(layer, attr)


def flat_cache(cache, layout) -> list[torch.Tensor]:
    return [cache_tensor(layer, a) for layer, attrs in zip(layers_of(cache), layout) for a in attrs]


def tensor_name(attribute: str) -> str:
    """A cache tensor's name in the graph: `key`, `value` (as optimum and transformers.js name
    them), `conv_state`, `recurrent_state` (a layer's first state), `conv_state.1` (another)."""
    attr, _, index = attribute.partition(".")
    name = ATTRIBUTE_NAMES.get(attr, attr.removesuffix("s") if index else attr)
    return f"{name}.{index}" if index and index != "0" else name


def cache_names(layout, prefix: str, part: str = "") -> list[str]:
    return [f"{prefix}.{i}.{part}{tensor_name(a)}" for i, attrs in enumerate(layout) for a in attrs]


def filled_cache(config, layout, tensors):
    """A DynamicCache holding `tensors` (flat, in `layout`'s order), each layer marked as having
    seen them (a state layer's flags: initialized, a previous state, its convolution's width)."""
    from transformers import DynamicCache

    tensors = iter(tensors)
    cache = DynamicCache(config=config)
    if len(cache.layers) != len(layout):
        raise RuntimeError(f"DynamicCache(config) has {len(cache.layers)} layers, the model's cache {len(layout)}")
    for layer, attrs in zip(cache.layers, layout):
        for a in attrs:
            attr, _, index = a.partition(".")
            t = next(tensors)
            if not index:
                setattr(layer, attr, t)
                continue
            getattr(layer, attr)[int(index)] = t
            for flag in (f"is_{attr}_initialized", "has_previous_state"):
                if isinstance(getattr(layer, flag, None), dict):
                    getattr(layer, flag)[int(index)] = True
            if attr == "conv_states" and isinstance(getattr(layer, "conv_kernel_size", None), dict):
                layer.conv_kernel_size[int(index)] = t.shape[-1]
        first = cache_tensor(layer, attrs[0])
        layer.is_initialized, layer.dtype, layer.device = True, first.dtype, first.device
        if hasattr(layer, "cumulative_length"):  # a sliding-window layer counts what it has seen
            layer.cumulative_length = first.shape[-2]
    return cache


def cache_argument(model) -> str:
    """The keyword a model's forward takes its cache by: `past_key_values`, or Mamba's `cache_params`."""
    import inspect

    forward = getattr(model, "model", model).forward if isinstance(model, LanguageComponent) else model.forward
    params = inspect.signature(forward).parameters
    return "cache_params" if "cache_params" in params and "past_key_values" not in params else "past_key_values"


def returned_cache(out):
    cache = getattr(out, "past_key_values", None)
    return cache if cache is not None else getattr(out, "cache_params", None)


class CachedDecoder(torch.nn.Module):
    """A decoder-only step with the cache as flat tensors: feeds and past in, logits and present out."""

    def __init__(self, model, config, feeds, layout, with_past: bool = True):
        super().__init__()
        self.model, self.config, self.feeds, self.layout, self.with_past = model, config, feeds, layout, with_past
        self.argument = cache_argument(model)

    def forward(self, *args):
        cache = filled_cache(self.config, self.layout, args[len(self.feeds):]) if self.with_past else None
        out = self.model(**dict(zip(self.feeds, args)), **{self.argument: cache}, use_cache=True, return_dict=True)
        return (out.logits, *flat_cache(returned_cache(out), self.layout))


class LanguageComponent(torch.nn.Module):
    """A vision-language model's language component, as optimum and transformers.js split such
    models (embed_tokens, vision_encoder, decoder_model_merged): everything after the embedding
    layer, on the prompt's embeddings (`inputs_embeds`, which the model's own embedding layer made,
    merged with image features where a prompt has an image; the token ids where the model feeds
    its language model those), out to the logits. It runs the model's own forward without
    pixels, so the logits are made as the model makes them (its head, soft-capping or scaling);
    `decoder` is its language model, whose feeds generate()'s steps are recorded from."""

    def __init__(self, model):
        super().__init__()
        self.model, self.decoder = model, model.get_decoder()

    def forward(self, **kwargs):
        return self.model(**kwargs)


def special_token_ids(config) -> frozenset:
    """The token ids a vision-language config reserves for images, videos and their bounds (every
    `*_token_id` or `*_token_index` of it and its text config but padding, bos and eos): a prompt
    of text only leaves them out, or the model would look for the image they stand for."""
    ordinary = {"pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "sep_token_id"}
    ids = set()
    for c in (config, config.get_text_config()):
        for key, value in vars(c).items():
            if (key.endswith("_token_id") or key.endswith("_token_index")) and key not in ordinary:
                ids.update(v for v in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(v, int))
    return frozenset(ids)


class Encoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.encoder = model.get_encoder()

    def forward(self, input_ids, attention_mask):
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
        return out[0] if isinstance(out, tuple) else out.last_hidden_state  # some encoders return tuples whatever is asked


class Seq2SeqDecoder(torch.nn.Module):
    """An encoder-decoder's decoding step on the encoder's hidden states: the first step (no
    cache: it makes both) or a later one (`with_past`: the self-attention cache grows, the
    cross-attention cache is the first step's and is not returned again)."""

    def __init__(self, model, config, feeds, layouts, with_past: bool, output_class=None):
        super().__init__()
        self.model, self.config, self.feeds, self.layouts, self.with_past = model, config, feeds, layouts, with_past
        self.output_class = output_class

    def forward(self, *args):
        from transformers import EncoderDecoderCache

        feeds = dict(zip(self.feeds, args))
        rest = args[len(self.feeds):]
        hidden, past = rest[0], rest[1:]
        cache = None
        if self.with_past:
            count = sum(len(a) for a in self.layouts[0])
            cache = EncoderDecoderCache(filled_cache(self.config, self.layouts[0], past[:count]), filled_cache(self.config, self.layouts[1], past[count:]))
            cache.is_updated = {i: True for i in range(len(self.layouts[1]))}
        out = self.model(**feeds, encoder_outputs=encoder_output(hidden, self.output_class), past_key_values=cache, use_cache=True, return_dict=True)
        present = flat_cache(out.past_key_values.self_attention_cache, self.layouts[0])
        if not self.with_past:
            present += flat_cache(out.past_key_values.cross_attention_cache, self.layouts[1])
        return (out.logits, *present)


def encoder_output(hidden, cls=None):
    """The encoder's hidden states as the model's forward takes them: in the output class its
    encoder returns (`cls`; a mixture of experts' reads `.router_logits`, left None), else
    transformers' plain one."""
    from transformers.modeling_outputs import BaseModelOutput

    return (cls or BaseModelOutput)(last_hidden_state=hidden)


def grown_axes(before, after) -> list[int | None]:
    """The axis along which each cache tensor grows from one step to the next; None for a
    state of a fixed size (a convolution's window, an SSM's or linear attention's state)."""
    axes = []
    for b, a in zip(before, after):
        grown = [d for d in range(b.dim()) if a.shape[d] == b.shape[d] + 1]
        if b.shape == a.shape:
            axes.append(None)
            continue
        if b.dim() != a.dim() or len(grown) != 1:
            raise RuntimeError(f"a cache tensor of shape {list(b.shape)} becomes {list(a.shape)} after one token: "
                               "neither a cache that grows along one sequence axis nor a state of a fixed size")
        axes.append(grown[0])
    return axes


def empty_like_along(t: torch.Tensor, axis: int) -> list[int]:
    return [0 if d == axis else n for d, n in enumerate(t.shape)]


def measured_cache(past_names, tensors, axes) -> list[dict]:
    """The past inputs of the model's cache as a spec declares them, flat: name, dtype, axes."""
    return [{"name": n, "dtype": str(t.dtype).removeprefix("torch."), "axes": axes[n]} for n, t in zip(past_names, tensors)]


CACHE_PREFIX = "past_key_values."


def grouped_cache(flat: list[dict]) -> list[dict]:
    """A flat cache as the spec's `cache:` writes it: the layers that hold the same tensors, once
    (`{layers: [0, 1], tensors: [{name: key, dtype, axes}, ...]}`); a tensor's graph input is
    `past_key_values.<layer>.<name>`, its output `present.<layer>.<name>`."""
    per_layer: dict[int, list[dict]] = {}
    for t in flat:
        layer, rest = t["name"].removeprefix(CACHE_PREFIX).split(".", 1)
        per_layer.setdefault(int(layer), []).append({**t, "name": rest})
    groups: list[dict] = []
    for layer in sorted(per_layer):
        tensors = sorted(per_layer[layer], key=lambda t: t["name"])
        same = next((g for g in groups if g["tensors"] == tensors), None)
        if same:
            same["layers"].append(layer)
        else:
            groups.append({"layers": [layer], "tensors": tensors})
    return groups


def flat_declared(groups: list[dict]) -> dict[str, dict]:
    """A spec's `cache:` as past input name -> {dtype, axes}."""
    return {f"{CACHE_PREFIX}{layer}.{t['name']}": {"dtype": t["dtype"], "axes": list(t["axes"])}
            for g in groups for layer in g["layers"] for t in g["tensors"]}


def check_declared(declared, measured: list[dict], model_type: str = "<model_type>") -> None:
    """The model's cache must be the one its spec declares (`cache:`, which `gen import` derives
    by the same trace): names, dtypes and axes. A spec without one is refused: its fixture would
    check a cache nobody declared."""
    got = {t["name"]: {"dtype": t["dtype"], "axes": list(t["axes"])} for t in measured}
    if not declared:
        raise RuntimeError(f"the spec declares no cache, and the model's holds {len(got)} tensors ({', '.join(list(got)[:4])}, ...): "
                           f"run `gen import --model {model_type}` to derive `imported.cache`, or declare `cache:` in the spec")
    want = flat_declared(declared)
    problems = [f"{n}: declared, not in the model's cache" for n in want if n not in got]
    problems += [f"{n}: in the model's cache, not declared" for n in got if n not in want]
    problems += [f"{n}: declared {want[n]['dtype']} {want[n]['axes']}, the model's is {got[n]['dtype']} {got[n]['axes']}"
                 for n in want if n in got and want[n] != got[n]]
    if problems:
        raise RuntimeError(f"the model's cache is not the one its spec declares (`cache:`; `gen import --model {model_type}` "
                           f"derives it again): {len(problems)} differences: " + "; ".join(problems[:4]))


def measure_cache(job: dict) -> list[dict]:
    """The cache a model's generation fixture would hold, as `gen import` writes it into the spec
    (`imported.cache`): the same build, prompts and trace as the fixture, without exporting."""
    run = prepared(job)
    if run["seq2seq"]:
        trace = encoder_decoder_trace(run["model"], run["ids"], run["mask"], run["pad"], run["seed"])
    else:
        component = LanguageComponent(run["model"]) if run["vision_language"] else None
        trace = decoder_only_trace(run["model"], run["ids"], run["mask"], run["pad"], run["seed"], component)
    return grouped_cache(trace["cache"])


def prepared(job: dict) -> dict:
    """A job's model with its cache on, and its prompts: what the fixture and `measure_cache` trace."""
    spec, seed, task = job["spec"], int(job.get("seed", 0)), job.get("task", "text-generation")
    model, config, seq2seq = build(spec, task, seed)
    vision_language = task in VISION_LANGUAGE_TASKS
    ids, mask, pad = prompts(config, seed, left=not seq2seq, avoid=special_token_ids(config) if vision_language else frozenset())
    return {"spec": spec, "seed": seed, "model": model, "config": config, "seq2seq": seq2seq, "vision_language": vision_language,
            "ids": ids, "mask": mask, "pad": pad}


def export_graph(wrapper, example, names, outputs, axes: dict, path: Path, verify, legacy_only=False) -> tuple[str, dict]:
    """The legacy exporter, else dynamo; `verify` runs the whole loop on onnxruntime after each."""
    errors = {}
    for exporter in ("legacy",) if legacy_only else ("legacy", "dynamo"):
        try:
            with torch.no_grad():
                if exporter == "legacy":
                    torch.onnx.export(wrapper, example, str(path), dynamo=False, input_names=names, output_names=outputs,
                                      dynamic_axes={k: {d: a for d, a in enumerate(v) if a} for k, v in axes.items()}, opset_version=17)
                else:
                    dims = tuple({d: torch.export.Dim.AUTO for d, a in enumerate(axes[n]) if a} for n in names)
                    with ex._env("TRANSFORMERS_DISABLE_TORCH_CHECK", "1"), ex.dynamo_speedups():
                        program = torch.onnx.export(wrapper, example, dynamo=True, input_names=names, output_names=outputs,
                                                    dynamic_shapes=(dims,), opset_version=18, external_data=False)
                    program.save(str(path), external_data=False)
                    ex.tidy_dynamo_graph(path, names, {k: {d: a for d, a in enumerate(v) if a} for k, v in axes.items()})
            verify()
            return exporter, errors
        except Exception as error:  # noqa: BLE001 - every exporter's error is kept
            errors[exporter] = ex._error_line(error)
            path.unlink(missing_ok=True)
    raise RuntimeError("; ".join(f"{k} exporter: {v}" for k, v in errors.items()))


def export_graphs(graphs, plan: dict, axes: dict, tmp: Path, tolerance: dict) -> dict:
    """Exports a plan's graphs in order (`(graph, wrapper, example, input names, output
    names)`), each checked by onnxruntime as soon as it can be: on the steps that every graph
    exported so far can run (the prefill's graph on the first step; the last graph on the
    whole loop). A graph no step can run yet (an encoder, before its decoder) gets the legacy
    exporter only: a later graph's check failing would not be this graph's fault. Returns
    meta.json's `exporter`: each graph's exporter and the errors of those that failed first."""
    exporters = {}
    for index, (graph, wrapper, example, names, outputs) in enumerate(graphs):
        path = tmp / plan["graphs"][graph]["file"]
        runnable = steps_checking(plan, {g for g, *_ in graphs[: index + 1]}, graph)

        def verify(graph=graph, path=path, runnable=runnable):
            plan["graphs"][graph]["inputs"] = [{"name": n, "axes": axes.get(n, [])} for n in graph_inputs(path)]
            if runnable:
                run_loop(tmp, {**plan, "steps": plan["steps"][:runnable]}, tolerance)

        exporters[graph] = export_graph(wrapper.eval(), example, names, outputs, axes, path, verify, legacy_only=not runnable)
    if len(exporters) == 1:
        name, errors = next(iter(exporters.values()))
        return {"name": name, "fallback_errors": errors}
    return {"name": ", ".join(f"{g}: {n}" for g, (n, _) in exporters.items()),
            "fallback_errors": {f"{g}: {k}": v for g, (_, e) in exporters.items() for k, v in e.items()}}


def steps_checking(plan: dict, exported: set, graph: str) -> int:
    """How many of the plan's first steps the graphs `exported` so far can run (the prologue
    included), if those steps run `graph`; else 0: nothing checks it yet."""
    runnable = 0
    if all(p["graph"] in exported for p in plan["prologue"]):
        while runnable < len(plan["steps"]) and plan["steps"][runnable]["graph"] in exported:
            runnable += 1
    return runnable if graph in {s["graph"] for s in plan["prologue"] + plan["steps"][:runnable]} else 0


def graph_inputs(path: Path) -> list[str]:
    """The inputs the exported graph kept (the legacy exporter drops the unused ones)."""
    import onnx

    return [i.name for i in onnx.load(str(path), load_external_data=False).graph.input]


def run_loop(folder: Path, plan: dict, tolerance: dict) -> None:
    """The check's loop on onnxruntime's CPU provider, from the fixture plan (`plan`: meta.json's
    graphs, prologue, steps and carried, with the arrays still in memory under "arrays"): each
    step's last-position logits must match PyTorch's as the Rust check's float32 bound does."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    sessions = {}
    latest = {c["output"]: np.zeros(c["empty_shape"], dtype=np.float32) for c in plan["carried"] if c.get("empty_shape") is not None}

    def run(graph: str, feeds: dict) -> dict:
        if graph not in sessions:
            sessions[graph] = ort.InferenceSession(str(folder / plan["graphs"][graph]["file"]), options, providers=["CPUExecutionProvider"])
        session = sessions[graph]
        carried = {c["input"]: c["output"] for c in plan["carried"]}
        inputs = {}
        for name in plan["graphs"][graph]["inputs"]:
            inputs[name["name"]] = feeds[name["name"]] if name["name"] in feeds else latest[carried[name["name"]]]
        names = [o.name for o in session.get_outputs()]
        out = dict(zip(names, session.run(names, inputs)))
        latest.update(out)
        return out

    for part in plan["prologue"]:
        run(part["graph"], part["arrays"])
    for step, part in enumerate(plan["steps"]):
        out = run(part["graph"], part["arrays"])
        got, want = out[plan["logits"]][:, -1, :].astype(np.float64), part["reference"].astype(np.float64)
        bad = ~(np.abs(got - want) <= tolerance["abs"] + tolerance["rel"] * np.abs(want))
        if bad.any():
            raise RuntimeError(f"onnxruntime's logits differ from PyTorch's at step {step}: {int(bad.sum())} of {want.size} "
                               f"elements outside abs {tolerance['abs']} + rel {tolerance['rel']} (max abs error {np.abs(got - want).max():.3e})")


def numpy(tensors: dict) -> dict:
    return {k: v.detach().cpu().numpy() for k, v in tensors.items()}


def feed_axes(name: str, first: torch.Tensor, second: torch.Tensor) -> list[str]:
    """A step feed's named axes, from its shapes at the prefill and the first decode step: the
    one that changed is the sequence (the mask's spans the past too), a dimension of the batch's
    size before it is the batch (position ids of multimodal RoPE are [3, batch, sequence])."""
    changed = [d for d in range(first.dim()) if first.shape[d] != second.shape[d]]
    if first.dim() != second.dim() or len(changed) != 1:
        raise RuntimeError(f"the feed {name} has shape {list(first.shape)} at the prefill and {list(second.shape)} after it: not one sequence axis")
    batch = next((d for d in range(changed[0]) if first.shape[d] == len(PROMPT_LENGTHS)), None)
    sequence = "total_sequence" if name == "attention_mask" else "sequence"
    return ["batch" if d == batch else sequence if d == changed[0] else "" for d in range(first.dim())]


def decoder_only_trace(model, ids, mask, pad, seed, component=None) -> dict:
    """generate()'s run of a decoder-only model (or of a vision-language model's language
    component) and its cache, step by step: everything its plan and graphs are made from.
    `split`: the prefill needs a graph of its own, because the model's cache holds states of
    a fixed size (Mamba's, linear attention's: a prefill computes them another way than a
    step reads them) or because generate() fed the prefill more than the steps after it."""
    sequences, reference, calls = reference_generate(model, ids, mask, pad, seed, recorded=component and component.decoder)
    model = component or model
    argument = cache_argument(model)
    feeds = [[k for k in call if k not in ("past_key_values", "cache_params")] for call in calls]
    presents, cache = [], None
    with torch.no_grad():  # the steps again, to have every step's cache (generate() grows one in place)
        for call, step_feeds in zip(calls, feeds):
            cache = returned_cache(model(**{k: call[k] for k in step_feeds}, **{argument: cache}, use_cache=True, return_dict=True))
            if cache is None:
                raise RuntimeError(f"the model returned no cache with use_cache=True (it takes one as `{argument}`)")
            layout = cache_layout(cache)
            presents.append([t.clone() for t in flat_cache(cache, layout)])
    seq = grown_axes(presents[0], presents[1])
    split = None in seq or feeds[0] != feeds[1]
    past_names, present_names = cache_names(layout, "past_key_values"), cache_names(layout, "present")
    width = ids.shape[1]
    axes = {name: feed_axes(name, calls[0][name], calls[1][name]) if name in feeds[1] else prompt_axes(name, calls[0][name], width) for name in feeds[0]}
    axes.update({name: feed_axes(name, calls[0][name], calls[1][name]) for name in feeds[1] if name not in axes})
    for name, t, axis in zip(past_names, presents[0], seq):
        axes[name] = ["batch" if d == 0 else "past_sequence" if d == axis else "" for d in range(t.dim())]
    return {"model": model, "sequences": sequences, "reference": reference, "calls": calls, "feeds": feeds, "presents": presents,
            "layout": layout, "seq": seq, "split": split, "past_names": past_names, "present_names": present_names, "axes": axes,
            "cache": measured_cache(past_names, presents[0], axes)}


def prompt_axes(name: str, t: torch.Tensor, width: int) -> list[str]:
    """A feed of the prefill only: its axis of the prompt's width is the sequence, one of the
    batch's size before it the batch."""
    sequence = next((d for d in range(t.dim()) if t.shape[d] == width), None)
    if sequence is None:
        raise RuntimeError(f"the prefill's feed {name} has shape {list(t.shape)}: no axis of the prompt's {width} tokens")
    batch = next((d for d in range(sequence) if t.shape[d] == len(PROMPT_LENGTHS)), None)
    return ["batch" if d == batch else "sequence" if d == sequence else "" for d in range(t.dim())]


def decoder_only(model, config, ids, mask, pad, seed, tmp: Path, tolerance: dict, declared, component=None) -> tuple[dict, dict]:
    """The decoder-only plan: one graph, every step (the prefill's past is empty), as
    transformers.js's merged decoders take it; or, for a `split` trace, `decoder.onnx` for the
    prefill (no past in) and `decoder_with_past.onnx` after it. With `component` (a
    vision-language model's LanguageComponent), the graph is that component, fed what the
    model fed its language model. `declared` is the spec's cache, which the model's must be."""
    trace = decoder_only_trace(model, ids, mask, pad, seed, component)
    check_declared(declared, trace["cache"], model.config.model_type)
    model, calls, feeds, presents, seq = trace["model"], trace["calls"], trace["feeds"], trace["presents"], trace["seq"]
    past_names, present_names, axes = trace["past_names"], trace["present_names"], trace["axes"]
    out_axes = {"logits": ["batch", "sequence", ""]}
    for name, t, axis in zip(present_names, presents[0], seq):
        out_axes[name] = ["batch" if d == 0 else "total_sequence" if d == axis else "" for d in range(t.dim())]
    split = trace["split"]
    step_graph = ["decoder" if i == 0 or not split else "decoder_with_past" for i in range(len(calls))]
    plan = {
        "graphs": {g: {"file": f"{g}.onnx"} for g in dict.fromkeys(step_graph)},
        "prologue": [],
        "steps": [{"graph": g, "arrays": numpy({k: c[k] for k in f}), "reference": r.numpy()}
                  for g, c, f, r in zip(step_graph, calls, feeds, trace["reference"])],
        "carried": [{"input": p, "output": o, "dtype": "float32", **({"sequence_axis": a} if a is not None else {}),
                     **({"empty_shape": empty_like_along(t, a)} if not split else {})}
                    for p, o, t, a in zip(past_names, present_names, presents[0], seq)],
        "logits": "logits",
    }
    outputs = ["logits"] + present_names
    if split:
        # The prefill on the prompt; the steps after it on one token each (always one: the
        # size-1 axis a trace fixes is the one the graph always sees).
        graphs = [("decoder", CachedDecoder(model, config, feeds[0], trace["layout"], with_past=False), tuple(calls[0][n] for n in feeds[0]), feeds[0], outputs),
                  ("decoder_with_past", CachedDecoder(model, config, feeds[1], trace["layout"]),
                   tuple([calls[1][n] for n in feeds[1]] + presents[0]), feeds[1] + past_names, outputs)]
    else:
        # Traced on steps 1 and 2 as one chunk of two new tokens after the prefill's cache (as
        # speculative decoding feeds them): tracing on one token would bake the length 1 in
        # (torch.export specialises every dimension of size 1).
        chunk = [calls[2][n] if n == "attention_mask" else torch.cat([calls[1][n], calls[2][n]], dim=axes[n].index("sequence")) for n in feeds[0]]
        graphs = [("decoder", CachedDecoder(model, config, feeds[0], trace["layout"]), tuple(chunk + presents[0]), feeds[0] + past_names, outputs)]
    return plan, {"exporter": export_graphs(graphs, plan, {**axes, **out_axes}, tmp, tolerance), "sequences": trace["sequences"].tolist()}


def encoder_decoder_trace(model, ids, mask, pad, seed) -> dict:
    """generate()'s run of an encoder-decoder and both its caches, step by step."""
    sequences, reference, calls = reference_generate(model, ids, mask, pad, seed)
    feeds = [k for k in calls[0] if k not in ("past_key_values", "input_ids")]
    with torch.no_grad():
        hidden = Encoder(model)(ids, mask)
        real = model.get_encoder()(input_ids=ids, attention_mask=mask, return_dict=True)
        output_class = None if isinstance(real, tuple) else type(real)
        presents, cache = [], None
        for call in calls:
            cache = model(**{k: call[k] for k in feeds}, encoder_outputs=encoder_output(hidden, output_class), past_key_values=cache, use_cache=True, return_dict=True).past_key_values
            layouts = (cache_layout(cache.self_attention_cache), cache_layout(cache.cross_attention_cache))
            presents.append(([t.clone() for t in flat_cache(cache.self_attention_cache, layouts[0])],
                             [t.clone() for t in flat_cache(cache.cross_attention_cache, layouts[1])]))
    seq = grown_axes(presents[0][0], presents[1][0])
    self_past, self_present = cache_names(layouts[0], "past_key_values", "decoder."), cache_names(layouts[0], "present", "decoder.")
    cross_past, cross_present = cache_names(layouts[1], "past_key_values", "encoder."), cache_names(layouts[1], "present", "encoder.")
    axes = {"input_ids": ["batch", "encoder_sequence"], "attention_mask": ["batch", "encoder_sequence"],
            "encoder_hidden_states": ["batch", "encoder_sequence", ""], "logits": ["batch", "sequence", ""]}
    for name in feeds:
        axes.setdefault(name, ["batch", "sequence"])
    for names, tensors, grows in ((self_past, presents[0][0], "past_sequence"), (self_present, presents[0][0], "total_sequence")):
        for name, t, a in zip(names, tensors, seq):
            axes[name] = ["batch" if d == 0 else grows if d == a else "" for d in range(t.dim())]
    for names in (cross_past, cross_present):
        for name, t in zip(names, presents[0][1]):
            axes[name] = ["batch" if d == 0 else "encoder_sequence" if d == t.dim() - 2 else "" for d in range(t.dim())]
    return {"sequences": sequences, "reference": reference, "calls": calls, "feeds": feeds, "hidden": hidden, "output_class": output_class,
            "presents": presents, "layouts": layouts, "seq": seq, "self_past": self_past, "self_present": self_present,
            "cross_past": cross_past, "cross_present": cross_present, "axes": axes,
            "cache": measured_cache(self_past + cross_past, presents[0][0] + presents[0][1], axes)}


def encoder_decoder(model, config, ids, mask, pad, seed, tmp: Path, tolerance: dict, declared) -> tuple[dict, dict]:
    """The encoder-decoder plan: the encoder once, the first decoder step, then the decoder with
    its past. `declared` is the spec's cache, which the model's must be."""
    trace = encoder_decoder_trace(model, ids, mask, pad, seed)
    check_declared(declared, trace["cache"], model.config.model_type)
    calls, feeds, hidden, output_class, presents = trace["calls"], trace["feeds"], trace["hidden"], trace["output_class"], trace["presents"]
    layouts, seq, axes, reference, sequences = trace["layouts"], trace["seq"], trace["axes"], trace["reference"], trace["sequences"]
    self_past, self_present, cross_past, cross_present = trace["self_past"], trace["self_present"], trace["cross_past"], trace["cross_present"]
    plan = {
        "graphs": {"encoder": {"file": "encoder.onnx"}, "decoder": {"file": "decoder.onnx"}, "decoder_with_past": {"file": "decoder_with_past.onnx"}},
        "prologue": [{"graph": "encoder", "arrays": {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}}],
        "steps": [{"graph": "decoder" if i == 0 else "decoder_with_past", "arrays": numpy({k: c[k] for k in feeds}), "reference": r.numpy()}
                  for i, (c, r) in enumerate(zip(calls, reference))],
        "carried": [{"input": "encoder_hidden_states", "output": "last_hidden_state"}]
        + [{"input": p, "output": o, "sequence_axis": a, "dtype": "float32"} for p, o, a in zip(self_past, self_present, seq)]
        + [{"input": p, "output": o, "dtype": "float32"} for p, o in zip(cross_past, cross_present)],
        "logits": "logits",
    }
    graphs = [
        ("encoder", Encoder(model), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"]),
        ("decoder", Seq2SeqDecoder(model, config, feeds, layouts, False, output_class), tuple(calls[0][k] for k in feeds) + (hidden,),
         feeds + ["encoder_hidden_states"], ["logits"] + self_present + cross_present),
        ("decoder_with_past", Seq2SeqDecoder(model, config, feeds, layouts, True, output_class),
         tuple(calls[2][k] for k in feeds) + (hidden, *presents[1][0], *presents[1][1]), feeds + ["encoder_hidden_states"] + self_past + cross_past,
         ["logits"] + self_present),
    ]
    axes["last_hidden_state"] = ["batch", "encoder_sequence", ""]
    return plan, {"exporter": export_graphs(graphs, plan, axes, tmp, tolerance), "sequences": sequences.tolist()}


def export(job: dict) -> None:
    spec, seed = job["spec"], int(job.get("seed", 0))
    out_dir = Path(job["out_dir"])
    tmp = out_dir.with_name(f"{out_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    run = prepared(job)
    model, config, seq2seq, vision_language = run["model"], run["config"], run["seq2seq"], run["vision_language"]
    ids, mask, pad = run["ids"], run["mask"], run["pad"]
    tolerance = job.get("tolerance") or ex.DEFAULT_TOLERANCE
    if vision_language:  # its language component, on a prompt of text
        plan, made = decoder_only(model, config, ids, mask, pad, seed, tmp, tolerance, spec.get("cache"), component=LanguageComponent(model))
    else:
        plan, made = (encoder_decoder if seq2seq else decoder_only)(model, config, ids, mask, pad, seed, tmp, tolerance, spec.get("cache"))
    references = ex.save_npy_dir(tmp / "reference", {str(step): torch.from_numpy(s["reference"]) for step, s in enumerate(plan["steps"])})
    steps = [{"graph": s["graph"], "feeds": ex.save_npy_dir(tmp / "steps" / str(i), {k: torch.from_numpy(v) for k, v in s["arrays"].items()}),
              "reference": references[i]} for i, s in enumerate(plan["steps"])]
    prologue = [{"graph": p["graph"], "feeds": ex.save_npy_dir(tmp / "prologue" / p["graph"], {k: torch.from_numpy(v) for k, v in p["arrays"].items()})}
                for p in plan["prologue"]]
    graphs = {name: {**g, "integer_nodes": ex.integer_nodes(tmp / g["file"])} for name, g in plan["graphs"].items()}
    meta = {
        "model_type": spec["model_type"],
        "source": "tiny-random",
        "class": type(model).__name__,
        **({"component": "language: the model's forward without pixels, fed what it fed its language model (get_decoder())"} if vision_language else {}),
        "seed": seed,
        "cache_key": job.get("cache_key"),
        "exporter": {**made["exporter"], "version": GENERATION_EXPORTER_VERSION},
        "versions": ex.library_versions(),
        "graphs": graphs,
        "prologue": prologue,
        "steps": steps,
        "carried": plan["carried"],
        "logits": plan["logits"],
        "prompt_lengths": list(PROMPT_LENGTHS),
        "padding": "right" if seq2seq else "left",
        "pad_token_id": pad,
        "sequences": made["sequences"],
        "sampling": {"do_sample": True, "top_k": 0, "top_p": 1.0, "temperature": 1.0, "seed": seed, "new_tokens": NEW_TOKENS},
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)


def main() -> int:
    import argparse
    import traceback

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec-json", help="a spec as the exporter receives it (gen's exporter view)")
    parser.add_argument("--out", help="output folder")
    args = parser.parse_args()
    job = {"spec": json.load(open(args.spec_json)), "out_dir": args.out, "seed": 0} if args.spec_json else json.load(sys.stdin)
    try:
        export(job)
    except Exception as error:  # noqa: BLE001
        traceback.print_exc()
        print(f"{type(error).__name__}: {error}".splitlines()[0][:800], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
