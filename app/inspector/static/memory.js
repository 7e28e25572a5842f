// A user's memory: a search box (keyword, meaning or both) and its results,
// best first. The API has no listing of every memory, only search, and a
// result carries no score: a hybrid search is asked again by keywords alone
// and by meaning alone, so that each result says which side found it and its
// rank there (a result's own `score`, should the API add one, is shown too).

import { get, userPath } from "./api.js";
import { el, json } from "./dom.js";
import { href } from "./router.js";

const LIMIT = 50;
const MODES = [
  ["hybrid", "both (keywords and meaning)"],
  ["keyword", "keywords"],
  ["semantic", "meaning"],
];

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
    el("p", { class: "muted", text: "The API finds memories by search only: ask a question to see what an agent's memory tool would get." }),
    form,
  );
  if (!query.q) {
    input.focus();
    return null;
  }
  const search = (asked) => get(`${userPath(app, user)}/memory`, { query: query.q, mode: asked, limit: LIMIT });
  const ranks = async (asked) => {
    try {
      const side = await search(asked);
      return new Map((side.memories ?? []).map((memory, index) => [memory.id, index + 1]));
    } catch {
      return new Map(); // semantic_search_off, embedder_unavailable: that side found nothing
    }
  };
  const [found, byKeyword, byMeaning] = await Promise.all([
    search(mode),
    mode === "hybrid" ? ranks("keyword") : null,
    mode === "hybrid" ? ranks("semantic") : null,
  ]);
  const memories = found.memories ?? [];
  const sideOf = (memory) => {
    if (mode !== "hybrid") return mode === "semantic" ? "meaning" : "keyword";
    const kw = byKeyword.has(memory.id);
    const meaning = byMeaning.has(memory.id);
    return kw && meaning ? "both" : kw ? "keyword" : meaning ? "meaning" : "hybrid";
  };
  const rankText = (memory) => {
    if (mode !== "hybrid") return null;
    const bits = [];
    if (byKeyword.has(memory.id)) bits.push(`keyword #${byKeyword.get(memory.id)}`);
    if (byMeaning.has(memory.id)) bits.push(`meaning #${byMeaning.get(memory.id)}`);
    return bits.length ? bits.join(" · ") : null;
  };
  const modeLabel = MODES.find(([value]) => value === mode)?.[1] ?? mode;
  main.append(
    el("p", { class: "muted", text: `${memories.length} found by ${modeLabel}, best first.` }),
    el(
      "ol",
      { class: "memories" },
      memories.map((memory, index) => {
        const metadata = memory.customMetadata ?? {};
        const sessionId = metadata.sessionId;
        // Fields a search result may carry about its match; shown when present.
        const matched = memory.mode ?? memory.matchedBy ?? sideOf(memory);
        const score = memory.score ?? null;
        const ranked = rankText(memory);
        return el(
          "li",
          { class: "memory", dataset: { memoryId: memory.id ?? "" } },
          el(
            "div",
            { class: "memory-head" },
            el("span", { class: "rank", text: `#${index + 1}` }),
            el("span", { class: `chip mode ${matched}`, title: "found by", text: matched }),
            ranked ? el("span", { class: "chip rank-by", title: "rank when searched by one side alone", text: ranked }) : null,
            score !== null ? el("span", { class: "chip score", text: `score ${Number(score).toFixed(3)}` }) : null,
            el("span", { class: "author", text: memory.author ?? "" }),
            el("span", { class: "time", text: memory.timestamp ?? "" }),
            sessionId ? el("a", { href: href({ app, user, session: sessionId }), text: `session ${sessionId}` }) : null,
          ),
          el("pre", { class: "text", text: textOf(memory) }),
          el("details", { class: "raw" }, el("summary", { text: "Raw JSON" }), el("pre", { text: json(memory) })),
        );
      }),
    ),
  );
  return null;
}

