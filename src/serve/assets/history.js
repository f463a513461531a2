// Recent runs, each opening its recorded transcript (GET /api/runs/{id}),
// and the eval history (GET /api/evals): runs with pass rate per variant,
// a small chart per suite, each run opening its summary.
"use strict";
Lab.refreshRuns = async function () {
  const runs = await Lab.getJson("/api/runs?limit=20").catch(() => []);
  Lab.$("run-list").replaceChildren(...runs.map((run) => {
    const item = Lab.el("li", "run");
    const open = Lab.el("button", "open-run", run.startedAt.slice(0, 19).replace("T", " ") + " · " + (run.claim || "?") + " · " + run.fingerprint + " · " + run.status + (run.replayOf ? " · replay of " + run.replayOf.slice(0, 8) : ""));
    open.type = "button";
    open.dataset.turnId = run.turnId;
    open.addEventListener("click", () => Lab.openRun(run.turnId));
    item.append(open);
    return item;
  }));
};

Lab.openRun = async function (turnId) {
  const body = Lab.$("run-body");
  body.replaceChildren(Lab.el("div", "muted", "…"));
  Lab.$("run-dialog").showModal();
  try {
    body.replaceChildren(...Lab.transcript(await Lab.getJson("/api/runs/" + encodeURIComponent(turnId))));
  } catch (error) {
    body.replaceChildren(Lab.el("div", "error", error.message));
  }
};

// A recorded turn as the front end showed it.
Lab.transcript = function (run) {
  const el = Lab.el;
  const nodes = [el("div", "muted small", run.startedAt.slice(0, 19).replace("T", " ") + " · " + run.claim + " · " + run.provider + "/" + run.model + " · prompt " + run.fingerprint + " · " + run.status + " · " + run.path)];
  for (const message of run.messages) nodes.push(el("div", "msg " + (message.role === "user" ? "user" : "assistant"), message.text));
  const box = el("div", "msg assistant recorded");
  const chips = el("div", "chips");
  for (const label of run.chips) chips.append(el("span", "chip", label));
  box.append(chips, el("div", "answer", run.answer));
  for (const action of run.clientActions) box.append(el("div", "action", action));
  if (run.lookups.length) {
    const lookups = el("details", "lookups");
    lookups.append(el("summary", null, "lookups (" + run.lookups.length + ")"));
    for (const lookup of run.lookups) lookups.append(el("div", null, lookup.tool + " " + lookup.args + (lookup.ok === false ? " (failed)" : "")), el("pre", null, lookup.result));
    box.append(lookups);
  }
  if (run.error) box.append(el("div", "error", run.error));
  const foot = el("div", "footer");
  const u = run.usage;
  const count = (n) => n === null || n === undefined ? "–" : n;
  const unreported = u.usageUnreported ? " · usage not reported by the server (" + u.usageUnreported + (u.usageUnreported === 1 ? " call)" : " calls)") : "";
  foot.append(el("span", null, (run.done || run.status) + " · " + count(u.inputTokens) + " in / " + count(u.outputTokens) + " out" + unreported + (run.latencyMs !== null && run.latencyMs !== undefined ? " · " + run.latencyMs + " ms " : " ")));
  const last = run.votes.length ? run.votes[run.votes.length - 1].vote : null;
  if (run.status === "done") foot.append(Lab.votes(run.turnId, last));
  box.append(foot);
  nodes.push(box);
  return nodes;
};

Lab.refreshHistory = async function () {
  const note = Lab.$("history-note");
  let answer;
  try {
    answer = await Lab.getJson("/api/evals");
  } catch (error) {
    note.textContent = error.status === 404 ? "Eval history needs the run index (GET /api/evals), which this build does not have yet." : error.message;
    return;
  }
  const runs = Array.isArray(answer) ? answer : [];
  note.textContent = runs.length ? "" : "No eval runs are recorded in this runs folder yet (run `promptlab eval`).";
  Lab.$("history-chart").replaceChildren(...Lab.charts(runs));
  Lab.$("eval-list").replaceChildren(...runs.map((run) => {
    const item = Lab.el("li");
    const rates = Lab.passRates(run).map(([variant, rate]) => variant + " " + (rate === null ? "–" : Math.round(rate * 100) + "%")).join(", ");
    const open = Lab.el("button", "open-eval", (run.startedAt || run.start || "").slice(0, 16).replace("T", " ") + " · " + (run.suite || "?") + " · " + run.id + " · " + rates + " · " + (run.status || ""));
    open.type = "button";
    open.addEventListener("click", () => Lab.openEval(run.id));
    item.append(open);
    return item;
  }));
};

// [variant, pass rate or null] for one eval run.
Lab.passRates = function (run) {
  const variants = run.variants || [];
  return variants.map((v) => [v.variant || v.name, v.passRate === undefined ? null : v.passRate]);
};

// One small line chart per suite: pass rate per variant, oldest first.
Lab.charts = function (runs) {
  const bySuite = new Map();
  for (const run of runs.slice().reverse()) {
    if (!bySuite.has(run.suite)) bySuite.set(run.suite, []);
    bySuite.get(run.suite).push(run);
  }
  const colours = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#0f766e"];
  const charts = [];
  for (const [suite, list] of bySuite) {
    const variants = [...new Set(list.flatMap((run) => Lab.passRates(run).map(([v]) => v)))];
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("class", "chart");
    svg.setAttribute("viewBox", "0 0 320 100");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "pass rate per variant for " + suite);
    variants.forEach((variant, index) => {
      const points = list.map((run, i) => {
        const rate = new Map(Lab.passRates(run)).get(variant);
        return rate === null || rate === undefined ? null : [10 + (list.length > 1 ? (300 * i) / (list.length - 1) : 150), 95 - rate * 90];
      }).filter(Boolean);
      const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
      line.setAttribute("points", points.map((p) => p.join(",")).join(" "));
      line.setAttribute("stroke", colours[index % colours.length]);
      const title = document.createElementNS("http://www.w3.org/2000/svg", "title");
      title.textContent = variant;
      line.append(title);
      svg.append(line);
    });
    const figure = Lab.el("figure");
    figure.append(svg, Lab.el("figcaption", "small muted", suite + ": " + variants.map((v, i) => v + " (" + ["blue", "orange", "green", "purple", "teal"][i % 5] + ")").join(", ")));
    charts.push(figure);
  }
  return charts;
};

Lab.openEval = async function (id) {
  const target = Lab.$("eval-detail");
  try {
    const detail = await Lab.getJson("/api/evals/" + encodeURIComponent(id));
    target.replaceChildren(...Lab.evalSummary(detail));
  } catch (error) {
    target.replaceChildren(Lab.el("div", "error", error.message));
  }
};

// A recorded eval run: its numbers per variant and the turns that did not pass.
Lab.evalSummary = function (detail) {
  const el = Lab.el;
  const run = detail.run;
  const nodes = [el("h3", null, run.id + " · " + run.suite + " · " + run.kind + " · " + run.status + (run.shard ? " · shards " + run.shard : "")),
    el("div", "muted small", run.startedAt.slice(0, 19).replace("T", " ") + " → " + run.endedAt.slice(0, 19).replace("T", " ") + " · " + run.turns + " turns" + (run.costUsd !== null && run.costUsd !== undefined ? " · $" + run.costUsd.toFixed(4) : ""))];
  const table = el("table", "summary");
  const head = el("tr");
  for (const title of ["variant", "turns", "passed", "failed", "errors", "pass rate", "p50 ms", "p95 ms"]) head.append(el("th", null, title));
  table.append(head);
  for (const v of run.variants) {
    const row = el("tr");
    for (const cell of [v.variant, v.turns, v.passed, v.failed, v.errors, v.passRate === null ? "–" : (v.passRate * 100).toFixed(1) + "%", v.latencyP50Ms ?? "–", v.latencyP95Ms ?? "–"]) row.append(el("td", null, cell));
    table.append(row);
  }
  nodes.push(table);
  if (detail.failures.length) {
    nodes.push(el("h3", null, "Did not pass (" + detail.failures.length + ")"));
    const list = el("ul", "failures small");
    for (const f of detail.failures) list.append(el("li", null, (f.variant || "?") + " · " + f.claim + " · " + f.case + " #" + f.sample + " · " + (f.verdict || "unfinished") + (f.failures.length ? ": " + f.failures.join("; ") : "")));
    nodes.push(list);
  }
  return nodes;
};
