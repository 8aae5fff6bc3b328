"""Which int8 recipe keeps a real sentence encoder's embeddings: the settings the ecosystem's
converters use, each applied to one float32 graph with ONNX Runtime's `quantize_dynamic`, and
judged as the encoder's users judge it (mean-pooled sentence embeddings against float32's:
worst and mean cosine, nearest neighbours changed) and as our checks do (the worst token's
cosine, the relative L2 error of the hidden states).

    python int8_recipes.py <checkpoint folder> <its float32 model.onnx>

The checkpoint folder gives the tokenizer (tokenizer.json); the graph is the fixture
`gen fixtures --model bert --checkpoint <folder>` exported (inputs input_ids, attention_mask,
token_type_ids; first output the last hidden state). Prints a Markdown table
(docs/quantization.md keeps one).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

SENTENCES = [
    "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
    "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.", "The new movie is awesome for learning about hardware.",
]


def recipes():
    from onnxruntime.quantization import QuantType

    return {
        "per channel, int8 symmetric (our recipe: the weights of optimum's avx512_vnni preset)": dict(weight_type=QuantType.QInt8, per_channel=True),
        "per channel, uint8 asymmetric (quantize_dynamic with QUInt8)": dict(weight_type=QuantType.QUInt8, per_channel=True),
        "per channel, int8 asymmetric": dict(weight_type=QuantType.QInt8, per_channel=True, extra_options={"WeightSymmetric": False}),
        "per channel, uint8 symmetric (the weights of optimum's avx2 preset)": dict(weight_type=QuantType.QUInt8, per_channel=True, extra_options={"WeightSymmetric": True}),
        "per channel, int8 symmetric, reduce_range": dict(weight_type=QuantType.QInt8, per_channel=True, reduce_range=True),
        "per channel, int8 symmetric, MatMul only (embeddings float32)": dict(weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]),
        "per tensor, int8 symmetric (transformers.js q8 without convolutions)": dict(weight_type=QuantType.QInt8, per_channel=False),
        "per tensor, uint8 asymmetric (transformers.js q8 with convolutions)": dict(weight_type=QuantType.QUInt8, per_channel=False),
    }


def main(checkpoint: Path, model: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import quantize_dynamic
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(checkpoint / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0)
    encoded = tokenizer.encode_batch(SENTENCES)
    ids = np.array([e.ids for e in encoded], np.int64)
    mask = np.array([e.attention_mask for e in encoded], np.int64)

    def run(path: Path):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, {i.name: feed[i.name] for i in session.get_inputs()})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(1) / weights.sum(1)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True), hidden

    def neighbours(embeddings):
        similarity = embeddings @ embeddings.T
        np.fill_diagonal(similarity, -np.inf)
        return similarity.argmax(1)

    reference, hidden_reference = run(model)
    tokens = mask.astype(bool)
    print("| recipe | worst cosine | mean cosine | neighbours changed | worst token cosine | relative L2 | MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in recipes().items():
            out = Path(tmp) / "model.int8.onnx"
            quantize_dynamic(str(model), str(out), **settings)
            embeddings, hidden = run(out)
            cosine = (embeddings * reference).sum(1)
            a, b = hidden[tokens], hidden_reference[tokens]
            token_cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            relative_l2 = np.linalg.norm(hidden - hidden_reference) / np.linalg.norm(hidden_reference)
            changed = int((neighbours(embeddings) != neighbours(reference)).sum())
            print(f"| {name} | {cosine.min():.4f} | {cosine.mean():.4f} | {changed} of {len(SENTENCES)} | "
                  f"{token_cosine.min():.4f} | {relative_l2:.3f} | {out.stat().st_size / 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
