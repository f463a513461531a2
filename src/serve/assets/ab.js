// A/B: one question sent to two prompt versions at once — the editors', a
// saved file's or the default — answers streaming side by side, each with
// its chips, lookups, tokens and votes; when both finish, the word diff of
// the answers from the server (the compare report's word segments). A side
// the server refuses (e.g. over --max-concurrent) shows its own error.
"use strict";
Lab.fillVersionChoices = function () {
  for (const [id, fallback] of [["ab-a", "default"], ["ab-b", "editors"]]) {
    const select = Lab.$(id);
    const kept = select.value || fallback;
    const options = [new Option("the editors", "editors"), new Option("the default", "default")];
    for (const file of Lab.savedFiles) if (!file.error) options.push(new Option("file " + file.file, "file:" + file.file));
    select.replaceChildren(...options);
    select.value = [...select.options].some((o) => o.value === kept) ? kept : fallback;
  }
};

// The override map of a version choice.
Lab.versionOverrides = async function (choice) {
  if (choice === "editors") return { label: "the editors", overrides: Lab.overrides() };
  if (choice === "default") return { label: "the default", overrides: {} };
  const file = choice.slice("file:".length);
  const loaded = await Lab.getJson("/api/overrides/" + encodeURIComponent(file));
  return { label: file, overrides: loaded.overrides };
};

Lab.abSend = async function () {
  const text = Lab.$("ab-message").value.trim();
  if (!text || Lab.abBusy) return;
  Lab.abBusy = true;
  Lab.$("ab-send").disabled = true;
  Lab.$("ab-diff").hidden = true;
  try {
    const sides = await Promise.all(["a", "b"].map((side) => Lab.abSide(side, text)));
    if (sides[0] && sides[1]) await Lab.abDiff(sides[0], sides[1]);
  } finally {
    Lab.abBusy = false;
    Lab.$("ab-send").disabled = false;
    Lab.refreshRuns();
  }
};

// One side's turn; resolves to its answer ("" when it has none).
Lab.abSide = async function (side, text) {
  const column = Lab.$("ab-side-" + side);
  const answers = column.querySelector(".answers");
  answers.replaceChildren(Lab.el("div", "msg user", text));
  let version;
  try { version = await Lab.versionOverrides(Lab.$("ab-" + side).value); } catch (error) { answers.append(Lab.el("div", "error", error.message)); return ""; }
  column.querySelector(".version").textContent = version.label;
  let body;
  try { body = Lab.requestBody([{ role: "user", text }], version.overrides); } catch (error) { answers.append(Lab.el("div", "error", error.message)); return ""; }
  const view = Lab.assistantView(answers);
  const answer = await Lab.runTurn(body, view);
  return view.done() ? answer : "";
};

Lab.abDiff = async function (a, b) {
  const answer = await Lab.postJson("/api/word-diff", { a, b });
  const target = Lab.$("ab-diff").querySelector(".word-diff");
  if (!answer.ok) { target.replaceChildren(Lab.el("span", "error", answer.body.error)); Lab.$("ab-diff").hidden = false; return; }
  target.replaceChildren(...answer.body.segments.map(([op, text]) => Lab.el(op < 0 ? "del" : op > 0 ? "ins" : "span", null, text)));
  Lab.$("ab-diff").hidden = false;
};
