#!/usr/bin/env bash
# A one-call scripted suite of about TURNS turns (24 claims × one case ×
# repeats), `-j 8`, release build: peak memory, CPU and bytes per turn
# (BENCHMARKS.md, issue #31).
#   cargo build --release
#   benches/scale.sh 1000        # or 10000, 100000; a fresh runs folder may follow
#   PROMPTLAB_BIN=/tmp/old/promptlab benches/scale.sh 10000   # another build, for an A/B
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:?usage: benches/scale.sh TURNS [RUNS_DIR]}
# A fresh folder, never one just emptied: on ext4 without a journal (this
# machine's), creating files right after many were deleted scans past the
# deleted inodes for minutes, and that would be measured (BENCHMARKS.md).
dir=${2:-$(mktemp -d /tmp/bench-scale-XXXXXX)}
repeats=$(( (turns + 23) / 24 ))
suite=$(mktemp --suffix .yaml)
cat > "$suite" <<SUITE
name: scale
claims: {all: true}
defaults: {today: 2026-11-30, expect: {noError: true}}
repeats: $repeats
cases:
  - {name: excess, message: What is the excess?, script: $PWD/benches/one-call.yaml}
SUITE
ran=$((repeats * 24))
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
