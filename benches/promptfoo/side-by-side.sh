#!/usr/bin/env bash
# promptfoo and promptlab side by side on the same mock Gemini
# (examples/mock_gemini.rs, answering at once): 1,008 one-call cases each
# (24 claims × 7 questions × 6 samples; promptlab's benches/eval-1000-model.yaml),
# 16 at a time, no cache, nothing written by promptfoo (`--no-write`). Prints
# each one's CPU and peak memory and the ratios (BENCHMARKS.md, issue #31).
#   cargo build --release --bin promptlab --example mock_gemini
#   (install promptfoo as BENCHMARKS.md says), then: benches/promptfoo/side-by-side.sh
# RUNS_ON=DIR puts promptlab's runs folder in a fresh folder under DIR (default: the
# system's temporary folder), e.g. /dev/shm to leave the disk out; PROMPTLAB_BIN=PATH
# runs another build of promptlab (an A/B); ROUNDS=N runs the pair N times, promptfoo then
# promptlab in each round (default 1), and prints each round's ratio and their median. CPU
# is read to the microsecond (benches/rusage.c): promptlab's whole run is about 0.1 s. A
# round in which either side did not pass all 1,008 cases stops the script (exit 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
target/release/examples/mock_gemini 0 0 > "$work/mock.out" 2>"$work/mock.err" &
mock=$!
# Every round's runs folder is kept until the end: on an ext4 without a journal, creating
# a file scans past the inodes deleted in the last minutes (BENCHMARKS.md), so a round
# that followed the deletion of the last one's 1,008 logs would measure that deletion.
runs_folders=()
trap 'kill $mock 2>/dev/null || true; rm -rf "$work" "${runs_folders[@]}"' EXIT
gcc -O2 -o "$work/rusage" benches/rusage.c
for _ in $(seq 100); do grep -q listening "$work/mock.out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/^listening on //p' "$work/mock.out")
python3 - "$work" "$base" <<'PY'
import json, sys
work, base = sys.argv[1], sys.argv[2]
claims = [f"CLM-{i:02d}" for i in range(24)]
questions = ["What is the excess?", "Summarise the claim.", "Build a timeline.", "Is this covered?",
             "Is the reserve right?", "What next?", "Show me the coverage."]
tests = [{"vars": {"claim": c, "question": q, "sample": s}}
         for c in claims for q in questions for s in range(1, 7)]
config = {
    "description": "1,008 one-call cases against the mock Gemini",
    "prompts": ["You are a claims handler's assistant. Claim {{claim}}. {{question}} (sample {{sample}})"],
    "providers": [{"id": "google:gemini-3.1-flash-lite", "config": {"apiBaseUrl": base}}],
    "defaultTest": {"assert": [{"type": "icontains", "value": "excess"}]},
    "tests": tests,
}
json.dump(config, open(f"{work}/promptfooconfig.json", "w"))
PY
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$work/pf-home" GEMINI_API_KEY=bench
rounds=${ROUNDS:-1}
for round in $(seq "$rounds"); do
    "$work/rusage" "$work/pf.time" \
        benches/promptfoo/node_modules/.bin/promptfoo eval -c "$work/promptfooconfig.json" \
        --no-write --no-cache -j 16 --no-table --no-progress-bar > "$work/pf.out" 2>&1 || true
    runs=$(mktemp -d "${RUNS_ON:-${TMPDIR:-/tmp}}/side-by-side-runs-XXXXXX")
    runs_folders+=("$runs")
    GEMINI_BASE_URL=$base "$work/rusage" "$work/pl.time" \
        "${PROMPTLAB_BIN:-target/release/promptlab}" --runs-dir "$runs" eval benches/eval-1000-model.yaml -j 16 -q \
        > "$work/pl.out" 2>&1 || true
    echo "round $round of $rounds"
    grep -E "Successes|Failures|passed|Pass Rate" "$work/pf.out" | tail -3 || true
    tail -1 "$work/pl.out"
    # A side that failed would give a ratio of nothing: no round counts unless both passed.
    if ! grep -q "Successes: 1008" "$work/pf.out" || ! tail -1 "$work/pl.out" | grep -q "^1008 turns: 1008 passed"; then
        echo "round $round: a side did not pass all 1,008 cases; see above" >&2
        exit 1
    fi
    read -r pu ps pw pm < "$work/pf.time"
    read -r lu ls lw lm < "$work/pl.time"
    awk -v pu="$pu" -v ps="$ps" -v pw="$pw" -v pm="$pm" -v lu="$lu" -v ls="$ls" -v lw="$lw" -v lm="$lm" 'BEGIN {
        printf "promptfoo: user=%.3fs sys=%.3fs wall=%.2fs peak_rss=%.1fMB cpu_per_case=%.2fms\n", pu, ps, pw, pm / 1024, (pu + ps) * 1000 / 1008
        printf "promptlab: user=%.3fs sys=%.3fs wall=%.2fs peak_rss=%.1fMB cpu_per_turn=%.3fms\n", lu, ls, lw, lm / 1024, (lu + ls) * 1000 / 1008
        printf "ratio promptfoo/promptlab: CPU %.1fx, peak memory %.1fx\n", (pu + ps) / (lu + ls), pm / lm }' | tee -a "$work/ratios"
done
echo "mock answered $(curl -s "$base/count") requests"
if [ "$rounds" -gt 1 ]; then
    sed -n 's/^ratio promptfoo\/promptlab: CPU \([0-9.]*\)x, peak memory \([0-9.]*\)x$/\1 \2/p' "$work/ratios" |
        sort -n | awk '{ cpu[NR] = $1; all = all " " $1 "x" } END {
            m = (NR % 2) ? cpu[(NR + 1) / 2] : (cpu[NR / 2] + cpu[NR / 2 + 1]) / 2
            printf "CPU ratios over %d rounds:%s; median %.1fx\n", NR, all, m }'
fi
