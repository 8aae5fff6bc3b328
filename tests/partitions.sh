#!/usr/bin/env bash
# Partitioned runs cover the same cells as one run and merge into the same
# report (what gen ci's jobs rely on). Some text encoders' cpu ONNX Runtime
# cells run with cargo-nextest `--partition hash:1/2` and `2/2` under two host
# names, then unpartitioned; then:
#   - the two partitions ran every check of the whole run exactly once (no
#     check missing, none run twice), and
#   - `gen report` over the merged partitions gives every cell the status, and
#     the checks, that the report of the whole run gives.
# Called by tests/run.sh after the set-up (nextest on PATH, fixtures built).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The text encoders from a to c (8 cells, 40 checks): enough for the hash to split
# them, and a few seconds a run rather than the two minutes of all 56, run three times.
filter='test(/^text_encoders::[a-c][a-z0-9_]*::cpu::onnx::/)'
gen() { cargo run --quiet --locked -p generator --bin gen -- "$@"; }
nextest() { cargo nextest run --locked -p generated --features torch --no-fail-fast --test-threads 2 -E "$filter" "$@"; }

for k in 1 2; do
  HWMATRIX_RESULTS="$scratch/parts" HWMATRIX_HOST="part-$k-of-2" HWMATRIX_RUN_ID=partitioned nextest --partition "hash:$k/2"
done
HWMATRIX_RESULTS="$scratch/whole" HWMATRIX_HOST=whole HWMATRIX_RUN_ID=whole nextest

gen results --db "$scratch/parts.sqlite" load "$scratch/parts"
gen results --db "$scratch/whole.sqlite" load "$scratch/whole"
gen report --db "$scratch/parts.sqlite" --format json --out "$scratch/parts-report"
gen report --db "$scratch/whole.sqlite" --format json --out "$scratch/whole-report"

python3 - "$scratch" <<'PY'
import collections, glob, json, sys
scratch = sys.argv[1]

def checks(folder):
    seen = collections.Counter()
    for path in glob.glob(f"{folder}/*.jsonl"):
        for line in open(path):
            r = json.loads(line)
            seen[(r["model"], r["platform"], r["engine_kind"], r["check"], r["precision"])] += 1
    return seen

parts, whole = checks(f"{scratch}/parts"), checks(f"{scratch}/whole")
twice = [k for k, n in parts.items() if n > 1]
assert not twice, f"checks run by both partitions: {twice[:5]}"
assert set(parts) == set(whole), f"partitions missed {sorted(set(whole) - set(parts))[:5]}, added {sorted(set(parts) - set(whole))[:5]}"

def cells(report):
    data = json.load(open(report))
    return {(c["model"], c["platform"], c["engine"]): (c["status"], sorted(r["check"] for r in c["records"]))
            for c in data["cells"] if c["records"]}

a, b = cells(f"{scratch}/parts-report/report.json"), cells(f"{scratch}/whole-report/report.json")
assert a == b, f"the merged partitions' report differs: {[(k, a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)][:5]}"
hosts = json.load(open(f"{scratch}/parts-report/report.json"))["platforms"][0]["hosts"]
assert hosts == ["part-1-of-2", "part-2-of-2"], hosts
print(f"partitions: {len(parts)} checks of {len(a)} cells, each run once by one of 2 partitions (hosts {', '.join(hosts)}); "
      f"the merged report equals the unpartitioned run's cell by cell")
PY
