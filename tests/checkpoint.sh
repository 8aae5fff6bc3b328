#!/usr/bin/env bash
# `gen fixtures --checkpoint`: a fixture from a saved pretrained BERT folder
# (config.json, weights, tokenizer files, as in the HF cache), then bert's cpu
# cell against it. There is no hub here, so the folder is made with
# save_pretrained from a BERT with a real WordPiece tokenizer trained on a few
# sentences: the same files a downloaded checkpoint has.
#   usage: tests/checkpoint.sh   (after tests/run.sh has built the venv)
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${HWMATRIX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hwmatrix}"
python="${HWMATRIX_PYTHON:-$cache/venv/bin/python}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" - "$work/bert-checkpoint" <<'PY'
import sys, torch, transformers
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
out = sys.argv[1]
text = ["Hardware matrices tell maintainers where their models really run.",
        "A short sentence.", "The second sentence of this batch is a good deal longer than the first one is."]
tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
tok.normalizer = normalizers.BertNormalizer(lowercase=True)
tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
tok.train_from_iterator(text, trainers.WordPieceTrainer(vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
fast = transformers.BertTokenizerFast(tokenizer_object=tok)
fast.save_pretrained(out)
torch.manual_seed(1)
config = transformers.BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
transformers.BertModel(config).save_pretrained(out)
print(f"checkpoint folder {out}")
PY
export HWMATRIX_FIXTURES="$work/fixtures" HWMATRIX_RESULTS="$work/results"
cargo run --quiet --locked -p generator --bin gen -- fixtures --model bert --checkpoint "$work/bert-checkpoint"
grep -o '"source": "[^"]*"' "$HWMATRIX_FIXTURES/bert/meta.json"
cargo test --quiet --locked -p generated --features torch text_encoders::bert::cpu:: 2>&1 | tail -3
grep -c '"status":"passed"' "$HWMATRIX_RESULTS"/*.jsonl | sed 's/^/records passed: /'
