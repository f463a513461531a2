#!/usr/bin/env bash
# Two eval runs A and B of about TURNS one-call scripted turns each (24
# claims × one case × repeats, `-j 8`) into one runs folder, then the
# history commands over them: `compare A B`, `evals list`, `evals show A`
# — wall and peak RSS, the median of 5 runs each — and the first `evals
# list` after the second eval against the next (BENCHMARKS.md, issue #65).
#   cargo build --release && gcc -O2 -o /tmp/rusage benches/rusage.c
#   benches/history-scale.sh 1000     # or 10000, 100000, 1000000; a fresh runs folder may follow
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:?usage: benches/history-scale.sh TURNS [RUNS_DIR]}
# A fresh folder, never one just emptied (see benches/scale.sh).
dir=${2:-$(mktemp -d /tmp/bench-history-XXXXXX)}
bin=${PROMPTLAB_BIN:-target/release/promptlab}
rusage=${RUSAGE:-/tmp/rusage}
per_claim=$(( (turns + 23) / 24 ))
suite=$(mktemp --suffix .yaml)
printf 'name: scale\nclaims: {all: true}\ndefaults: {today: 2026-11-30, expect: {noError: true}}\nrepeats: %d\ncases:\n  - {name: excess, message: What is the excess?, script: %s/benches/one-call.yaml}\n' \
    "$per_claim" "$PWD" > "$suite"
figures() { awk '{printf "%.3f s, %.1f MB", $3, $4 / 1024}' "$1"; }
for id in ev-aaaaaaaaaa ev-bbbbbbbbbb; do
    "$rusage" "$suite.time" "$bin" --runs-dir "$dir" eval "$suite" --provider script -j 8 --quiet \
        --eval-run "$id" > /dev/null || true
    echo "eval $id ($((per_claim * 24)) turns): $(figures "$suite.time")"
done
for which in first second; do
    "$rusage" "$suite.time" "$bin" --runs-dir "$dir" evals list > /dev/null
    echo "evals list, the $which query after the eval: $(figures "$suite.time")"
done
measure() {
    local name=$1
    shift
    for _ in 1 2 3 4 5; do
        "$rusage" "$suite.time" "$bin" --runs-dir "$dir" "$@" > /dev/null
        cat "$suite.time"
    done | sort -n -k3 | awk -v name="$name" 'NR == 3 {printf "%s: %.3f s, %.1f MB (median of 5)\n", name, $3, $4 / 1024}'
}
measure "compare A B" compare ev-aaaaaaaaaa ev-bbbbbbbbbb
measure "compare A B --format json" compare ev-aaaaaaaaaa ev-bbbbbbbbbb --format json
measure "evals list" evals list
measure "evals show A" evals show ev-aaaaaaaaaa
rm -f "$suite" "$suite.time"
echo "runs folder: $dir (delete it when done, not just before the next run)"
