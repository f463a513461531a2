// The page's shared helpers and state: element lookup, JSON calls, what
// is remembered across reloads (browser storage only), and the request
// options the setup column describes. Every text from the server or a
// claim is put in the page as text (textContent), never as markup.
"use strict";
const Lab = {
  catalog: null,
  defaults: {},
  $: (id) => document.getElementById(id),
  el(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  },
  async getJson(path) {
    const response = await fetch(path);
    const body = await response.json().catch(() => ({ error: response.statusText }));
    if (!response.ok) throw Object.assign(new Error(body.error || path + ": " + response.status), { status: response.status });
    return body;
  },
  // A JSON POST (serve takes only JSON); resolves to {ok, status, body}.
  async postJson(path, body) {
    const response = await fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const answer = await response.json().catch(() => ({ error: response.statusText }));
    return { ok: response.ok, status: response.status, body: answer };
  },
  storageKey: "promptlab.lab.v1",
  remembered() {
    try { return JSON.parse(localStorage.getItem(Lab.storageKey)) || {}; } catch (_) { return {}; }
  },
  remember(patch) {
    try { localStorage.setItem(Lab.storageKey, JSON.stringify(Object.assign(Lab.remembered(), patch))); } catch (_) { /* storage full or off: nothing is lost but the memory */ }
  },
  // The request's claim and options from the setup column; `overrides` is
  // the version's override map.
  requestBody(messages, overrides) {
    const body = {
      messages,
      capability: Lab.$("capability").value || undefined,
      brand: Lab.$("brand").value || undefined,
      locale: Lab.$("locale").value || undefined,
      screenActions: Lab.$("screen-actions").checked,
      voice: Lab.$("voice").checked,
      overrides,
    };
    const pasted = Lab.$("claim-json").value.trim();
    if (pasted) {
      try { body.claim = JSON.parse(pasted); } catch (error) { throw new Error("the pasted claim is not JSON: " + error.message); }
    } else {
      body.claimId = Lab.$("claim").value;
    }
    return body;
  },
  status(text) { Lab.$("status").textContent = text; },
};
