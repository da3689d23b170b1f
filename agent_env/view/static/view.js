// agent-env view: the table of episodes and one episode as a conversation, from the JSON API.
// Every value from a trajectory is set as text, never as markup.
"use strict";

const REFRESH_MS = 5000;
const $ = (selector) => document.querySelector(selector);
let lastListing = "";
let asked = 0;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// A number JSON cannot hold (a file's Infinity, -Infinity, NaN) comes as that word, a string: shown as it is.
const number = (value, shown) =>
  (value === null || value === undefined ? "–" : typeof value === "number" ? shown(value) : String(value));
const score = (value) => number(value, (v) => v.toFixed(2));
const seconds = (value) => number(value, (v) => `${v.toFixed(3)} s`);
const when = (epoch) => number(epoch || null, (v) => new Date(v * 1000).toLocaleString());
const badge = (kind, code) => el("span", { class: `badge ${kind}`, text: code ? `${kind} ${code}` : kind });

async function getJSON(url) {
  const answer = await fetch(url, { cache: "no-store" });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || `${answer.status}`);
  return body;
}

function query() {
  const params = new URLSearchParams();
  for (const [name, value] of new FormData($("#filters"))) {
    if (String(value).trim() !== "") params.set(name, String(value).trim());
  }
  return params.toString();
}

function fillChoices(choices) {
  for (const name of ["split", "toolset", "outcome"]) {
    const select = $(`#filters [name=${name}]`);
    const chosen = select.value;
    select.replaceChildren(el("option", { value: "", text: "any" }),
      ...choices[name].map((value) => el("option", { value, text: value })));
    select.value = choices[name].includes(chosen) ? chosen : "";
  }
  $("#task-ids").replaceChildren(...choices.task.map((value) => el("option", { value })));
}

function episodeRow(e) {
  const open = () => { location.hash = `#/episode/${encodeURIComponent(e.id)}`; };
  const who = [e.client, e.model].filter(Boolean).join(" / ") || e.recorded_by;
  const row = el("tr", { "data-id": e.id },
    el("td", {}, el("a", { href: `#/episode/${encodeURIComponent(e.id)}`, text: e.task })),
    el("td", { text: `${e.split}/${e.index}` }),
    el("td", { text: e.toolset }),
    el("td", {}, badge(e.outcome, e.code)),
    el("td", { class: "num score", text: score(e.score) }),
    el("td", { class: "num calls", text: String(e.tool_calls) }),
    el("td", { class: `num failures${e.failures ? " some" : ""}`, text: String(e.failures) }),
    el("td", { text: who }),
    el("td", { text: when(e.started_at) }),
    el("td", { class: "num", text: seconds(e.total_s) }));
  row.addEventListener("click", (event) => { if (event.target.tagName !== "A") open(); });
  return row;
}

function showSkipped(skipped) {
  const badgeNode = $("#skipped");
  const details = $("#skipped-lines");
  badgeNode.hidden = details.hidden = skipped.count === 0;
  badgeNode.textContent = `${skipped.count} skipped (not trajectories)`;
  details.querySelector("summary").textContent =
    `${skipped.count} skipped: lines that are not trajectories of this schema, files not read`;
  // Line 0 is a whole file left unread (a link, a FIFO, a folder named *.jsonl ...).
  details.querySelector("ul").replaceChildren(...skipped.lines.map((s) =>
    el("li", { text: s.line ? `${s.file}:${s.line}: ${s.why}` : `${s.file}: ${s.why}` })));
}

async function showList() {
  const mine = ++asked;
  try {
    const listing = await getJSON(`/api/episodes?${query()}`);
    const text = JSON.stringify(listing);
    if (mine !== asked || text === lastListing) return;
    lastListing = text;
    $("#problem").hidden = true;
    $("#folder").textContent = listing.folder;
    fillChoices(listing.choices);
    showSkipped(listing.skipped);
    $("#count").textContent = `${listing.episodes.length} of ${listing.total} episodes`;
    $("#episodes tbody").replaceChildren(...listing.episodes.map(episodeRow));
  } catch (error) {
    if (mine !== asked) return;
    lastListing = "";
    $("#problem").hidden = false;
    $("#problem").textContent = error.message;
  }
}

function fact(name, value) {
  return [el("dt", { text: name }), el("dd", {}, value)];
}

function message(kind, who, text) {
  return el("div", { class: `message ${kind}` }, el("div", { class: "who", text: who }), el("pre", { text }));
}

function call(c) {
  const failed = c.error_code !== null && c.error_code !== undefined;
  const head = el("div", { class: "who" }, "call ", el("span", { class: "tool", text: c.tool }),
    c.seconds !== null && c.seconds !== undefined ? ` · ${seconds(c.seconds)}` : "");
  const node = el("div", { class: `call ${failed ? "failed" : "ok"}` }, head,
    el("pre", { class: "arguments", text: JSON.stringify(c.arguments, null, 2) }));
  if (failed) {
    node.append(el("div", { class: "error-mark", text: `✗ error ${c.error_code}` }),
      el("pre", { class: "error", text: c.error || "" }));
  } else {
    node.append(el("div", { class: "who", text: "result" }), el("pre", { class: "result", text: c.result ?? "" }));
  }
  return node;
}

function turn(t) {
  const node = el("section", { class: "turn" }, el("h3", { text: `turn ${t.turn}` }),
    t.prompt_by === "simulated user"
      ? message("user simulated", "user (simulated)", t.prompt)
      : message("user", "user", t.prompt),
    ...t.calls.map(call));
  if (t.invalid_tool_calls) {
    node.append(message("noreply", "unparsed tool calls", `${t.invalid_tool_calls} replies meant as tool calls did not parse`));
  }
  node.append(t.reply === null
    ? message("noreply", "no reply", "the episode ended within this turn")
    : message("reply", "reply", t.reply));
  return node;
}

// What a verifier said beside its score (a test script's last lines) is a row of its own below it.
// A verifier is named as the server recorded it (a function verifier by its function), else by type.
function verifiers(t) {
  const rows = t.verifiers.flatMap((v) => [el("tr", { class: "verifier" },
    el("td", { text: v.name || v.type }), el("td", { class: "num", text: String(v.weight) }),
    el("td", { class: "num verifier-score", text: score(v.score) })),
  v.detail ? el("tr", { class: "verifier-said" }, el("td", { colspan: "3" },
    el("div", { class: "who", text: `${v.name || v.type} said` }), el("pre", { class: "verifier-detail", text: v.detail }))) : null]
    .filter((row) => row !== null));
  return el("table", { class: "verifiers" },
    el("thead", {}, el("tr", {}, el("th", { text: "verifier" }), el("th", { class: "num", text: "weight" }),
      el("th", { class: "num", text: "score" }))),
    el("tbody", {}, ...rows),
    el("tfoot", {}, el("tr", {}, el("td", { text: "episode score" }), el("td"),
      el("td", { class: "num episode-score", text: score(t.score) }))));
}

// Eval plays over the wire: the server's verify and teardown happen out of its sight.
function timings(t, recordedBy) {
  const parts = [["deploy", t.deploy_s], ["verify", t.verify_s], ["teardown", t.teardown_s], ["total", t.total_s]];
  const shown = (value) => (value === null && recordedBy === "eval" ? "not measured by eval" : seconds(value));
  return el("div", { class: "timings" },
    ...parts.map(([name, value]) => el("span", {}, `${name} `, el("b", { text: shown(value) }))));
}

async function showEpisode(id) {
  const view = $("#episode-view");
  view.replaceChildren(el("a", { class: "back", href: "#/", text: "← all episodes" }));
  let answer;
  try {
    answer = await getJSON(`/api/episodes/${encodeURIComponent(id)}`);
  } catch (error) {
    view.append(el("p", { class: "problem", text: error.message }));
    return;
  }
  const t = answer.trajectory;
  const who = [t.client, t.model].filter(Boolean).join(" / ") || "–";
  const parts = [
    el("h2", { text: t.task.id }),
    el("dl", { class: "facts" },
      ...fact("split/index", `${t.task.split}/${t.task.index}`), ...fact("toolset", t.task.toolset),
      ...fact("outcome", badge(t.outcome.kind, t.outcome.code)), ...fact("score", score(t.score)),
      ...fact("tool calls", `${answer.tool_calls} (${answer.failures} failed)`), ...fact("client / model", who),
      ...fact("started", when(t.started_at)), ...fact("recorded by", `${t.recorded_by}, in ${answer.file}`)),
    t.outcome.reason ? el("p", { class: `reason ${t.outcome.kind}`, text: t.outcome.reason }) : null,
    el("h3", { text: "timings" }), timings(t.timings, t.recorded_by),
    el("h3", { text: "conversation" }),
    t.system_prompt ? message("system", "system prompt", t.system_prompt) : null,
    ...t.turns.map(turn),
    el("h3", { text: "verifiers" }), verifiers(t)];
  view.append(...parts.filter((part) => part !== null));
}

function route() {
  const match = location.hash.match(/^#\/episode\/(.+)$/);
  $("#list-view").hidden = Boolean(match);
  $("#episode-view").hidden = !match;
  if (match) showEpisode(decodeURIComponent(match[1]));
  else { lastListing = ""; showList(); }
}

$("#filters").addEventListener("input", () => showList());
$("#filters").addEventListener("reset", () => setTimeout(showList, 0));
$("#filters").addEventListener("submit", (event) => { event.preventDefault(); showList(); });
window.addEventListener("hashchange", route);
setInterval(() => { if (!$("#list-view").hidden) showList(); }, REFRESH_MS);
route();
