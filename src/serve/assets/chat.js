// The chat view: a conversation with the editors' prompt version, one
// turn at a time, Stop aborting the running one (its log is marked
// cancelled by the server).
"use strict";
Lab.conversation = [];
Lab.controller = null;

Lab.send = async function () {
  const text = Lab.$("message").value.trim();
  if (!text || Lab.controller) return;
  let body;
  try { body = Lab.requestBody(Lab.conversation.concat([{ role: "user", text }]), Lab.overrides()); } catch (error) { Lab.status(error.message); return; }
  Lab.conversation.push({ role: "user", text });
  Lab.$("transcript").append(Lab.el("div", "msg user", text));
  Lab.$("message").value = "";
  const view = Lab.assistantView(Lab.$("transcript"));
  Lab.controller = new AbortController();
  Lab.setBusy(true);
  try {
    const answer = await Lab.runTurn(body, view, Lab.controller.signal);
    if (answer) Lab.conversation.push({ role: "assistant", text: answer }); else Lab.conversation.pop();
  } finally {
    Lab.controller = null;
    Lab.setBusy(false);
    Lab.refreshRuns();
  }
};

Lab.setBusy = function (busy) {
  Lab.$("send").disabled = busy;
  Lab.$("stop").disabled = !busy;
  Lab.status(busy ? "streaming…" : "");
};
