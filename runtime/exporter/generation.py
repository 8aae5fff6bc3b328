"""Build one hwmatrix generation fixture: a text decoder with its cache of past keys and values
as graph inputs and outputs, and the reference of PyTorch's own `generate()` to check it by.

`gen fixtures` sends a job like export.py's ({"spec", "out_dir", "cache_key", "seed"}) for every
model whose task is text-generation. The fixture (`<fixtures>/generation/<model_type>/`):

    meta.json              the steps' inputs, the cache layout, the tokens generated, how
    decoder.onnx           one graph for every step: feeds + past_key_values.<layer>.<key|value>
                           in, logits + present.<layer>.<key|value> out (the prefill's past is
                           empty: its sequence axis is 0), as transformers.js and optimum's
                           merged decoders take it
    steps/<i>/<feed>.npy   what generate() fed the model at step i (input_ids, attention_mask,
                           position_ids...), recorded from the model's own forward calls
    reference/<i>.npy      the logits PyTorch computed for the last position at step i, [batch, vocab]

The prompt is a padded batch of two prompts of different lengths (left padding, as generate()
pads decoder-only models), so the masks over the cache are exercised; 8 new tokens, sampled with
a seed (tiny random models repeat a token under greedy decoding). A check teacher-forces these
tokens: step i feeds what generate() fed, with the cache the engine itself returned at step i-1.

Its own file with its own cache key (runtime/cell's fixture_key covers it), so changing it
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

GENERATION_EXPORTER_VERSION = 1
NEW_TOKENS = 8
PROMPT_LENGTHS = (6, 4)
# Cache attributes that are a layer's keys and values, named as optimum and transformers.js name them.
ATTRIBUTE_NAMES = {"keys": "key", "values": "value"}


def causal_lm_class(spec: dict):
    """The class that generates: the spec's export class when it has an LM head, else the
    causal-LM class transformers' registry maps the model_type to."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    named = spec["export"]["class"]
    if named.endswith("ForCausalLM") or named.endswith("LMHeadModel"):
        return getattr(transformers, named)
    name = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(spec["model_type"])
    if not name or not hasattr(transformers, name):
        raise RuntimeError(f"transformers {transformers.__version__} maps {spec['model_type']} to no causal-LM class")
    return getattr(transformers, name)


def build(spec: dict, seed: int):
    cls = causal_lm_class(spec)
    tiny = dict(spec.get("tiny_config") or {})
    tiny["use_cache"] = True  # the float32 fixtures export one forward pass without it
    torch.manual_seed(seed)
    config = ex.own_config(cls, transformers.AutoConfig.for_model(spec["model_type"], **tiny))
    try:
        # Experts as one batched matmul over the tokens' chosen experts: the eager loop over experts
        # has data-dependent shapes (tokens per expert), which a trace bakes in, and a decode step's
        # one token per row leaves most experts without tokens. Same weights, same result.
        model = cls._from_config(copy.deepcopy(config), attn_implementation="eager", experts_implementation="batched_mm")
    except (KeyError, ValueError, TypeError):
        model = ex.instantiate(cls, config)
    return ex.ready(model), config


def prompts(config, seed: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Two prompts of PROMPT_LENGTHS tokens, the shorter left-padded, with their mask."""
    vocab = ex.normalized_vocab_size(config)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    pad = text.pad_token_id if isinstance(getattr(text, "pad_token_id", None), int) else 0
    generator = torch.Generator().manual_seed(seed)
    width = max(PROMPT_LENGTHS)
    ids = torch.randint(3, vocab, (len(PROMPT_LENGTHS), width), generator=generator)
    mask = torch.ones_like(ids)
    for row, length in enumerate(PROMPT_LENGTHS):
        ids[row, : width - length] = pad
        mask[row, : width - length] = 0
    return ids, mask, pad


def reference_generate(model, ids, mask, pad: int, seed: int):
    """PyTorch's generate(): the sampled tokens, each step's raw logits, and the tensor
    arguments generate() passed to the model's forward at each step (its feeds)."""
    calls = []

    def record(_module, _args, kwargs):
        calls.append({k: v.clone() for k, v in kwargs.items() if isinstance(v, torch.Tensor)})

    hook = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        torch.manual_seed(seed)
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                 do_sample=True, top_k=0, top_p=1.0, temperature=1.0, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=pad, eos_token_id=None)
    finally:
        hook.remove()
    if len(calls) != NEW_TOKENS:
        raise RuntimeError(f"generate() called the model {len(calls)} times for {NEW_TOKENS} new tokens")
    return out.sequences, [logits.float() for logits in out.logits], calls


def cache_layout(cache) -> list[list[str]]:
    """Per layer, the names of the tensors its cache holds (keys and values, or others)."""
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise RuntimeError(f"the model's cache is a {type(cache).__name__}, not a layered cache (DynamicCache) this exporter can flatten")
    # Private tensors (a sliding-window layer's `_sliding_window_tensor`) are settings, not state.
    return [sorted(a for a, v in vars(layer).items() if isinstance(v, torch.Tensor) and not a.startswith("_")) for layer in layers]


def flat_cache(cache, layout) -> list[torch.Tensor]:
    return [getattr(layer, a) for layer, attrs in zip(cache.layers, layout) for a in attrs]


def cache_names(layout, prefix: str) -> list[str]:
    return [f"{prefix}.{i}.{ATTRIBUTE_NAMES.get(a, a)}" for i, attrs in enumerate(layout) for a in attrs]


class CachedDecoder(torch.nn.Module):
    """One decoding step with the cache as flat tensors: feeds and past in, logits and present out."""

    def __init__(self, model, config, feeds, layout):
        super().__init__()
        self.model, self.config, self.feeds, self.layout = model, config, feeds, layout

    def forward(self, *args):
        from transformers import DynamicCache

        feeds = dict(zip(self.feeds, args[: len(self.feeds)]))
        past = iter(args[len(self.feeds):])
        cache = DynamicCache(config=self.config)
        if len(cache.layers) != len(self.layout):
            raise RuntimeError(f"DynamicCache(config) has {len(cache.layers)} layers, the model's cache {len(self.layout)}")
        for layer, attrs in zip(cache.layers, self.layout):
            for a in attrs:
                setattr(layer, a, next(past))
            first = getattr(layer, attrs[0])
            layer.is_initialized, layer.dtype, layer.device = True, first.dtype, first.device
            if hasattr(layer, "cumulative_length"):  # a sliding-window layer counts what it has seen
                layer.cumulative_length = first.shape[-2]
        out = self.model(**feeds, past_key_values=cache, use_cache=True, return_dict=True)
        return (out.logits, *flat_cache(out.past_key_values, self.layout))


def replay(model, calls, feeds):
    """The steps again, one forward each with the cache the previous step returned: every step's
    present cache (generate() keeps one cache object and grows it in place)."""
    presents, cache = [], None
    with torch.no_grad():
        for call in calls:
            out = model(**{k: call[k] for k in feeds}, past_key_values=cache, use_cache=True, return_dict=True)
            cache = out.past_key_values
            layout = cache_layout(cache)
            presents.append([t.clone() for t in flat_cache(cache, layout)])
    return presents, layout


def sequence_axes(presents) -> list[int]:
    """The axis along which each cache tensor grows from one step to the next."""
    axes = []
    for before, after in zip(presents[0], presents[1]):
        grown = [d for d in range(before.dim()) if after.shape[d] == before.shape[d] + 1]
        if before.dim() != after.dim() or len(grown) != 1:
            raise RuntimeError(f"a cache tensor of shape {list(before.shape)} becomes {list(after.shape)} after one token: "
                               "not a cache that grows along one sequence axis (conv or SSM states are not exported yet)")
        axes.append(grown[0])
    return axes


def step_inputs(calls, presents, feeds, axes, step: int) -> list[torch.Tensor]:
    """Step `step`'s graph inputs: its feeds, then the past (empty at the prefill)."""
    if step == 0:
        past = [torch.zeros([0 if d == axis else n for d, n in enumerate(t.shape)], dtype=t.dtype) for t, axis in zip(presents[0], axes)]
    else:
        past = presents[step - 1]
    return [calls[step][k] for k in feeds] + list(past)


def chunk_example(calls, presents, feeds) -> list[torch.Tensor]:
    """The inputs the graph is traced on: steps 1 and 2 as one chunk of two new tokens after the
    prefill's cache (as speculative decoding feeds them). Tracing on one token would bake the
    sequence length 1 in: torch.export specialises every dimension of size 1, and the legacy
    tracer bakes the per-expert token counts of a mixture of experts."""
    chunk = []
    for name in feeds:
        one, two = calls[1][name], calls[2][name]
        chunk.append(two if name == "attention_mask" or one.dim() < 2 else torch.cat([one, two], dim=1))
    return chunk + list(presents[0])


def export_graph(wrapper, calls, presents, feeds, layout, axes, path: Path, reference, tolerance: dict):
    """The legacy exporter traced on a decode step, else dynamo; each graph is verified on every step."""
    past_names, present_names = cache_names(layout, "past_key_values"), cache_names(layout, "present")
    dynamic = {name: {0: "batch", 1: "sequence"} for name in feeds}
    if "attention_mask" in dynamic:
        dynamic["attention_mask"] = {0: "batch", 1: "total_sequence"}
    for name, axis in zip(past_names, axes):
        dynamic[name] = {0: "batch", axis: "past_sequence"}
    for name, axis in zip(present_names, axes):
        dynamic[name] = {0: "batch", axis: "total_sequence"}
    dynamic["logits"] = {0: "batch", 1: "sequence"}
    example = tuple(chunk_example(calls, presents, feeds))
    names = list(feeds) + past_names
    errors = {}
    for exporter in ("legacy", "dynamo"):
        try:
            with torch.no_grad():
                if exporter == "legacy":
                    torch.onnx.export(wrapper, example, str(path), dynamo=False, input_names=names,
                                      output_names=["logits"] + present_names, dynamic_axes=dynamic, opset_version=17)
                else:
                    dims = tuple({axis: torch.export.Dim.AUTO for axis in dynamic[n]} for n in names)
                    with ex._env("TRANSFORMERS_DISABLE_TORCH_CHECK", "1"):
                        program = torch.onnx.export(wrapper, example, dynamo=True, input_names=names,
                                                    output_names=["logits"] + present_names, dynamic_shapes=(dims,),
                                                    opset_version=18, external_data=False)
                    program.save(str(path), external_data=False)
                    ex.tidy_dynamo_graph(path, names, dynamic)
            verify(path, calls, presents, feeds, axes, names, reference, tolerance)
            return exporter, errors, past_names, present_names
        except Exception as error:  # noqa: BLE001 - every exporter's error is kept
            errors[exporter] = ex._error_line(error)
            path.unlink(missing_ok=True)
    raise RuntimeError("; ".join(f"{k} exporter: {v}" for k, v in errors.items()))


def verify(path: Path, calls, presents, feeds, axes, names, reference, tolerance: dict) -> None:
    """onnxruntime's CPU provider runs the loop with its own cache; each step's last-position
    logits must match PyTorch's as the Rust check's float32 bound does."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    past = None
    for step in range(len(calls)):
        inputs = step_inputs(calls, presents, feeds, axes, step)
        values = [t.numpy() for t in inputs[: len(feeds)]] + (past if past is not None else [t.numpy() for t in inputs[len(feeds):]])
        out = session.run(None, dict(zip(names, values)))
        past = out[1:]
        got, want = out[0][:, -1, :].astype(np.float64), reference[step].numpy().astype(np.float64)
        bad = ~(np.abs(got - want) <= tolerance["abs"] + tolerance["rel"] * np.abs(want))
        if bad.any():
            raise RuntimeError(f"onnxruntime's logits differ from PyTorch's at step {step}: {int(bad.sum())} of {want.size} "
                               f"elements outside abs {tolerance['abs']} + rel {tolerance['rel']} (max abs error {np.abs(got - want).max():.3e})")


def export(job: dict) -> None:
    spec, seed = job["spec"], int(job.get("seed", 0))
    out_dir = Path(job["out_dir"])
    tmp = out_dir.with_name(f"{out_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model, config = build(spec, seed)
    ids, mask, pad = prompts(config, seed)
    sequences, reference, calls = reference_generate(model, ids, mask, pad, seed)
    feeds = [k for k in calls[0] if k != "past_key_values"]
    if any(set(c) != set(calls[0]) for c in calls):
        raise RuntimeError(f"generate() fed the model different tensors across steps: {[sorted(c) for c in calls]}")
    presents, layout = replay(model, calls, feeds)
    axes = sequence_axes(presents)
    wrapper = CachedDecoder(model, config, feeds, layout).eval()
    exporter, errors, past_names, present_names = export_graph(wrapper, calls, presents, feeds, layout, axes, tmp / "decoder.onnx",
                                                               reference, job.get("tolerance") or ex.DEFAULT_TOLERANCE)
    references = ex.save_npy_dir(tmp / "reference", {str(step): logits for step, logits in enumerate(reference)})
    steps = [{"feeds": ex.save_npy_dir(tmp / "steps" / str(step), {k: call[k] for k in feeds}), "reference": references[step]}
             for step, call in enumerate(calls)]
    past = [{"input": p, "output": o, "empty_shape": [0 if d == axis else n for d, n in enumerate(t.shape)],
             "sequence_axis": axis, "dtype": str(t.dtype).removeprefix("torch.")}
            for p, o, t, axis in zip(past_names, present_names, presents[0], axes)]
    meta = {
        "model_type": spec["model_type"],
        "source": "tiny-random",
        "class": type(model).__name__,
        "seed": seed,
        "cache_key": job.get("cache_key"),
        "exporter": {"name": exporter, "version": GENERATION_EXPORTER_VERSION, "fallback_errors": errors},
        "versions": ex.library_versions(),
        "graph": "decoder.onnx",
        "logits": "logits",
        "feeds": feeds,
        "past": past,
        "steps": steps,
        "prompt_lengths": list(PROMPT_LENGTHS),
        "pad_token_id": pad,
        "sequences": sequences.tolist(),
        "integer_nodes": ex.integer_nodes(tmp / "decoder.onnx"),
        "sampling": {"do_sample": True, "top_k": 0, "top_p": 1.0, "temperature": 1.0, "seed": seed, "new_tokens": NEW_TOKENS},
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)


def main() -> int:
    import argparse
    import traceback

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec-json", help="a spec as gen show --json prints it")
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
