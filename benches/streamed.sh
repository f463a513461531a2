#!/usr/bin/env bash
# A real model's streamed answer: log bytes and CPU a turn for a TOKENS-token
# answer streamed in TOKENS chunks at RATE tokens a second, against
# examples/paced_openai.rs (an OpenAI-compatible stand-in) — BENCHMARKS.md,
# issue #66. An eval of TURNS one-call turns at `-j 16`, its CPU measured by
# benches/rusage.c and divided by the turns, so that the process's start is
# shared out; `FORMAT=ndjson` (default) writes each log as `chat` and `serve`
# do (flushed as it goes), `FORMAT=quiet` as a quiet eval does (batched).
#   cargo build --release --locked --bin promptlab --example paced_openai
#   gcc -O2 -o /tmp/rusage benches/rusage.c
#   benches/streamed.sh                   # 200 tokens at 100/s, 64 turns
#   RATE=0 benches/streamed.sh            # the same tokens all at once
#   PROMPTLAB_BIN=/tmp/main/promptlab benches/streamed.sh   # another build
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PROMPTLAB_BIN:-target/release/promptlab}
rusage=${RUSAGE:-/tmp/rusage}
tokens=${TOKENS:-200} rate=${RATE:-100} turns=${TURNS:-64} port=${PORT:-18466}
dir=$(mktemp -d /tmp/bench-streamed-XXXXXX)
suite=$dir/suite.yaml
{
    printf 'name: streamed\nclaims: {ids: [CLM-HH-0001]}\ndefaults: {today: 2026-11-30, expect: {noError: true}}\ncases:\n'
    for i in $(seq 1 "$turns"); do
        printf '  - {name: c%03d, message: "What is the excess? (%d)"}\n' "$i" "$i"
    done
} > "$suite"
target/release/examples/paced_openai "$port" "$tokens" "$rate" 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done
case ${FORMAT:-ndjson} in
    ndjson) format=(--format ndjson) ;;
    quiet) format=(--quiet) ;;
esac
OPENAI_BASE_URL=http://127.0.0.1:$port/v1 "$rusage" "$dir/usage" "$bin" --runs-dir "$dir/runs" \
    eval "$suite" --provider openai --model stand-in -j 16 --no-cache "${format[@]}" > "$dir/out" 2> "$dir/err"
read -r user sys wall rss < "$dir/usage"
logs=$(find "$dir/runs" -name '*.ndjson' -printf '%s\n' | awk '{s+=$1; n++} END {print s, n}')
awk -v u="$user" -v s="$sys" -v w="$wall" -v m="$rss" -v l="$logs" -v t="$turns" 'BEGIN {
    split(l, f, " ")
    printf "turns=%d logs=%d wall=%.2fs cpu_per_turn=%.3fms log_bytes_per_turn=%.0f peak_rss=%.1fMB\n",
        t, f[2], w, (u + s) * 1000 / t, f[1] / f[2], m / 1024 }'
echo "runs folder: $dir/runs (one log: $(find "$dir/runs" -name '*.ndjson' | head -1))"
