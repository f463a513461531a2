#!/usr/bin/env bash
# A one-call scripted suite of about TURNS turns (24 claims × one case ×
# repeats), `-j 8`, release build: peak memory, CPU and bytes per turn
# (BENCHMARKS.md, issue #31).
#   cargo build --release
#   benches/scale.sh 1000        # or 10000, 100000; a fresh runs folder may follow
#   SHAPE=cases benches/scale.sh 100000   # as many cases as it takes, no repeats:
#                                         # one fold (claim × case) per turn
#   PROMPTLAB_BIN=/tmp/old/promptlab benches/scale.sh 10000   # another build, for an A/B
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:?usage: benches/scale.sh TURNS [RUNS_DIR]}
# A fresh folder, never one just emptied: on ext4 without a journal (this
# machine's), creating files right after many were deleted scans past the
# deleted inodes for minutes, and that would be measured (BENCHMARKS.md).
dir=${2:-$(mktemp -d /tmp/bench-scale-XXXXXX)}
per_claim=$(( (turns + 23) / 24 ))
suite=$(mktemp --suffix .yaml)
if [ "${SHAPE:-repeats}" = cases ]; then
    repeats=1 cases=$per_claim
else
    repeats=$per_claim cases=1
fi
{
    printf 'name: scale\nclaims: {all: true}\ndefaults: {today: 2026-11-30, expect: {noError: true}}\n'
    printf 'repeats: %d\ncases:\n' "$repeats"
    for i in $(seq 1 "$cases"); do
        printf '  - {name: excess-%d, message: What is the excess?, script: %s/benches/one-call.yaml}\n' "$i" "$PWD"
    done
} > "$suite"
ran=$((per_claim * 24))
/usr/bin/time -f "%U %S %e %M" -o "$suite.time" \
    "${PROMPTLAB_BIN:-target/release/promptlab}" --runs-dir "$dir" eval "$suite" --provider script -j 8 --quiet >/dev/null
read -r user sys wall rss < "$suite.time"
logs=$(find "$dir" -name '*.ndjson' -printf '%s\n' | awk '{s+=$1} END {print s}')
prompts=$(find "$dir/prompts" -type f -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}')
awk -v n="$ran" -v u="$user" -v s="$sys" -v w="$wall" -v m="$rss" -v l="$logs" -v p="$prompts" 'BEGIN {
    printf "turns=%d user=%.2fs sys=%.2fs wall=%.2fs peak_rss=%.1fMB cpu_per_turn=%.3fms log_bytes_per_turn=%.0f prompt_files_bytes=%d\n",
        n, u, s, w, m / 1024, (u + s) * 1000 / n, l / n, p }'
rm -f "$suite" "$suite.time"
echo "runs folder: $dir (delete it when done, not just before the next run)"
