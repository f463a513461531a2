#!/usr/bin/env bash
# promptfoo and promptlab side by side on the same mock Gemini
# (examples/mock_gemini.rs, answering at once): by default 1,008 one-call cases each
# (24 claims × 7 questions × 6 samples; promptlab's benches/eval-1000-model.yaml),
# 16 at a time, no cache, nothing written by promptfoo (`--no-write`). Prints
# each one's CPU and peak memory and the ratios (BENCHMARKS.md, issue #31).
#   cargo build --release --bin promptlab --example mock_gemini
#   (install promptfoo as BENCHMARKS.md says), then: benches/promptfoo/side-by-side.sh
# RUNS_ON=DIR puts promptlab's runs folder in a fresh folder under DIR (default: the
# system's temporary folder), e.g. /dev/shm to leave the disk out; PROMPTLAB_BIN=PATH
# runs another build of promptlab (an A/B); ROUNDS=N runs the pair N times, promptfoo then
# promptlab in each round (default 1), and prints each round's ratio and, over the rounds,
# the median and quartiles. CPU is read to the microsecond (benches/rusage.c): promptlab's
# whole run is about 0.1 s. A round in which either side did not pass all its cases stops
# the script (exit 1).
# SAMPLES="N M ..." asks each case N times instead of 6 (168 × N cases a side), one size
# after the other in each round: with two sizes, e.g. SAMPLES="6 60" (1,008 and 10,080
# cases), it also prints what a case costs each side beyond its start-up (the difference
# of the medians over the difference in cases), the cost a much longer run approaches.
# Every round's logs are kept until the end: a 3 GB ext4 image has ~196,000 inodes.
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
sizes=(${SAMPLES:-6})
for samples in "${sizes[@]}"; do
    if ! [[ $samples =~ ^[1-9][0-9]*$ ]]; then
        echo "SAMPLES: $samples is not a whole number of samples (1 or more)" >&2
        exit 2
    fi
done
if [ "$(printf '%s\n' "${sizes[@]}" | sort -u | wc -l)" -ne "${#sizes[@]}" ]; then
    echo "SAMPLES: a size is given twice (${sizes[*]})" >&2
    exit 2
fi
for samples in "${sizes[@]}"; do
    sed "s/^repeats: 6$/repeats: $samples/" benches/eval-1000-model.yaml > "$work/suite-$samples.yaml"
done
python3 - "$work" "$base" "${sizes[@]}" <<'PY'
import json, sys
work, base = sys.argv[1], sys.argv[2]
for samples in map(int, sys.argv[3:]):
    claims = [f"CLM-{i:02d}" for i in range(24)]
    questions = ["What is the excess?", "Summarise the claim.", "Build a timeline.", "Is this covered?",
                 "Is the reserve right?", "What next?", "Show me the coverage."]
    tests = [{"vars": {"claim": c, "question": q, "sample": s}}
             for c in claims for q in questions for s in range(1, samples + 1)]
    config = {
        "description": f"{len(tests)} one-call cases against the mock Gemini",
        "prompts": ["You are a claims handler's assistant. Claim {{claim}}. {{question}} (sample {{sample}})"],
        "providers": [{"id": "google:gemini-3.1-flash-lite", "config": {"apiBaseUrl": base}}],
        "defaultTest": {"assert": [{"type": "icontains", "value": "excess"}]},
        "tests": tests,
    }
    json.dump(config, open(f"{work}/promptfooconfig-{samples}.json", "w"))
PY
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$work/pf-home" GEMINI_API_KEY=bench
rounds=${ROUNDS:-1}
# One size of one round: promptfoo, then promptlab; a line of figures appended to $work/rounds.
run_pair() {
    local round=$1 samples=$2 cases=$((168 * $2))
    "$work/rusage" "$work/pf.time" \
        benches/promptfoo/node_modules/.bin/promptfoo eval -c "$work/promptfooconfig-$samples.json" \
        --no-write --no-cache -j 16 --no-table --no-progress-bar > "$work/pf.out" 2>&1 || true
    runs=$(mktemp -d "${RUNS_ON:-${TMPDIR:-/tmp}}/side-by-side-runs-XXXXXX")
    runs_folders+=("$runs")
    GEMINI_BASE_URL=$base "$work/rusage" "$work/pl.time" \
        "${PROMPTLAB_BIN:-target/release/promptlab}" --runs-dir "$runs" eval "$work/suite-$samples.yaml" -j 16 -q \
        > "$work/pl.out" 2>&1 || true
    echo "round $round of $rounds, $cases cases"
    grep -E "Successes|Failures|passed|Pass Rate" "$work/pf.out" | tail -3 || true
    tail -1 "$work/pl.out"
    # A side that failed would give a ratio of nothing: no round counts unless both passed.
    if ! grep -Eq "Successes: $cases\b" "$work/pf.out" || ! tail -1 "$work/pl.out" | grep -q "^$cases turns: $cases passed"; then
        echo "round $round: a side did not pass all $cases cases; see above" >&2
        exit 1
    fi
    read -r pu ps pw pm < "$work/pf.time"
    read -r lu ls lw lm < "$work/pl.time"
    echo "$cases $pu $ps $pm $lu $ls $lm" >> "$work/rounds"
    awk -v n="$cases" -v pu="$pu" -v ps="$ps" -v pw="$pw" -v pm="$pm" -v lu="$lu" -v ls="$ls" -v lw="$lw" -v lm="$lm" 'BEGIN {
        printf "promptfoo: user=%.3fs sys=%.3fs wall=%.2fs peak_rss=%.1fMB cpu_per_case=%.2fms\n", pu, ps, pw, pm / 1024, (pu + ps) * 1000 / n
        printf "promptlab: user=%.3fs sys=%.3fs wall=%.2fs peak_rss=%.1fMB cpu_per_turn=%.3fms\n", lu, ls, lw, lm / 1024, (lu + ls) * 1000 / n
        printf "ratio promptfoo/promptlab: CPU %.1fx, peak memory %.1fx\n", (pu + ps) / (lu + ls), pm / lm }'
}
for round in $(seq "$rounds"); do
    for samples in "${sizes[@]}"; do run_pair "$round" "$samples"; done
done
echo "mock answered $(curl -s "$base/count") requests"
python3 - "$work/rounds" <<'PY'
import statistics, sys
rounds = {}
for line in open(sys.argv[1]):
    cases, pu, ps, pm, lu, ls, lm = map(float, line.split())
    rounds.setdefault(int(cases), []).append((pu + ps, lu + ls, pm / 1024, lm / 1024))
def spread(values, unit):
    if len(values) < 2:
        return f"{values[0]:.4g}{unit}"
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return f"median {median:.4g}{unit} (q1-q3 {q1:.4g}-{q3:.4g}, {min(values):.4g}-{max(values):.4g} over {len(values)})"
for cases, rows in sorted(rounds.items()):
    print(f"{cases} cases: promptfoo {spread([r[0] * 1000 / cases for r in rows], ' ms a case')}, "
          f"peak {statistics.median(r[2] for r in rows):.0f} MB")
    print(f"{cases} cases: promptlab {spread([r[1] * 1000 / cases for r in rows], ' ms a turn')}, "
          f"peak {statistics.median(r[3] for r in rows):.1f} MB")
    print(f"{cases} cases: CPU ratio {spread([r[0] / r[1] for r in rows], 'x')}")
if len(rounds) > 1:
    (small, first), (large, last) = min(rounds.items()), max(rounds.items())
    def beyond(side):
        a, b = (statistics.median(r[side] for r in rows) for rows in (first, last))
        per_case = (b - a) / (large - small)
        return per_case, a - per_case * small
    (pf_case, pf_start), (pl_case, pl_start) = beyond(0), beyond(1)
    print(f"beyond start-up ({small} to {large} cases, medians): promptfoo {pf_case * 1000:.3f} ms a case "
          f"(start-up {pf_start:.2f} s), promptlab {pl_case * 1000:.4f} ms a turn (start-up {pl_start:.3f} s): "
          f"{pf_case / pl_case:.1f}x")
PY
