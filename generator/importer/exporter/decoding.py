"""A decoder's formats judged as their users use them: greedy generation from a fixed prompt and
the perplexity of a fixed text, each format's graph run on its engine (issue 64).

  python decoding.py JOB.json
      JOB: {"prompt": [token ids], "new_tokens": N, "text": [token ids],
            "graphs": [{"format": ..., "path": model.<format>.onnx or .xml,
                        "engine": "onnxruntime" or "openvino"}, ...]}
      Prints one JSON object per graph: {"format", "kind" (the graph's engine), "engine" (its
      name and version), "tokens", "perplexity", "non_finite"}. "onnxruntime" is ONNX Runtime's CPU provider; "openvino" is OpenVINO's
      runtime on CPU (an .onnx graph or NNCF's .xml) in float32 inference precision (its
      default is bf16 on CPUs with AMX or AVX-512 BF16, which would judge bf16, not the
      format); each with the threads of the Rust cells (one).

Numpy and the engine only (no torch, no transformers): OpenVINO's runtime venv runs it too.
Greedy generation runs the graph the cells check (no cache) over the whole sequence at each step,
so a token depends only on the tokens before it, as in generate(). Not part of the fixture
exporter's key (generator/specs/src/fixture_key.rs): nothing it writes is a fixture.
"""

import json
import sys

import numpy as np


def session(path: str, engine: str):
    """A function from feeds to the graph's logits, its engine's name and its input names."""
    if engine == "openvino":
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(path, "CPU", {
            "INFERENCE_PRECISION_HINT": "f32", "EXECUTION_MODE_HINT": "ACCURACY",
            "INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1,
        })
        names = [i.any_name for i in compiled.inputs]
        logits = next((o for o in compiled.outputs if "logits" in o.names), compiled.outputs[0])
        return (lambda feeds: np.asarray(compiled(feeds)[logits])), f"OpenVINO {ov.__version__} CPU", names
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    run = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in run.get_inputs()]
    outputs = [o.name for o in run.get_outputs()]
    logits = "logits" if "logits" in outputs else outputs[0]
    return (lambda feeds: run.run([logits], feeds)[0]), f"ONNX Runtime {ort.__version__} CPUExecutionProvider", names


def feeds(names: list[str], ids: list[int]) -> dict:
    """A decoder's inputs for one row of tokens, attending to all of them."""
    row = np.array([ids], dtype=np.int64)
    given = {"input_ids": row, "attention_mask": np.ones_like(row),
             "position_ids": np.arange(len(ids), dtype=np.int64)[None]}
    missing = [n for n in names if n not in given]
    if missing:
        raise SystemExit(f"error: the graph takes {missing}, which a decoder's generation does not give")
    return {n: given[n] for n in names}


def non_finite(logits: np.ndarray, where: str) -> str | None:
    bad = ~np.isfinite(logits)
    return f"{int(bad.sum())} non-finite logits {where}" if bad.any() else None


def perplexity(logits: np.ndarray, text: list[int]) -> float | None:
    """exp of the mean negative log-probability of each token of `text` given the ones before it
    (`logits`: [len(text), vocab], position i predicting token i + 1); None when not finite."""
    shifted = logits[:-1] - logits[:-1].max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    nll = -log_probs[np.arange(len(text) - 1), text[1:]].mean()
    return float(np.exp(nll)) if np.isfinite(nll) else None


def judge(job: dict, graph: dict) -> dict:
    run, engine, names = session(graph["path"], graph["engine"])
    tokens, seen = list(job["prompt"]), None
    for step in range(job["new_tokens"]):
        logits = run(feeds(names, tokens))[0, -1].astype(np.float64)
        seen = seen or non_finite(logits, f"at generation step {step}")
        tokens.append(int(np.argmax(logits)))
    text = job["text"]
    logits = run(feeds(names, text))[0].astype(np.float64)
    seen = seen or non_finite(logits, "on the perplexity text")
    return {"format": graph["format"], "kind": graph["engine"], "engine": engine, "tokens": tokens[len(job["prompt"]):],
            "perplexity": perplexity(logits, text), "non_finite": seen}


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as file:
        job = json.load(file)
    for graph in job["graphs"]:
        print(json.dumps(judge(job, graph)), flush=True)


if __name__ == "__main__":
    main()
