// The override editors: one per prompt id, starting from its default text
// (placeholders as written). An override is an editor whose text differs
// from the default; "Reset to default" puts the default back; "Diff" asks
// the server (POST /api/diff, the rule `prompts diff` uses) for the block
// against the default, and says which choice brings in a block this
// context leaves out. Save, download and load of override files.
"use strict";
Lab.editors = {};

Lab.overrides = function () {
  const map = {};
  for (const [id, area] of Object.entries(Lab.editors)) {
    if (area.value !== Lab.defaults[id]) map[id] = area.value;
  }
  return map;
};

Lab.buildEditors = function (prompts) {
  const box = Lab.$("overrides");
  for (const prompt of prompts) {
    Lab.defaults[prompt.id] = prompt.text;
    box.append(Lab.editor(prompt));
  }
};

Lab.editor = function (prompt) {
  const el = Lab.el;
  const box = el("details", "editor");
  box.dataset.promptId = prompt.id;
  box.append(el("summary", null, prompt.id));
  const area = el("textarea");
  area.rows = Math.min(14, Math.max(4, prompt.text.split("\n").length + 1));
  area.value = prompt.text;
  area.dataset.promptId = prompt.id;
  area.setAttribute("aria-label", "text of " + prompt.id);
  const note = el("div", "note");
  const diff = el("pre", "diff");
  diff.hidden = true;
  const reset = el("button", "reset", "Reset to default");
  reset.type = "button";
  const showDiff = el("button", "show-diff", "Diff against default");
  showDiff.type = "button";
  const tools = el("div", "tools");
  tools.append(reset, showDiff);
  box.append(area, tools, note, diff);
  Lab.editors[prompt.id] = area;
  area.addEventListener("input", () => { Lab.fitEditor(area); Lab.editorsChanged(); });
  box.addEventListener("toggle", () => { if (box.open) Lab.fitEditor(area); });
  reset.addEventListener("click", () => { area.value = Lab.defaults[prompt.id]; diff.hidden = true; Lab.fitEditor(area); Lab.editorsChanged(); });
  showDiff.addEventListener("click", () => Lab.showDiff(prompt.id, diff));
  return box;
};

// An editor as tall as its text, so the setup column is the one thing that
// scrolls; a text taller than most of the window scrolls inside it.
Lab.fitEditor = function (area) {
  if (!area.closest("details").open) return;
  const most = Math.max(160, Math.round(window.innerHeight * 0.7));
  area.style.height = "auto";
  const wanted = area.scrollHeight + 2;
  area.style.height = Math.min(wanted, most) + "px";
  area.classList.toggle("long", wanted > most);
};

Lab.setOverrides = function (map) {
  for (const [id, area] of Object.entries(Lab.editors)) {
    area.value = Object.prototype.hasOwnProperty.call(map, id) ? map[id] : Lab.defaults[id];
  }
  Lab.editorsChanged();
};

let changeTimer = null;
Lab.editorsChanged = function () {
  const overrides = Lab.overrides();
  Lab.markEditors(overrides, []);
  Lab.remember({ overrides });
  clearTimeout(changeTimer);
  changeTimer = setTimeout(() => { Lab.refreshFingerprint(overrides); Lab.refreshNotes(overrides); }, 150);
};

// Each editor's heading, and the count, as the server judged the overrides:
// one it ignores (blank, too long) is "ignored", never counted overridden.
Lab.markEditors = function (overrides, ignored) {
  const ignoredIds = new Set(ignored.map((i) => i.id));
  let count = 0;
  for (const [id, area] of Object.entries(Lab.editors)) {
    const differs = Object.prototype.hasOwnProperty.call(overrides, id);
    const box = area.closest("details");
    box.classList.toggle("overridden", differs && !ignoredIds.has(id));
    box.classList.toggle("ignored", differs && ignoredIds.has(id));
    if (differs && !ignoredIds.has(id)) count += 1;
  }
  Lab.$("override-count").textContent = count ? "(" + count + " overridden" + (ignoredIds.size ? ", " + ignoredIds.size + " ignored" : "") + ")" : ignoredIds.size ? "(" + ignoredIds.size + " ignored)" : "";
};

Lab.refreshFingerprint = async function (overrides) {
  const answer = await Lab.postJson("/api/fingerprint", { overrides });
  Lab.$("fingerprint").textContent = answer.body.fingerprint || "?";
  const ignored = answer.body.ignored || [];
  Lab.$("fingerprint").title = ignored.length ? "ignored: " + ignored.map((i) => i.id).join(", ") : "";
  Lab.markEditors(overrides, ignored);
  document.body.dataset.fingerprint = answer.body.fingerprint || "";
};

// The diff of the default prompt against the editors', for this context.
Lab.promptDiff = async function (overrides) {
  let body;
  try { body = Lab.requestBody(undefined, overrides); } catch (error) { return { error: error.message }; }
  if (!body.claim && !body.claimId) return { error: "choose a claim to see the prompt in context" };
  delete body.messages;
  const answer = await Lab.postJson("/api/diff", body);
  return answer.ok ? answer.body : { error: answer.body.error };
};

// Notes under overridden editors: ignored (and why), or not in this context
// (and which choice brings the block in).
Lab.refreshNotes = async function (overrides) {
  for (const area of Object.values(Lab.editors)) area.closest("details").querySelector(".note").textContent = "";
  if (!Object.keys(overrides).length) return;
  const diff = await Lab.promptDiff(overrides);
  if (diff.error) return;
  for (const entry of diff.b.overrides) {
    const area = Lab.editors[entry.id];
    if (!area) continue;
    const note = area.closest("details").querySelector(".note");
    if (entry.status === "notInContext") note.textContent = "not in this context" + (entry.bringIn ? ": " + entry.bringIn : "");
    else if (entry.status === "ignored") note.textContent = "ignored: " + Lab.reasonText(entry.reason);
  }
};

Lab.reasonText = function (reason) {
  switch (reason && reason.kind) {
    case "blank": return "the text is blank";
    case "too_long": return "the text is " + reason.chars + " characters, over the limit";
    case "claim_brief": return "the claim brief is built from the claim and is never overridden";
    default: return "not a known prompt id";
  }
};

Lab.showDiff = async function (id, target) {
  target.hidden = false;
  target.replaceChildren(Lab.el("span", null, "…"));
  const diff = await Lab.promptDiff(Lab.overrides());
  if (diff.error) { target.replaceChildren(Lab.el("span", "error", diff.error)); return; }
  const block = diff.blocks.find((b) => b.id === id);
  const placed = diff.b.overrides.find((o) => o.id === id);
  if (!block) {
    const why = placed && placed.bringIn ? "not in this context: " + placed.bringIn : "not in this context";
    target.replaceChildren(Lab.el("span", "note", why));
    return;
  }
  if (!block.changed) { target.replaceChildren(Lab.el("span", "muted", "the same as the default")); return; }
  target.replaceChildren(...block.diff.split("\n").filter((l) => l.length).map((line, i) => {
    const cls = i < 2 ? "head" : line[0] === "-" ? "del" : line[0] === "+" ? "ins" : line[0] === "@" ? "hunk" : "";
    return Lab.el("span", cls, line + "\n");
  }));
};

Lab.saveFile = async function (replace) {
  const name = Lab.$("save-name").value.trim();
  const result = Lab.$("save-result");
  const answer = await Lab.postJson("/api/overrides", { name, overrides: Lab.overrides(), replace: Boolean(replace) });
  if (answer.status === 409) {
    // Said for a person; the API's own wording is for programs.
    result.className = "small confirm";
    const again = Lab.el("button", "replace", "Replace it");
    again.type = "button";
    again.addEventListener("click", () => Lab.saveFile(true));
    const keep = Lab.el("button", "keep", "Keep it");
    keep.type = "button";
    keep.addEventListener("click", () => { result.replaceChildren(); Lab.$("save-name").focus(); });
    result.replaceChildren(Lab.el("span", null, "A saved file named \u201c" + name + "\u201d already exists."), again, keep);
    again.focus();
    return;
  }
  if (!answer.ok) {
    result.className = "small error";
    result.textContent = answer.body.error;
    return;
  }
  const skipped = answer.body.ignored.length ? " · not saved: " + answer.body.ignored.map((i) => i.id + " (" + Lab.reasonText(i.reason) + ")").join(", ") : "";
  result.className = "small saved";
  result.textContent = "saved " + answer.body.file + " · fingerprint " + answer.body.fingerprint + skipped;
  result.dataset.fingerprint = answer.body.fingerprint;
  Lab.kept = Lab.overrides();
  await Lab.refreshFiles(answer.body.file);
};

Lab.downloadFile = async function () {
  const answer = await Lab.postJson("/api/overrides/yaml", { overrides: Lab.overrides() });
  const result = Lab.$("save-result");
  if (!answer.ok) { result.className = "small error"; result.textContent = answer.body.error; return; }
  const link = Lab.el("a");
  link.href = URL.createObjectURL(new Blob([answer.body.yaml], { type: "application/yaml" }));
  link.download = (Lab.$("save-name").value.trim() || "overrides") + ".yaml";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
};

Lab.savedFiles = [];
Lab.refreshFiles = async function (select) {
  const listed = await Lab.getJson("/api/overrides").catch(() => ({ files: [] }));
  Lab.savedFiles = listed.files;
  const list = Lab.$("saved-files");
  const options = listed.files.map((f) => new Option(f.file + (f.fingerprint ? " · " + f.fingerprint : " · " + (f.error || "unreadable")), f.file));
  list.replaceChildren(...(options.length ? options : [new Option("(none saved yet)", "")]));
  if (select) list.value = select;
  Lab.fillVersionChoices();
};

// The overrides last saved or loaded: edits past them are unsaved.
Lab.kept = {};

// Prompt ids whose text in the editors is neither the default nor what was
// last saved or loaded.
Lab.unsavedEdits = function () {
  const held = Lab.overrides();
  const ids = new Set(Object.keys(held).concat(Object.keys(Lab.kept)));
  return [...ids].filter((id) => held[id] !== Lab.kept[id] && Object.prototype.hasOwnProperty.call(held, id));
};

// Load asks before a file replaces unsaved edits.
Lab.loadFile = async function () {
  const file = Lab.$("saved-files").value;
  if (!file) return;
  const unsaved = Lab.unsavedEdits();
  if (unsaved.length) {
    const result = Lab.$("save-result");
    result.className = "small confirm";
    const replace = Lab.el("button", "load-anyway", "Load it");
    replace.type = "button";
    replace.addEventListener("click", () => { result.replaceChildren(); Lab.loadFileNow(file); });
    const keep = Lab.el("button", "keep", "Keep my edits");
    keep.type = "button";
    keep.addEventListener("click", () => result.replaceChildren());
    result.replaceChildren(Lab.el("span", null, "Loading " + file + " replaces your unsaved edits to " + unsaved.join(", ") + "."), replace, keep);
    keep.focus();
    return;
  }
  await Lab.loadFileNow(file);
};

Lab.loadFileNow = async function (file) {
  try {
    const loaded = await Lab.getJson("/api/overrides/" + encodeURIComponent(file));
    Lab.setOverrides(loaded.overrides);
    Lab.kept = Lab.overrides();
    for (const area of Object.values(Lab.editors)) Lab.fitEditor(area);
    // A text box turns CRLF into LF: then the editors hold another version.
    const held = Lab.overrides();
    const differs = Object.keys(loaded.overrides).some((id) => Lab.editors[id] && held[id] !== loaded.overrides[id]);
    const warning = differs ? " · warning: a text uses CR line ends, which a browser text box turns into LF, so the editors' version differs from the file's" : "";
    Lab.$("save-name").value = file.replace(/\.(yaml|yml|json)$/, "");
    Lab.$("save-result").className = "small";
    const skipped = loaded.ignored.length ? " · ignored: " + loaded.ignored.map((i) => i.id + " (" + Lab.reasonText(i.reason) + ")").join(", ") : "";
    Lab.$("save-result").textContent = "loaded " + loaded.file + " · fingerprint " + loaded.fingerprint + skipped + warning;
  } catch (error) {
    Lab.$("save-result").className = "small error";
    Lab.$("save-result").textContent = error.message;
  }
};
