// promptlab reports: helpers shared by the runs and compare pages. Every
// string from the data reaches the DOM through createTextNode or an
// attribute value, never as markup.
"use strict";
const DATA = JSON.parse(document.getElementById("report-data").textContent);
const S = DATA.s;
const OUTCOMES = ["pass", "fail", "error", "no verdict"];

function str(index) {
  return index === null || index === undefined ? "" : S[index];
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "data") for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
    else node.setAttribute(key, String(value));
  }
  add(node, children);
  return node;
}

function add(node, child) {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) child.forEach((c) => add(node, c));
  else if (child instanceof Node) node.appendChild(child);
  else node.appendChild(document.createTextNode(String(child)));
}

// Attributes that make an element work like a button, by mouse or keyboard.
function clickable(handler, attrs) {
  return Object.assign({ tabindex: 0, role: "button", onclick: handler,
    onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); handler(); } } }, attrs);
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

function int(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

function pct(x) {
  return x === null || x === undefined ? "–" : (x * 100).toFixed(1) + "%";
}

function interval(pair) {
  return pair ? "[" + pct(pair[0]) + ", " + pct(pair[1]) + "]" : "";
}

function ms(n) {
  return n === null || n === undefined ? "–" : int(n) + " ms";
}

function badge(code) {
  return el("span", { class: "badge o" + code }, OUTCOMES[code]);
}

function numCell(key, value, text) {
  return el("td", { class: "num", data: { key: key, value: value === null ? "" : value } }, text);
}

function header(extra) {
  return [
    el("h1", null, DATA.title),
    el("div", { class: "meta" }, "generated " + DATA.generatedAt + " by promptlab " + DATA.toolVersion, extra ? " · " + extra : ""),
  ];
}

function select(id, label, options, onChange) {
  const node = el("select", { id: id, "aria-label": label, onchange: onChange },
    el("option", { value: "" }, label + ": all"),
    options.map(([value, text]) => el("option", { value: String(value) }, label + ": " + text)));
  return node;
}

function debounce(fn, delay) {
  let timer = null;
  return () => { clearTimeout(timer); timer = setTimeout(fn, delay); };
}

function markReady() {
  window.__renderMs = performance.now();
  document.body.dataset.ready = "1";
}
