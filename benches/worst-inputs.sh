#!/usr/bin/env bash
# Issue #12: how long, and how much memory, promptlab takes to refuse the
# worst inputs. Generates them under $1 (default /tmp/promptlab-worst), never
# in the repository, then runs the release binary on each under
# /usr/bin/time -v. Figures are recorded in BENCHMARKS.md.
#
#   cargo build --release
#   benches/worst-inputs.sh [DIR]
set -euo pipefail
dir=${1:-/tmp/promptlab-worst}
bin=${PROMPTLAB:-target/release/promptlab}
mkdir -p "$dir"

python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
base = {"id": "BIG-1", "lineOfBusiness": "Household", "status": "open",
        "policy": {"number": "P-1", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
        "incident": {"date": "2024-03-02", "description": "Leak"}}
head = ("id: BIG-1\nlineOfBusiness: Household\nstatus: open\n"
        "policy: {number: P-1, periodStart: 2024-01-01, periodEnd: 2024-12-31}\n"
        "incident: {date: 2024-03-02, description: Leak}\n")
# The nesting sits in an unknown field, which a claim keeps (SPEC §3).
open(f"{d}/deep-flow.yaml", "w").write(head + "extra: " + "[" * 100_000 + "\n")
open(f"{d}/deep-block.yaml", "w").write(head + "extra:\n  " + "- " * 100_000 + "x\n")
open(f"{d}/deep.json", "w").write(json.dumps(base)[:-1] + ', "extra": ' + "[" * 100_000)
lines = [head.rstrip("\n"), "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
for i in range(1, 10):
    lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 10) + "]")
open(f"{d}/alias-bomb.yaml", "w").write("\n".join(lines) + "\n")
big = "x" * 100_000_000
open(f"{d}/string-100mb.json", "w").write(json.dumps(big))
open(f"{d}/string-100mb.yaml", "w").write(big + "\n")
claim = dict(base, incident=dict(base["incident"], description=big))
open(f"{d}/claim-100mb.json", "w").write(json.dumps(claim))
open(f"{d}/claim-100mb.yaml", "w").write(
    "id: BIG-1\nlineOfBusiness: Household\nstatus: open\npolicy: {number: P-1, periodStart: 2024-01-01, periodEnd: 2024-12-31}\n"
    f"incident:\n  date: 2024-03-02\n  description: {big}\n")
PY

for input in deep-flow.yaml deep-block.yaml deep.json alias-bomb.yaml \
    string-100mb.json string-100mb.yaml claim-100mb.json claim-100mb.yaml; do
  /usr/bin/time -f "$input: exit %x, %e s wall, %M kB peak RSS" \
    "$bin" claims validate "$dir/$input" >/dev/null 2>"$dir/$input.err" || true
  tail -n 1 "$dir/$input.err"
done
