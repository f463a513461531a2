// promptlab report: the recorded turns. The summary and the matrix are
// small and drawn at once; the turn list is drawn a page at a time and a
// transcript only when it is opened, so 10,000 turns stay responsive.
const PAGE = 200;
const MAX_ROWS = 300;
const MAX_COLUMNS = 60;
const TURNS = DATA.turns;
const VARIANTS = DATA.variants;
const state = { v: "", c: "", k: "", o: "", q: "", shown: PAGE, selected: -1 };
let haystacks = null;

function variantName(t) { return VARIANTS[t.v] ? VARIANTS[t.v].variant : "?"; }
function place(t) {
  return variantName(t) + " · " + DATA.claims[t.c] + " · " + DATA.cases[t.k] + (t.n ? " #" + t.n : "");
}

// Failures first, then errors, turns without a verdict, passes.
const RANK = [3, 0, 1, 2];
const ORDER = TURNS.map((_, i) => i).sort((a, b) => RANK[TURNS[a].o] - RANK[TURNS[b].o] || a - b);

function summary() {
  const head = ["variant", "fingerprint", "turns", "passed", "failed", "errors", "pass rate", "95% interval",
    "tokens in", "tokens out", "cache-read share", "latency p50", "latency p95"];
  const rows = VARIANTS.map((s) => el("tr", { data: { variant: s.variant } },
    el("td", null, s.variant), el("td", null, s.fingerprints.join(", ")),
    numCell("turns", s.turns, int(s.turns)), numCell("passed", s.passed, int(s.passed)),
    numCell("failed", s.failed, int(s.failed)), numCell("errors", s.errors, int(s.errors)),
    numCell("passRate", s.passRate, pct(s.passRate)),
    el("td", { class: "num", data: { key: "interval" } }, interval(s.passRateInterval)),
    numCell("inputTokens", s.inputTokens, int(s.inputTokens)),
    numCell("outputTokens", s.outputTokens, int(s.outputTokens)),
    numCell("cacheReadShare", s.cacheReadShare, pct(s.cacheReadShare)),
    numCell("latencyP50Ms", s.latencyP50Ms, ms(s.latencyP50Ms)),
    numCell("latencyP95Ms", s.latencyP95Ms, ms(s.latencyP95Ms))));
  return el("div", { class: "scroll" }, el("table", { id: "summary" },
    el("thead", null, el("tr", null, head.map((h, i) => el("th", { class: i > 1 ? "num" : null }, h)))),
    el("tbody", null, rows)));
}

function notes() {
  const items = [];
  const offline = VARIANTS.reduce((n, s) => n + s.offline, 0);
  const judged = VARIANTS.reduce((n, s) => n + s.judged, 0);
  if (judged < TURNS.length) items.push(el("li", null, int(TURNS.length - judged) + " turns carry no verdict (chat turns, or logs that never finished)."));
  const unreported = VARIANTS.reduce((n, s) => n + (s.usageUnreported || 0), 0);
  if (unreported) items.push(el("li", { class: "warn" }, "usage not reported by the server (" + int(unreported) + (unreported === 1 ? " call" : " calls") + "): its tokens show as – and its cost is unknown."));
  if (offline) items.push(el("li", { class: "warn" }, int(offline) + " turns were made by the script or replay provider: their answers do not come from a model."));
  if (DATA.superseded) items.push(el("li", null, int(DATA.superseded) + " older runs of turns recorded again are not counted (the newest run counts)."));
  if (DATA.replays) items.push(el("li", null, int(DATA.replays) + " replays of recorded turns are left out (a replay is not a run of its own)."));
  if (DATA.otherSuites) items.push(el("li", null, int(DATA.otherSuites) + " runs of other suites are left out."));
  if (DATA.unreadable.length) {
    items.push(el("li", { class: "warn" }, el("details", null,
      el("summary", null, int(DATA.unreadable.length) + " run logs could not be read"),
      el("ul", null, DATA.unreadable.map(([path, why]) => el("li", null, path + ": " + why))))));
  }
  return el("ul", { class: "notes" }, items);
}

// The matrix keeps every claim and case in view (the chosen cell is
// outlined); the list narrows to them.
function matches(i, wholeGrid) {
  const t = TURNS[i];
  if (state.v !== "" && t.v !== +state.v) return false;
  if (!wholeGrid && state.c !== "" && t.c !== +state.c) return false;
  if (!wholeGrid && state.k !== "" && t.k !== +state.k) return false;
  if (state.o !== "" && t.o !== +state.o) return false;
  if (state.q) {
    if (!haystacks) haystacks = TURNS.map((u) => [place(u), str(u.a), str(u.e), u.f.map(str).join("\n"),
      u.msg.map((m) => str(m[1])).join("\n"), str(u.p), u.id].join("\n").toLowerCase());
    return haystacks[i].includes(state.q);
  }
  return true;
}

function filters() {
  const set = (key) => (event) => { state[key] = event.target.value; state.shown = PAGE; redraw(); };
  const search = el("input", { type: "search", id: "search", placeholder: "Search answers, failures, messages, paths…", "aria-label": "search" });
  search.addEventListener("input", debounce(() => { state.q = search.value.trim().toLowerCase(); state.shown = PAGE; redraw(); }, 150));
  return el("div", { class: "filters" },
    select("f-variant", "variant", VARIANTS.map((s, i) => [i, s.variant]), set("v")),
    select("f-claim", "claim", DATA.claims.map((c, i) => [i, c]), set("c")),
    select("f-case", "case", DATA.cases.map((c, i) => [i, c]), set("k")),
    select("f-verdict", "verdict", OUTCOMES.map((o, i) => [i, o]), set("o")),
    search, el("span", { id: "count", class: "meta" }));
}

function fold(list) {
  const counts = [0, 0, 0, 0];
  list.forEach((i) => counts[TURNS[i].o]++);
  const code = counts[1] ? 1 : counts[2] ? 2 : counts[0] ? 0 : 3;
  const mixed = counts[1] && counts[0];
  const text = counts[3] === list.length ? String(list.length) : counts[0] + "/" + list.length;
  return { code, mixed, text, counts };
}

function matrix() {
  const root = clear(document.getElementById("matrix"));
  const cells = new Map();
  TURNS.forEach((t, i) => {
    if (!matches(i, true)) return;
    const key = t.v + "|" + t.c + "|" + t.k;
    if (!cells.has(key)) cells.set(key, []);
    cells.get(key).push(i);
  });
  VARIANTS.forEach((s, v) => {
    if (state.v !== "" && v !== +state.v) return;
    const used = new Set([...cells.keys()].filter((key) => key.startsWith(v + "|")));
    const has = (c, k) => used.has(v + "|" + c + "|" + k);
    const allClaims = DATA.claims.map((_, c) => c).filter((c) => DATA.cases.some((_, k) => has(c, k)));
    const allCases = DATA.cases.map((_, k) => k).filter((k) => allClaims.some((c) => has(c, k)));
    if (!allClaims.length) return;
    // Chat turns make a case of every question: keep the grid drawable and
    // leave the rest to the list, the filters and the search.
    const claims = allClaims.slice(0, MAX_ROWS), cases = allCases.slice(0, MAX_COLUMNS);
    root.appendChild(el("h3", null, "variant " + s.variant));
    if (claims.length < allClaims.length || cases.length < allCases.length) {
      root.appendChild(el("p", { class: "meta" }, "Showing " + claims.length + " of " + allClaims.length + " claims and " +
        cases.length + " of " + allCases.length + " cases; the list below has every turn."));
    }
    const rows = claims.map((c) => el("tr", null, el("th", null, DATA.claims[c]), cases.map((k) => {
      const list = cells.get(v + "|" + c + "|" + k);
      if (!list) return el("td", { class: "empty" }, "·");
      const f = fold(list);
      const tip = f.counts[0] + " pass, " + f.counts[1] + " fail, " + f.counts[2] + " error";
      const current = state.v === String(v) && state.c === String(c) && state.k === String(k);
      return el("td", clickable(() => openCell(v, c, k, list), {
        class: "cell o" + f.code + (f.mixed ? " mixed" : "") + (current ? " current" : ""), title: tip,
        data: { variant: v, claim: c, case: k, outcome: f.code } }), f.text);
    })));
    root.appendChild(el("div", { class: "scroll" }, el("table", { class: "matrix" },
      el("thead", null, el("tr", null, el("th", null, "claim \\ case"), cases.map((k) => el("th", null, DATA.cases[k])))),
      el("tbody", null, rows))));
  });
}

function openCell(v, c, k, list) {
  Object.assign(state, { v: String(v), c: String(c), k: String(k), o: "", shown: PAGE });
  ["f-variant", "f-claim", "f-case", "f-verdict"].forEach((id, n) => { document.getElementById(id).value = [state.v, state.c, state.k, ""][n]; });
  redraw();
  const worst = list.slice().sort((a, b) => RANK[TURNS[a].o] - RANK[TURNS[b].o] || a - b)[0];
  openTurn(worst);
}

function turnList() {
  const root = clear(document.getElementById("list"));
  const visible = ORDER.filter((i) => matches(i, false));
  document.getElementById("count").textContent = int(visible.length) + " of " + int(TURNS.length) + " turns";
  visible.slice(0, state.shown).forEach((i) => {
    const t = TURNS[i];
    const why = t.f.length ? str(t.f[0]) : t.e !== null ? str(t.e) : str(t.a);
    root.appendChild(el("div", clickable(() => openTurn(i), { class: "row" + (i === state.selected ? " selected" : ""), data: { turn: i } }),
      badge(t.o), " ", place(t), el("span", { class: "meta" }, " · " + ms(t.ms)),
      el("div", { class: "why" }, why)));
  });
  if (visible.length > state.shown) {
    root.appendChild(el("button", { class: "more", onclick: () => { state.shown += PAGE; turnList(); } },
      "Show " + int(Math.min(PAGE, visible.length - state.shown)) + " more"));
  }
}

function redraw() { matrix(); turnList(); }

function transcript(i) {
  const t = TURNS[i];
  const parts = [el("h2", null, badge(t.o), " ", place(t))];
  if (t.f.length) parts.push(el("h3", null, "What failed, and what was seen"), el("ul", { class: "failures" }, t.f.map((f) => el("li", null, str(f)))));
  t.msg.forEach(([role, text]) => parts.push(el("div", { class: "bubble " + str(role) }, str(text))));
  if (t.ch.length) parts.push(el("div", { class: "chips" }, t.ch.map(([tool, label]) => el("span", { class: "chip", title: str(tool) }, str(label)))));
  parts.push(el("div", { class: "bubble assistant", id: "answer" }, t.a !== null && str(t.a) !== "" ? str(t.a) : el("em", null, "(no answer)")));
  if (t.lk.length) {
    parts.push(el("h3", null, "Lookups (" + t.lk.length + ")"), el("table", { class: "lookups" },
      el("tr", null, ["round", "tool", "arguments", "ok", "result"].map((h) => el("th", null, h))),
      t.lk.map(([round, tool, args, ok, result]) => el("tr", null, el("td", { class: "num" }, round), el("td", null, str(tool)),
        el("td", null, el("code", null, str(args))), el("td", null, ok === null ? "–" : ok ? "yes" : "no"),
        el("td", null, el("details", null, el("summary", null, int(str(result).length) + " characters"), el("pre", null, str(result))))))));
  }
  if (t.ca.length) parts.push(el("h3", null, "Client actions"), el("ul", null, t.ca.map((a) => el("li", null, el("code", null, str(a))))));
  if (t.d !== null) parts.push(el("div", { class: "meta" }, str(t.d)));
  if (t.e !== null) parts.push(el("div", { class: "errorline" }, "error: " + str(t.e)));
  parts.push(el("h3", null, "Run"), el("div", { class: "kv" },
    [["run log", str(t.p)], ["turn", t.id], ["started", t.at], ["status", str(t.st)], ["provider", str(t.pv)], ["model", str(t.m)],
      ["fingerprint", str(t.fp)], ["tokens", int(t.u[0]) + " in · " + int(t.u[1]) + " out · " + int(t.u[2]) + " cache read"],
      ["latency", ms(t.ms) + (t.ft !== null ? " (first token " + ms(t.ft) + ")" : "")], ["model calls", t.r]]
      .map(([k, v]) => [el("span", null, k), el("span", null, v)])));
  if (t.b.length) {
    const holder = el("div");
    parts.push(el("button", { class: "link", id: "show-prompt", onclick: (e) => {
      e.target.remove();
      t.b.forEach(([id, source, text]) => holder.appendChild(el("div", null, el("h3", null, str(id) + " (" + str(source) + ")"), el("pre", null, str(text)))));
    } }, "Show the assembled prompt (" + t.b.length + " blocks)"), holder);
  }
  return parts;
}

function openTurn(i) {
  state.selected = i;
  document.querySelectorAll(".row.selected").forEach((r) => r.classList.remove("selected"));
  const row = document.querySelector('.row[data-turn="' + i + '"]');
  if (row) row.classList.add("selected");
  const panel = clear(document.getElementById("transcript"));
  panel.dataset.turn = String(i);
  add(panel, transcript(i));
  // A link to the turn; some browsers refuse history changes on file:// pages.
  try { history.replaceState(null, "", "#turn-" + i); } catch (_) { /* the link is a convenience */ }
}

function main() {
  const suites = DATA.suites.length ? "suite " + DATA.suites.join(", ") : "chat turns";
  const app = document.getElementById("app");
  add(app, [header(suites + " · " + int(TURNS.length) + " turns from " + DATA.dirs.join(", ")), notes(),
    el("h2", null, "Summary"), summary(), filters(),
    // The matrix and the list on the left, the open transcript beside them.
    el("div", { class: "workspace" },
      el("div", null,
        el("h2", null, "Claims × cases"), el("div", { id: "matrix", class: "pane" }),
        el("h2", null, "Turns (failures and errors first)"), el("div", { class: "list pane", id: "list" })),
      el("div", { class: "panel", id: "transcript" }, el("p", { class: "meta" }, "Choose a turn or a matrix cell to read its transcript.")))]);
  redraw();
  const linked = /^#turn-(\d+)$/.exec(location.hash);
  if (linked && TURNS[+linked[1]]) openTurn(+linked[1]);
  markReady();
}

main();
