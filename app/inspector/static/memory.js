// A user's memory: a search box (keyword, meaning or both) and its results,
// best first; without a question, every memory, the last added first, page
// by page (docs/api.md, "Listing memories"). Each search result says which
// side found it (`matchedBy`) and its score: its relevance by meaning when
// that side found it, else the share of the question's terms it holds
// (docs/api.md, "Memory").

import { get, userPath } from "./api.js";
import { el, json } from "./dom.js";
import { href } from "./router.js";

const LIMIT = 50;
const PAGE = 50;
const MODES = [
  ["hybrid", "both (keywords and meaning)"],
  ["keyword", "keywords"],
  ["semantic", "meaning"],
];

const SIDES = new Set(["keyword", "meaning", "both"]);
const SCORE_TITLES = {
  keyword: "share of the question's terms it holds",
  meaning: "relevance by meaning",
  both: "relevance by meaning",
};

function textOf(memory) {
  return (memory?.content?.parts ?? [])
    .map((part) => (typeof part?.text === "string" ? part.text : json(part, 0)))
    .join("\n");
}

export async function memoryView(main, route) {
  const { app, user, query } = route;
  const mode = query.mode ?? "hybrid";
  const input = el("input", { name: "q", value: query.q ?? "", placeholder: "a question", "aria-label": "Search memory", dataset: { search: "" } });
  const select = el("select", { name: "mode", "aria-label": "Search mode" }, MODES.map(([value, label]) => el("option", { value, text: label, selected: value === mode })));
  const form = el("form", { class: "inline" }, input, select, el("button", { type: "submit", class: "primary", text: "Search" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = href({ app, user, memory: true, query: { q: input.value, mode: select.value } });
  });
  main.append(
    el("h1", {}, "Memory of ", el("code", { text: user }), " in ", el("code", { text: app })),
    el("p", { class: "muted", text: "Ask a question to see what an agent's memory tool would get; without one, every memory is listed." }),
    form,
  );
  if (!query.q) {
    await memoryList(main, app, user);
    input.focus();
    return null;
  }
  const found = await get(`${userPath(app, user)}/memory`, { query: query.q, mode, limit: LIMIT });
  const memories = found.memories ?? [];
  const modeLabel = MODES.find(([value]) => value === mode)?.[1] ?? mode;
  main.append(
    el("p", { class: "muted", text: `${memories.length} found by ${modeLabel}, best first.` }),
    el("ol", { class: "memories" }, memories.map((memory, index) => memoryItem(memory, index, app, user))),
  );
  return null;
}

// Every memory of the user, the last added first ("More" fetches the next page).
async function memoryList(main, app, user) {
  const list = el("ol", { class: "memories", dataset: { listing: "" } });
  const note = el("p", { class: "muted" });
  const more = el("button", { type: "button", class: "more", text: "More", hidden: true });
  main.append(note, list, more);
  let token = null;
  let count = 0;
  async function next() {
    more.disabled = true;
    const page = await get(`${userPath(app, user)}/memory/entries`, { pageSize: PAGE, pageToken: token ?? undefined });
    for (const memory of page.memories ?? []) {
      list.append(memoryItem(memory, count, app, user));
      count += 1;
    }
    token = page.nextPageToken ?? null;
    more.hidden = token === null;
    more.disabled = false;
    note.textContent = count ? `${count}${token ? " so far" : ""}, the last added first.` : "No memory.";
  }
  more.addEventListener("click", next);
  await next();
}

function memoryItem(memory, index, app, user) {
  const metadata = memory.customMetadata ?? {};
  const sessionId = metadata.sessionId;
  // As the API gives them; a value it does not document is shown as text, unstyled.
  const matched = typeof memory.matchedBy === "string" ? memory.matchedBy : null;
  const side = SIDES.has(matched) ? matched : null;
  const score = typeof memory.score === "number" ? memory.score : null;
  return el(
    "li",
    { class: "memory", dataset: { memoryId: memory.id ?? "" } },
    el(
      "div",
      { class: "memory-head" },
      el("span", { class: "rank", text: `#${index + 1}` }),
      matched ? el("span", { class: `chip mode ${side ?? ""}`, title: "found by", text: matched }) : null,
      score !== null ? el("span", { class: "chip score", title: side ? SCORE_TITLES[side] : "score", text: `score ${score.toFixed(3)}` }) : null,
      el("span", { class: "author", text: memory.author ?? "" }),
      el("span", { class: "time", text: memory.timestamp ?? "" }),
      sessionId ? el("a", { href: href({ app, user, session: sessionId }), text: `session ${sessionId}` }) : null,
    ),
    el("pre", { class: "text", text: textOf(memory) }),
    el("details", { class: "raw" }, el("summary", { text: "Raw JSON" }), el("pre", { text: json(memory) })),
  );
}

