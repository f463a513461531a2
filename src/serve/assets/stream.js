// One turn's answer as it streams: POST /api/chat read as Server-Sent
// Events, drawn as the production front end draws it — activity chips
// first, the answer, client actions, the lookups, the done footer with
// votes. Used by the chat view and by each side of A/B.
"use strict";
Lab.readEvents = async function (stream, view) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of frame.split("\n")) {
        if (line.startsWith("data: ")) view.event(JSON.parse(line.slice(6)));
      }
    }
  }
};

// Runs one turn into `view`; resolves to the answer text ("" when none).
Lab.runTurn = async function (body, view, signal) {
  let response;
  try {
    response = await fetch("/api/chat", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal });
  } catch (error) {
    if (error.name === "AbortError") view.stopped(); else view.fail(error.message);
    return view.answer();
  }
  if (!response.ok) {
    const problem = await response.json().catch(() => ({ error: response.statusText }));
    view.fail(problem.error || String(response.status));
    return "";
  }
  try {
    await Lab.readEvents(response.body, view);
  } catch (error) {
    if (error.name === "AbortError") view.stopped(); else view.fail(error.message);
  }
  return view.answer();
};

Lab.assistantView = function (container) {
  const el = Lab.el;
  const box = el("div", "msg assistant");
  const chips = el("div", "chips");
  const answer = el("div", "answer");
  const actions = el("div", "actions");
  const lookups = el("details", "lookups");
  lookups.append(el("summary", null, "lookups (0)"));
  box.append(chips, answer, actions);
  container.append(box);
  const scroll = () => { container.scrollTop = container.scrollHeight; };
  let text = "";
  let count = 0;
  let finished = null;
  return {
    box,
    answer: () => text,
    done: () => finished,
    event(event) {
      switch (event.type) {
        case "text_delta": text += event.text; answer.textContent = text; break;
        case "activity": chips.append(el("span", "chip", event.label)); break;
        case "tool_result":
          count += 1;
          if (!lookups.isConnected) box.append(lookups);
          lookups.firstChild.textContent = "lookups (" + count + ")";
          lookups.append(el("div", null, event.tool + (event.ok ? "" : " (failed)") + (event.truncated ? " (truncated)" : "")), el("pre", null, event.result));
          break;
        case "client_action":
          actions.append(el("div", "action", event.action === "highlight_panel" ? "highlight panel: " + event.panel : "navigate to: " + event.to));
          break;
        case "done": finished = event; box.append(Lab.footer(event)); break;
        case "error": box.append(el("div", "error", event.message)); break;
      }
      scroll();
    },
    stopped() { box.append(el("div", "footer", "stopped")); },
    fail(message) { box.append(el("div", "error", message)); },
  };
};

Lab.footer = function (done) {
  const el = Lab.el;
  const foot = el("div", "footer");
  const u = done.usage;
  // A count the server did not report is null: shown as –, with the note.
  const count = (n) => n === null || n === undefined ? "–" : n;
  const unreported = u.usageUnreported ? " (usage not reported by the server (" + u.usageUnreported + (u.usageUnreported === 1 ? " call))" : " calls))") : "";
  foot.append(el("span", null, done.model + " · " + count(u.inputTokens) + " in / " + count(u.outputTokens) + " out / " + count(u.cacheReadTokens) + " cached" + unreported + " · turn " + done.turnId + " · prompt " + done.prompts.fingerprint + " "));
  foot.append(Lab.votes(done.turnId));
  return foot;
};

// Thumbs up and down for a recorded turn (POST /api/feedback).
Lab.votes = function (turnId, chosen) {
  const votes = Lab.el("span", "votes");
  for (const [vote, label, name] of [["up", "\u2713 Good", "thumbs up"], ["down", "\u2717 Bad", "thumbs down"]]) {
    const button = Lab.el("button", "vote-" + vote + (chosen === vote ? " chosen" : ""), label);
    button.type = "button";
    button.setAttribute("aria-label", name);
    button.title = name === "thumbs up" ? "a good answer (recorded beside the run log)" : "a bad answer (recorded beside the run log)";
    button.addEventListener("click", async () => {
      const answer = await Lab.postJson("/api/feedback", { turnId, vote });
      if (answer.ok) { votes.querySelectorAll("button").forEach((b) => b.classList.remove("chosen")); button.classList.add("chosen"); }
      else Lab.status(answer.body.error || "the vote was not recorded");
    });
    votes.append(button);
  }
  return votes;
};
