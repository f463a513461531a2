// The Review view: an eval run's turns one at a time for a person to label
// (GET /api/review, POST /api/labels), keyboard-driven like `promptlab
// review` — p pass, f fail, 1-9 a criterion (unset → pass → fail), n the
// note, s skip, b back. The judge's verdict comes only in the answer to a
// label, so it stays hidden until the reviewer has decided.
"use strict";
Lab.review = { queue: null, at: 0, chosen: {}, last: null };

Lab.startReview = async function () {
  const reviewer = Lab.$("review-reviewer").value.trim();
  if (!reviewer) { Lab.$("review-turn").replaceChildren(Lab.el("div", "error", "Give your name as the reviewer.")); return; }
  Lab.remember({ reviewer });
  const params = new URLSearchParams({ reviewer });
  const run = Lab.$("review-run").value.trim();
  if (run) params.set("evalRun", run);
  try {
    const queue = await Lab.getJson("/api/review?" + params);
    Object.assign(Lab.review, { queue, at: 0, chosen: {}, last: null, agreement: queue.agreement });
    Lab.showReviewTurn();
  } catch (error) {
    Lab.$("review-turn").replaceChildren(Lab.el("div", "error", error.message));
  }
};

// `κ so far 0.71 [0.48, 0.94]`, from the server's figures.
Lab.kappaSoFar = function (agreement) {
  if (!agreement || agreement.kappa === null || agreement.kappa === undefined) return "κ so far —";
  const k = agreement.kappa.toFixed(2);
  const interval = agreement.kappaInterval;
  return "κ so far " + k + (interval ? " [" + interval[0].toFixed(2) + ", " + interval[1].toFixed(2) + "]" : "");
};

Lab.showReviewTurn = function () {
  const r = Lab.review;
  const box = Lab.$("review-turn");
  const turns = r.queue.turns;
  if (r.at >= turns.length) {
    box.replaceChildren(Lab.el("div", "muted", turns.length ? "Queue done: every turn here has your label." : "Nothing to review: you have labelled every turn of " + r.queue.evalRun + "."));
    Lab.$("review-progress").textContent = Lab.kappaSoFar(r.agreement);
    return;
  }
  const turn = turns[r.at];
  Lab.$("review-progress").textContent = (r.at + 1) + " of " + turns.length + " · " + Lab.kappaSoFar(r.agreement);
  const nodes = [];
  if (r.last) nodes.push(Lab.el("div", "review-last muted", r.last));
  nodes.push(Lab.el("div", "muted small", "case " + (turn.case || "?") + (turn.sample ? " #" + turn.sample : "") + (turn.variant ? " · variant " + turn.variant : "")));
  nodes.push(...Lab.transcript(turn));
  if (turn.criteria.length) {
    const list = Lab.el("ol", "review-criteria");
    turn.criteria.forEach((criterion) => {
      const item = Lab.el("li", "criterion");
      item.dataset.criterion = criterion;
      item.append(Lab.el("span", "mark", r.chosen[criterion] || "–"), Lab.el("span", null, " " + criterion));
      list.append(item);
    });
    nodes.push(list);
  }
  box.replaceChildren(...nodes);
  Lab.$("review-note").value = "";
};

Lab.reviewDecide = async function (verdict) {
  const r = Lab.review;
  const turn = r.queue.turns[r.at];
  const body = { turnId: turn.turnId, verdict, reviewer: Lab.$("review-reviewer").value.trim(), criteria: r.chosen, evalRun: r.queue.evalRun };
  const note = Lab.$("review-note").value.trim();
  if (note) body.note = note;
  const answer = await Lab.postJson("/api/labels", body);
  if (!answer.ok) { Lab.status(answer.body.error || "the label was not recorded"); return; }
  r.last = "previous: you " + verdict + " · judge " + (answer.body.judge || "no rubric verdict");
  if (answer.body.agreement) r.agreement = answer.body.agreement;
  r.chosen = {};
  r.at += 1;
  Lab.showReviewTurn();
};

Lab.reviewKey = function (event) {
  const r = Lab.review;
  if (Lab.$("view-review").hidden || !r.queue || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target && ["INPUT", "TEXTAREA", "SELECT"].includes(event.target.tagName)) {
    if (event.key === "Escape" || event.key === "Enter") { event.preventDefault(); event.target.blur(); }
    return;
  }
  const turn = r.queue.turns[r.at];
  if (!turn) return;
  const key = event.key;
  if (key === "p" || key === "f") { event.preventDefault(); Lab.reviewDecide(key === "p" ? "pass" : "fail"); }
  else if (key === "s") { r.chosen = {}; r.at += 1; Lab.showReviewTurn(); }
  else if (key === "b") { r.chosen = {}; r.at = Math.max(0, r.at - 1); Lab.showReviewTurn(); }
  else if (key === "n") { event.preventDefault(); Lab.$("review-note").focus(); }
  else if (/^[1-9]$/.test(key)) {
    const criterion = turn.criteria[Number(key) - 1];
    if (criterion === undefined) return;
    const next = { undefined: "pass", pass: "fail", fail: undefined }[r.chosen[criterion]];
    if (next) r.chosen[criterion] = next; else delete r.chosen[criterion];
    const mark = document.querySelector(".review-criteria li:nth-child(" + key + ") .mark");
    if (mark) mark.textContent = next || "–";
  }
};
