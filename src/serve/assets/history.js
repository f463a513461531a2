// Recent runs, each opening its recorded transcript (GET /api/runs/{id}),
// and the eval history (GET /api/evals): runs with pass rate per variant,
// a small chart per suite, each run opening its summary.
"use strict";
Lab.refreshRuns = async function () {
  const runs = await Lab.getJson("/api/runs?limit=20").catch(() => []);
  Lab.$("run-list").replaceChildren(...runs.map((run) => {
    const item = Lab.el("li", "run");
    const open = Lab.el("button", "open-run");
    open.type = "button";
    open.dataset.turnId = run.turnId;
    const labels = run.labels || {};
    const where = labels.suite
      ? labels.suite + " · " + labels.case + (labels.variant ? " · " + labels.variant : "") + (labels.sample > 1 ? " #" + labels.sample : "")
      : "chat · prompt " + run.fingerprint;
    const verdict = run.replayOf ? "replay" : run.verdict || run.status;
    const badge = Lab.el("span", "verdict " + verdict, run.replayOf ? "replay of " + run.replayOf.slice(0, 8) : verdict);
    open.append(
      Lab.el("span", "question", run.messagePreview || "(no message)"),
      Lab.el("span", "where", where + " · " + (run.claim || "?") + " · " + run.startedAt.slice(5, 16).replace("T", " ") + " "),
    );
    open.lastChild.append(badge);
    open.title = run.turnId;
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

// One line chart per suite: pass rate per variant, oldest run first, with
// its legend above it, a 0–100% axis, the runs' dates, and every point's
// value on hover (and the last one in text). Series that coincide stay
// visible: each variant has its own dash and marker.
Lab.charts = function (runs) {
  const bySuite = new Map();
  for (const run of runs.slice().reverse()) {
    if (!bySuite.has(run.suite)) bySuite.set(run.suite, []);
    bySuite.get(run.suite).push(run);
  }
  return [...bySuite].map(([suite, list]) => Lab.chart(suite, list));
};

Lab.series = [
  { colour: "#1f5fbf", dash: "", marker: "circle" },
  { colour: "#c2410c", dash: "6 4", marker: "square" },
  { colour: "#15803d", dash: "2 3", marker: "diamond" },
  { colour: "#7e22ce", dash: "10 3 2 3", marker: "circle" },
  { colour: "#0f766e", dash: "1 5", marker: "square" },
];

Lab.svg = function (tag, attributes, text) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
};

Lab.marker = function (shape, x, y, colour) {
  if (shape === "square") return Lab.svg("rect", { x: x - 3, y: y - 3, width: 6, height: 6, fill: colour });
  if (shape === "diamond") return Lab.svg("polygon", { points: [x, y - 4, x + 4, y, x, y + 4, x - 4, y].join(" "), fill: colour });
  return Lab.svg("circle", { cx: x, cy: y, r: 3, fill: colour });
};

Lab.chart = function (suite, list) {
  const variants = [...new Set(list.flatMap((run) => Lab.passRates(run).map(([v]) => v)))];
  const [left, right, top, bottom] = [40, 470, 10, 110];
  const x = (i) => left + (list.length > 1 ? ((right - left) * i) / (list.length - 1) : (right - left) / 2);
  const y = (rate) => bottom - rate * (bottom - top);
  const when = (run) => (run.startedAt || run.start || "").slice(5, 16).replace("T", " ");
  const svg = Lab.svg("svg", { class: "chart", viewBox: "0 0 520 140", role: "img", "aria-label": "pass rate per variant for " + suite });
  for (const rate of [0, 0.5, 1]) {
    svg.append(Lab.svg("line", { class: rate === 0 ? "axis" : "grid", x1: left, x2: right, y1: y(rate), y2: y(rate) }));
    svg.append(Lab.svg("text", { class: "y-label", x: left - 6, y: y(rate) + 3, "text-anchor": "end" }, Math.round(rate * 100) + "%"));
  }
  svg.append(Lab.svg("line", { class: "axis", x1: left, x2: left, y1: top, y2: bottom }));
  const ticks = list.length <= 6 ? list.map((_, i) => i) : [0, Math.floor((list.length - 1) / 2), list.length - 1];
  for (const i of ticks) svg.append(Lab.svg("text", { class: "x-label", x: x(i), y: bottom + 14, "text-anchor": "middle" }, when(list[i])));
  svg.append(Lab.svg("text", { class: "x-title", x: (left + right) / 2, y: 136, "text-anchor": "middle" }, "eval runs, oldest first"));
  const legend = Lab.el("figcaption");
  legend.append(Lab.el("b", null, suite + " "), Lab.el("span", "muted", "pass rate per variant: "));
  variants.forEach((variant, index) => {
    const style = Lab.series[index % Lab.series.length];
    const points = list.map((run, i) => [i, new Map(Lab.passRates(run)).get(variant)]).filter(([, rate]) => rate !== null && rate !== undefined);
    const line = Lab.svg("polyline", { points: points.map(([i, rate]) => x(i) + "," + y(rate)).join(" "), stroke: style.colour, "stroke-dasharray": style.dash, "data-variant": variant });
    line.append(Lab.svg("title", {}, variant));
    svg.append(line);
    for (const [i, rate] of points) {
      const mark = Lab.marker(style.marker, x(i), y(rate), style.colour);
      mark.setAttribute("class", "point");
      mark.append(Lab.svg("title", {}, variant + " · " + when(list[i]) + " · " + list[i].id + " · " + (rate * 100).toFixed(1) + "%"));
      svg.append(mark);
    }
    const key = Lab.el("span", "legend");
    const sample = Lab.svg("svg", { viewBox: "0 0 28 10", "aria-hidden": "true" });
    sample.append(Lab.svg("line", { x1: 0, x2: 28, y1: 5, y2: 5, stroke: style.colour, "stroke-width": 2, "stroke-dasharray": style.dash }), Lab.marker(style.marker, 14, 5, style.colour));
    const last = points.length ? points[points.length - 1][1] : null;
    key.append(sample, Lab.el("span", "value", variant + (last === null ? " –" : " " + (last * 100).toFixed(1) + "% last")));
    legend.append(key);
  });
  const figure = Lab.el("figure", "history");
  figure.append(legend, svg);
  return figure;
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
