// One event beside the timeline: who, when, its text, its function calls and
// responses (collapsed), its state delta by scope, and the merged state as of
// this event with the keys it added, changed or removed marked; the raw JSON
// on demand.

import { el, formatTime, json } from "./dom.js";
import { SCOPES, byScope, changesOf, deltaOf, scopeOf } from "./state.js";

const SCOPE_TITLES = { app: "app:", user: "user:", session: "session", temp: "temp:" };

function value(node) {
  const text = json(node);
  return text !== undefined && text.length > 120
    ? el("details", { class: "value" }, el("summary", { text: text.slice(0, 100) + "…" }), el("pre", { text }))
    : el("code", { class: "value", text: text ?? "undefined" });
}

function part(item) {
  if (typeof item?.text === "string") return el("pre", { class: item.thought ? "text thought" : "text", text: item.text });
  const call = item?.functionCall ?? item?.function_call;
  if (call) {
    return el("details", { class: "call" }, el("summary", {}, "→ call ", el("code", { text: call.name ?? "" })), el("pre", { text: json(call.args ?? {}) }));
  }
  const response = item?.functionResponse ?? item?.function_response;
  if (response) {
    return el("details", { class: "call" }, el("summary", {}, "← response of ", el("code", { text: response.name ?? "" })), el("pre", { text: json(response.response ?? response) }));
  }
  return el("details", { class: "call" }, el("summary", { text: `part: ${Object.keys(item ?? {}).join(", ")}` }), el("pre", { text: json(item) }));
}

function deltaTable(changes) {
  const grouped = byScope(changes);
  const sections = [];
  for (const scope of [...SCOPES, "temp"]) {
    if (!grouped[scope].length) continue;
    sections.push(
      el("h4", { text: SCOPE_TITLES[scope] }),
      el(
        "table",
        { class: "delta" },
        el("tbody", {}, grouped[scope].map((change) =>
          el(
            "tr",
            { class: change.kind, dataset: { key: change.key } },
            el("th", { scope: "row", text: change.key }),
            el("td", { class: "kind", text: change.kind }),
            el("td", {}, change.before === undefined ? el("span", { class: "muted", text: "—" }) : value(change.before)),
            el("td", { class: "arrow", text: "→" }),
            el("td", {}, value(change.value)),
          ),
        )),
      ),
    );
  }
  return sections.length ? sections : [el("p", { class: "muted", text: "This event changes no state." })];
}

function mergedState(state, changes) {
  const kinds = new Map(changes.map((change) => [change.key, change.kind]));
  const keys = Object.keys(state).sort();
  if (!keys.length) return [el("p", { class: "muted", text: "No state from events yet." })];
  const sections = [];
  for (const scope of SCOPES) {
    const mine = keys.filter((key) => scopeOf(key) === scope);
    if (!mine.length) continue;
    sections.push(
      el("h4", { text: SCOPE_TITLES[scope] }),
      el("table", { class: "state" }, el("tbody", {}, mine.map((key) =>
        el(
          "tr",
          { class: kinds.get(key) ?? "", dataset: { key } },
          el("th", { scope: "row", text: key }),
          el("td", {}, value(state[key])),
          el("td", { class: "kind", text: kinds.get(key) ?? "" }),
        ),
      ))),
    );
  }
  return sections;
}

export function eventDetail(event, index, total, timeline, actions) {
  const before = timeline.stateAt(index - 1);
  const after = timeline.stateAt(index);
  const changes = changesOf(before, deltaOf(event));
  const facts = [
    ["id", event.id],
    ["author", event.author],
    ["invocation", event.invocationId ?? event.invocation_id],
    ["time", formatTime(event.timestamp)],
    ["branch", event.branch],
    ["partial", event.partial],
    ["turn complete", event.turnComplete ?? event.turn_complete],
    ["error", event.errorCode ?? event.errorMessage],
  ].filter(([, shown]) => shown !== undefined && shown !== null && shown !== "");
  const parts = event?.content?.parts ?? [];
  return el(
    "article",
    { class: "event", "aria-label": `Event ${index + 1}` },
    el(
      "header",
      {},
      el("h2", { text: `Event ${index + 1} of ${total}` }),
      el("button", { type: "button", class: "fork", text: "Fork from here…", onclick: () => actions.fork(event) }),
    ),
    el("dl", { class: "facts" }, facts.map(([name, shown]) => [el("dt", { text: name }), el("dd", { text: String(shown) })])),
    parts.length ? el("section", { class: "content" }, el("h3", { text: "Content" }), parts.map(part)) : null,
    el("section", { class: "delta-section" }, el("h3", { text: "State delta" }), deltaTable(changes)),
    el(
      "section",
      { class: "merged-section" },
      el("h3", { text: "State as of this event" }),
      el("p", { class: "muted", text: "Replayed from the events' deltas: the state given at create is not in events." }),
      mergedState(after, changes),
    ),
    el("details", { class: "raw" }, el("summary", { text: "Raw JSON" }), el("pre", { text: json(event) })),
  );
}
