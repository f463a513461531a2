// Starts the page: claims, the prompt catalog and the editors, what the
// browser remembered (last claim, quick action, editor texts), the saved
// files and recent runs; then wires every control.
"use strict";
Lab.boot = async function () {
  const [claims, catalog] = await Promise.all([Lab.getJson("/api/claims"), Lab.getJson("/api/prompts")]);
  Lab.catalog = catalog;
  const memory = Lab.remembered();
  for (const row of claims.claims) Lab.$("claim").append(new Option(row.id + (row.lineOfBusiness ? " · " + row.lineOfBusiness : ""), row.id));
  const ids = claims.claims.map((row) => row.id);
  if (ids.length) Lab.$("claim").value = ids.includes(memory.claim) ? memory.claim : ids[0];
  for (const cap of catalog.capabilities) Lab.$("capability").append(new Option(cap.label + (cap.thinkingLevel ? " (" + cap.thinkingLevel + ")" : ""), cap.id));
  if (memory.capability && catalog.capabilities.some((c) => c.id === memory.capability)) Lab.$("capability").value = memory.capability;
  for (const name of Object.keys(catalog.brands)) Lab.$("brand").append(new Option(name, name));
  Lab.$("brand").value = catalog.defaultBrand;
  Lab.buildEditors(catalog.prompts);
  Lab.setOverrides(memory.overrides || {});
  if (memory.reviewer) Lab.$("review-reviewer").value = memory.reviewer;
  Lab.wire();
  await Promise.all([Lab.refreshFiles(), Lab.refreshRuns()]);
};

Lab.wire = function () {
  const $ = Lab.$;
  const contextChanged = () => { Lab.remember({ claim: $("claim").value, capability: $("capability").value }); Lab.refreshNotes(Lab.overrides()); };
  for (const id of ["claim", "capability", "brand", "locale", "screen-actions", "voice"]) $(id).addEventListener("change", contextChanged);
  $("send").addEventListener("click", Lab.send);
  $("stop").addEventListener("click", () => Lab.controller && Lab.controller.abort());
  const enterSends = (action) => (event) => { if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); action(); } };
  $("message").addEventListener("keydown", enterSends(Lab.send));
  $("ab-message").addEventListener("keydown", enterSends(Lab.abSend));
  $("ab-send").addEventListener("click", Lab.abSend);
  $("save").addEventListener("click", () => Lab.saveFile(false));
  $("save-name").addEventListener("keydown", enterSends(() => Lab.saveFile(false)));
  $("download").addEventListener("click", Lab.downloadFile);
  $("load-file").addEventListener("click", Lab.loadFile);
  $("run-close").addEventListener("click", () => $("run-dialog").close());
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => Lab.showView(tab.dataset.view));
  $("review-start").addEventListener("click", Lab.startReview);
  document.addEventListener("keydown", Lab.reviewKey);
};

Lab.showView = function (name) {
  for (const tab of document.querySelectorAll(".tab")) tab.setAttribute("aria-pressed", String(tab.dataset.view === name));
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== "view-" + name;
  if (name === "history") Lab.refreshHistory();
};

Lab.boot().then(() => { document.body.dataset.ready = "1"; }).catch((error) => { Lab.status("could not load: " + error.message); });
