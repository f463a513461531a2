#!/usr/bin/env bash
# 250 one-call cases at `-j 32` against a stand-in OpenAI-compatible server
# that answers each call in 1.0 s and allows 10 requests a second (token
# bucket; beyond it 429 + Retry-After: 1): errored turns, wall against the
# quota's ideal (250 / 10 = 25 s), 429s provoked (BENCHMARKS.md, issue #67).
# Then a spent quota: PER_DAY=100 answers 100 calls and refuses the rest.
#   cargo build --release --example quota_server && cargo build --release
#   benches/quota.sh            # the rate run
#   PER_DAY=100 benches/quota.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PROMPTLAB_BIN:-target/release/promptlab}
port=${PORT:-18467}
dir=$(mktemp -d /tmp/bench-quota-XXXXXX)
suite=$dir/suite.yaml
{
    printf 'name: quota\nclaims: {ids: [CLM-HH-0001]}\ndefaults: {today: 2026-11-30}\ncases:\n'
    for i in $(seq 1 250); do
        printf '  - {name: c%03d, message: "What is the excess? (%d)", expect: {answerContains: excess}}\n' "$i" "$i"
    done
} > "$suite"
target/release/examples/quota_server "$port" 1000 10 ${PER_DAY:-} 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/count" >/dev/null && break; sleep 0.1; done
start=$(date +%s.%N)
set +e
OPENAI_BASE_URL=http://127.0.0.1:$port/v1 PROMPTLAB_RUNS_DIR=$dir/runs "$bin" eval "$suite" \
    --provider openai --model stand-in -j 32 --no-cache --format ndjson > "$dir/out.ndjson" 2> "$dir/err.txt"
code=$?
set -e
end=$(date +%s.%N)
wall=$(echo "$end - $start" | bc)
echo "exit $code · wall ${wall}s (ideal 25 s: $(echo "scale=2; $wall / 25" | bc)×)"
tail -1 "$dir/out.ndjson" | python3 -c 'import json,sys; s=json.load(sys.stdin); v=s["variants"][0]; print("passed", v.get("passed"), "errors", v.get("errors"), "notRun", s.get("notRun"))'
curl -s "http://127.0.0.1:$port/count"
