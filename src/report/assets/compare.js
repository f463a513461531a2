// promptlab compare --format html: the conclusion, both sides' numbers and
// every pair, worst first; pairs are drawn a page at a time.
const PAGE = 100;
const PAIRS = DATA.pairs;
const CHANGE = { pass_to_fail: "pass → fail", fail_to_pass: "fail → pass", errored: "errored", same: "same verdict", not_comparable: "no verdict" };
const state = { ch: "changed", q: "", shown: PAGE };
let haystacks = null;

function changed(p) { return p.ac || p.tc || ["pass_to_fail", "fail_to_pass", "errored"].includes(p.ch); }

function conclusion() {
  const lines = [el("div", { class: "big", id: "sentence" }, DATA.sentence)];
  if (DATA.pValue !== null) {
    lines.push(el("div", null, "Test: " + DATA.test + ". p = ", el("span", { id: "p-value" }, DATA.pValue.toFixed(4)),
      " · pass → fail ", el("b", { id: "pass-to-fail" }, DATA.passToFail), " · fail → pass ", el("b", { id: "fail-to-pass" }, DATA.failToPass),
      " · errored ", DATA.errored, " · judged pairs ", DATA.judgedPairs));
    const power = DATA.power;
    if (power.discordant < power.discordantNeeded) {
      lines.push(el("div", { class: "warn" }, "Only " + power.discordant + " discordant pairs: the test needs at least " + power.discordantNeeded +
        " to ever reach significance" + (power.moreRegressionsNeeded !== null ? " (" + power.moreRegressionsNeeded + " more pass → fail pairs would make it worse)." : ".")));
    }
  }
  return el("section", { class: "conclusion " + DATA.conclusion, data: { conclusion: DATA.conclusion } }, lines);
}

function sides() {
  const [a, b] = DATA.sides;
  const dist = (d) => int(d.median) + " / " + int(d.p95);
  const rows = [
    ["runs", "side", (s) => s.label + " (" + s.source + ")"], ["versions", "versions", (s) => s.versions.join(", ")],
    ["runs compared", "runs", (s) => int(s.runs)], ["with a verdict", "judged", (s) => int(s.judged)], ["passed", "passed", (s) => int(s.passed)],
    ["pass rate", "passRate", (s) => pct(s.passRate) + " " + interval(s.passRateInterval)],
    ["tokens in (median / p95)", "inputTokens", (s) => dist(s.inputTokens)], ["tokens out (median / p95)", "outputTokens", (s) => dist(s.outputTokens)],
    ["latency ms (median / p95)", "latency", (s) => dist(s.latencyMs)], ["cache-read share", "cacheReadShare", (s) => pct(s.cacheReadShare)],
    ["runs by script or replay", "offline", (s) => int(s.offlineRuns)]];
  return el("table", { id: "sides" }, el("tr", null, el("th", null, ""), el("th", null, "A"), el("th", null, "B")),
    rows.map(([label, key, f]) => el("tr", { data: { key: key } }, el("th", null, label), el("td", { data: { side: "a" } }, f(a)), el("td", { data: { side: "b" } }, f(b)))));
}

function lists() {
  const items = [];
  DATA.gate.failures.forEach((f) => items.push(el("li", { class: "warn" }, "gate failed: " + f)));
  DATA.gate.notes.forEach((n) => items.push(el("li", null, n)));
  DATA.warnings.forEach((w) => items.push(el("li", { class: "warn" }, w)));
  // The per-run lines and warnings of the text report are shown below as
  // folded lists and warnings: keep only its summary lines here.
  DATA.accounting.filter((line) => !line.startsWith("  ") && !line.startsWith("warning: "))
    .forEach((line) => items.push(el("li", null, line)));
  DATA.sides.forEach((s, n) => {
    const aside = [["superseded", s.superseded], ["not selected", s.notSelected], ["replays (not runs of their own)", s.replays], ["unreadable", s.unreadable]];
    aside.forEach(([what, list]) => {
      if (list.length) items.push(el("li", null, el("details", null, el("summary", null, (n ? "B" : "A") + ": " + list.length + " " + what),
        el("ul", null, list.map(([path, why]) => el("li", null, path + ": " + why))))));
    });
  });
  return el("ul", { class: "notes" }, items);
}

function matches(i) {
  const p = PAIRS[i];
  if (state.ch === "changed" && !changed(p)) return false;
  if (state.ch !== "changed" && state.ch !== "all" && p.ch !== state.ch) return false;
  if (state.q) {
    if (!haystacks) haystacks = PAIRS.map((x) => [str(x.ver), str(x.claim), str(x.case), str(x.a.a), str(x.b.a),
      x.a.f.map(str).join(" "), x.b.f.map(str).join(" ")].join("\n").toLowerCase());
    return haystacks[i].includes(state.q);
  }
  return true;
}

function answerSide(p, keep) {
  if (!p.ac) return el("div", { class: "answer" }, str(p.a.a));
  return el("div", { class: "answer" }, p.diff.filter(([tag]) => tag === 0 || tag === keep)
    .map(([tag, text]) => (tag === 0 ? str(text) : el(keep < 0 ? "del" : "ins", null, str(text)))));
}

function side(p, run, keep) {
  return el("div", { data: { side: keep < 0 ? "a" : "b" } }, badge(run.o), " ", el("span", { class: "meta" }, str(run.st) + " · " + str(run.pv)),
    run.f.length ? el("ul", { class: "failures" }, run.f.map((f) => el("li", null, str(f)))) : null,
    answerSide(p, keep),
    el("div", { class: "meta" }, "tools: " + (run.tools.length ? run.tools.map(str).join(", ") : "none")),
    el("div", { class: "meta" }, "tokens " + int(run.u[0]) + " in · " + int(run.u[1]) + " out · " + int(run.u[2]) + " cache read · " + ms(run.ms)),
    el("div", { class: "meta" }, "run log " + str(run.p)));
}

function pairCard(i) {
  const p = PAIRS[i];
  const what = CHANGE[p.ch] + (p.ac ? " · answer changed" : "") + (p.tc ? " · tools changed" : "");
  return el("article", { class: "pair", data: { pair: i, change: p.ch } },
    el("header", null, el("b", null, what), " — ", str(p.ver) + " · " + str(p.claim) + " · " + str(p.case) + (p.n ? " #" + p.n : "")),
    el("div", { class: "sides" }, side(p, p.a, -1), side(p, p.b, 1)));
}

function pairList() {
  const root = clear(document.getElementById("pairs"));
  const visible = PAIRS.map((_, i) => i).filter((i) => matches(i));
  document.getElementById("count").textContent = int(visible.length) + " of " + int(PAIRS.length) + " pairs";
  visible.slice(0, state.shown).forEach((i) => root.appendChild(pairCard(i)));
  if (visible.length > state.shown) {
    root.appendChild(el("button", { class: "more", onclick: () => { state.shown += PAGE; pairList(); } },
      "Show " + int(Math.min(PAGE, visible.length - state.shown)) + " more"));
  }
}

function unpaired(title, runs, id) {
  if (!runs.length) return null;
  return [el("h2", null, title + " (" + runs.length + ")"), el("table", { id: id },
    el("tr", null, ["version", "claim", "case", "sample", "status", "verdict", "run log"].map((h) => el("th", null, h))),
    runs.map((r) => el("tr", null, el("td", null, str(r.ver)), el("td", null, str(r.claim)), el("td", null, str(r.case)),
      el("td", { class: "num" }, r.n), el("td", null, str(r.st)), el("td", null, badge(r.o)), el("td", null, str(r.p)))))];
}

function main() {
  const choose = el("select", { id: "f-change", "aria-label": "pairs", onchange: (e) => { state.ch = e.target.value; state.shown = PAGE; pairList(); } },
    [["changed", "changed pairs"], ["pass_to_fail", "pass → fail"], ["errored", "errored"], ["fail_to_pass", "fail → pass"], ["all", "all pairs"]]
      .map(([v, t]) => el("option", { value: v }, t)));
  const search = el("input", { type: "search", id: "search", placeholder: "Search answers, claims, cases, failures…", "aria-label": "search" });
  search.addEventListener("input", debounce(() => { state.q = search.value.trim().toLowerCase(); state.shown = PAGE; pairList(); }, 150));
  add(document.getElementById("app"), [header(DATA.sides[0].label + " ↔ " + DATA.sides[1].label), conclusion(),
    el("h2", null, "Pass rates side by side"), sides(), lists(),
    el("h2", null, "Pairs (worst first)"), el("div", { class: "filters" }, choose, search, el("span", { id: "count", class: "meta" })),
    el("div", { id: "pairs" }), unpaired("Only in A", DATA.onlyA, "only-a"), unpaired("Only in B", DATA.onlyB, "only-b")]);
  pairList();
  markReady();
}

main();
