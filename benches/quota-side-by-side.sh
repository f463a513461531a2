#!/usr/bin/env bash
# promptlab, promptfoo and inspect_ai side by side at a provider's rate
# (issue #67, BENCHMARKS.md): each runs CASES (default 250) one-call cases at
# 32 at once against a fresh examples/quota_server.rs (OpenAI-compatible,
# 1.0 s a call, 10 requests a second, 429 + Retry-After: 1 beyond it).
# Prints each one's wall, its errored cases and the 429s it provoked.
# Installed here, never by CI:
#   (cd benches/promptfoo && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci)
#   python3 -m venv /tmp/inspect-venv && /tmp/inspect-venv/bin/pip install inspect_ai==0.3.285 openai
#   cargo build --release --locked --bin promptlab --example quota_server
#   benches/quota-side-by-side.sh      # INSPECT_VENV=DIR for another venv
set -uo pipefail
cd "$(dirname "$0")/.."
cases=${CASES:-250}
port=${PORT:-18469}
venv=${INSPECT_VENV:-/tmp/inspect-venv}
work=$(mktemp -d); [ -n "${KEEP:-}" ] && echo "work folder: $work"
server=
trap 'kill $server 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fresh_server() {
    [ -n "$server" ] && kill $server 2>/dev/null && wait $server 2>/dev/null
    target/release/examples/quota_server "$port" 1000 10 2>/dev/null &
    server=$!
    for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/count" >/dev/null && return; sleep 0.1; done
}
provoked() { curl -s "http://127.0.0.1:$port/count" | awk '{print "answered " $2 ", 429s " $4}'; }
# timed OUT CMD…: runs CMD with its output into OUT; says its exit and wall.
timed() {
    local out=$1 start code
    shift
    start=$(date +%s.%N)
    "$@" > "$out" 2>&1
    code=$?
    echo "exit $code · wall $(echo "$(date +%s.%N) - $start" | bc | cut -c1-6) s"
}

# promptlab
{
    printf 'name: quota\nclaims: {ids: [CLM-HH-0001]}\ndefaults: {today: 2026-11-30}\ncases:\n'
    for i in $(seq 1 "$cases"); do
        printf '  - {name: c%03d, message: "What is the excess? (%d)", expect: {answerContains: excess}}\n' "$i" "$i"
    done
} > "$work/suite.yaml"
fresh_server
echo "== promptlab"
timed "$work/promptlab.out" env OPENAI_BASE_URL="http://127.0.0.1:$port/v1" PROMPTLAB_RUNS_DIR="$work/runs" \
    target/release/promptlab eval "$work/suite.yaml" --provider openai --model stand-in \
    -j 32 --no-cache --format ndjson --quiet
grep '"kind":"summary"' "$work/promptlab.out" | python3 -c 'import json,sys; v=json.load(sys.stdin)["variants"][0]; print("errored", v["errors"])'
provoked

# promptfoo
{
    printf 'providers:\n  - id: openai:chat:stand-in\n    config: {apiBaseUrl: "http://127.0.0.1:%s/v1", apiKey: x}\n' "$port"
    printf 'prompts: ["{{question}}"]\ntests:\n'
    for i in $(seq 1 "$cases"); do
        printf '  - vars: {question: "What is the excess? (%d)"}\n    assert: [{type: icontains, value: excess}]\n' "$i"
    done
} > "$work/promptfoo.yaml"
fresh_server
echo "== promptfoo"
(cd benches/promptfoo && timed "$work/promptfoo.out" env PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 \
    PROMPTFOO_CONFIG_DIR="$work/pf" node_modules/.bin/promptfoo eval -c "$work/promptfoo.yaml" \
    --no-cache --no-write -j 32 -o "$work/promptfoo.json")
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["results"]["stats"]; print("errored", s.get("errors"), "· failed", s.get("failures"))' "$work/promptfoo.json" 2>/dev/null || tail -5 "$work/promptfoo.out"
provoked

# inspect_ai
cat > "$work/task.py" <<PY
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

@task
def quota():
    return Task(
        dataset=[Sample(input=f"What is the excess? ({i})", target="excess") for i in range(1, $cases + 1)],
        solver=generate(),
        scorer=includes(),
    )
PY
fresh_server
echo "== inspect_ai"
(cd "$work" && timed "$work/inspect.out" env OPENAI_BASE_URL="http://127.0.0.1:$port/v1" OPENAI_API_KEY=x \
    INSPECT_LOG_DIR="$work/logs" "$venv/bin/inspect" eval task.py --model openai/stand-in \
    --max-connections 32 -M responses_api=false --display none)
"$venv/bin/python" - "$work/logs" <<'PY'
import sys, glob
from inspect_ai.log import read_eval_log
log = read_eval_log(sorted(glob.glob(sys.argv[1] + "/*.eval") + glob.glob(sys.argv[1] + "/*.json"))[-1])
samples = log.samples or []
print("errored", sum(1 for s in samples if s.error), "of", len(samples), "· status", log.status)
PY
provoked
