// The events of a session as a virtual list: one fixed-height row per event,
// and only the rows in view (plus a margin) in the DOM, so that a session of
// 10,000 events scrolls as one of ten. Keyboard: ↑/↓ or j/k, Home/End,
// PageUp/PageDown move the selection.

import { clear, el, preview, shortTime } from "./dom.js";
import { deltaOf } from "./state.js";

const ROW = 30; // px; style.css gives .row the same height
const MARGIN = 10;

export function summaryOf(event) {
  const parts = event?.content?.parts ?? [];
  const bits = [];
  for (const part of parts) {
    if (typeof part?.text === "string") bits.push(part.thought ? `(thought) ${part.text}` : part.text);
    else if (part?.functionCall ?? part?.function_call) {
      const call = part.functionCall ?? part.function_call;
      bits.push(`→ ${call?.name ?? "call"}(${preview(call?.args ?? {}, 40)})`);
    } else if (part?.functionResponse ?? part?.function_response) {
      const response = part.functionResponse ?? part.function_response;
      bits.push(`← ${response?.name ?? "response"}`);
    } else bits.push(`[${Object.keys(part ?? {}).join(",") || "part"}]`);
  }
  if (event?.errorMessage ?? event?.error_message) bits.push(`error: ${event.errorMessage ?? event.error_message}`);
  if (!bits.length) {
    const keys = Object.keys(deltaOf(event));
    if (keys.length) bits.push(`state: ${keys.join(", ")}`);
    else if (event?.actions && Object.keys(event.actions).length) bits.push(`actions: ${Object.keys(event.actions).join(", ")}`);
  }
  return preview(bits.join("  "), 200);
}

export class Timeline {
  constructor({ onSelect }) {
    this.events = [];
    this.selected = -1;
    this.fresh = new Set();
    this.onSelect = onSelect;
    this.drawn = new Map(); // index -> its row, for the rows in the DOM
    this.spacer = el("div", { class: "spacer" });
    this.node = el(
      "div",
      { class: "timeline", role: "listbox", tabindex: 0, "aria-label": "Events, oldest first" },
      this.spacer,
    );
    this.node.addEventListener("scroll", () => this.draw());
    this.node.addEventListener("keydown", (event) => this.key(event));
    this.node.addEventListener("click", (event) => {
      const row = event.target.closest(".row");
      if (row) this.select(Number(row.dataset.index));
    });
    new ResizeObserver(() => this.draw()).observe(this.node);
  }

  // `replaced`: events before the end changed (a removal), so every row
  // drawn is drawn again; appends only add rows.
  setEvents(events, { replaced = false } = {}) {
    this.events = events;
    if (replaced) this.forget();
    this.spacer.style.height = `${events.length * ROW}px`;
    this.draw();
  }

  forget() {
    this.drawn.clear();
    clear(this.spacer);
  }

  atEnd() {
    return this.node.scrollTop + this.node.clientHeight >= this.spacer.offsetHeight - ROW * 2;
  }

  // The rows in view (and a margin) are in the DOM; rows scrolled out are
  // removed, rows scrolled in are made: a scroll costs the rows it reveals.
  draw() {
    const first = Math.max(0, Math.floor(this.node.scrollTop / ROW) - MARGIN);
    const last = Math.min(this.events.length, Math.ceil((this.node.scrollTop + this.node.clientHeight) / ROW) + MARGIN);
    for (const [index, row] of this.drawn) {
      if (index < first || index >= last) {
        row.remove();
        this.drawn.delete(index);
      }
    }
    const made = [];
    for (let index = first; index < last; index++) {
      if (!this.drawn.has(index)) {
        const row = this.row(index);
        this.drawn.set(index, row);
        made.push(row);
      }
    }
    this.spacer.append(...made);
  }

  row(index) {
    const event = this.events[index];
    const deltaKeys = Object.keys(deltaOf(event)).length;
    const classes = ["row"];
    if (index === this.selected) classes.push("selected");
    if (this.fresh.has(event.id)) classes.push("new");
    // A line above the first event of each invocation: a turn reads as one block.
    const invocation = event.invocationId ?? event.invocation_id;
    const previous = this.events[index - 1];
    if (index > 0 && invocation !== (previous?.invocationId ?? previous?.invocation_id)) classes.push("turn");
    const row = el(
      "div",
      {
        class: classes.join(" "),
        role: "option",
        id: `event-row-${index}`,
        "aria-selected": index === this.selected ? "true" : "false",
        dataset: { index: String(index), eventId: event.id },
      },
      el("span", { class: "index", text: index + 1 }),
      el("span", { class: "time", text: shortTime(event.timestamp) }),
      el("span", { class: `author ${event.author === "user" ? "user" : "agent"}`, text: event.author ?? "" }),
      el("span", { class: "summary", text: summaryOf(event) }),
      el("span", { class: "invocation", title: "invocation", text: invocation ?? "" }),
      deltaKeys ? el("span", { class: "badge", title: "state keys changed", text: `Δ${deltaKeys}` }) : null,
    );
    // Through the CSSOM: the page's CSP refuses style attributes.
    row.style.top = `${index * ROW}px`;
    return row;
  }

  select(index, { scroll = true } = {}) {
    if (!this.events.length) return;
    this.mark(this.selected, false);
    this.selected = Math.max(0, Math.min(this.events.length - 1, index));
    this.mark(this.selected, true);
    if (scroll) this.scrollTo(this.selected);
    this.draw();
    this.node.setAttribute("aria-activedescendant", `event-row-${this.selected}`);
    this.onSelect(this.selected);
  }

  mark(index, selected) {
    const row = this.drawn.get(index);
    if (!row) return;
    row.classList.toggle("selected", selected);
    row.setAttribute("aria-selected", selected ? "true" : "false");
  }

  scrollTo(index) {
    const top = index * ROW;
    if (top < this.node.scrollTop) this.node.scrollTop = top;
    else if (top + ROW > this.node.scrollTop + this.node.clientHeight) this.node.scrollTop = top + ROW - this.node.clientHeight;
  }

  key(event) {
    const page = Math.max(1, Math.floor(this.node.clientHeight / ROW) - 1);
    const moves = {
      ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, PageDown: page, PageUp: -page,
    };
    if (event.key in moves) this.select(this.selected + moves[event.key]);
    else if (event.key === "Home") this.select(0);
    else if (event.key === "End") this.select(this.events.length - 1);
    else return;
    event.preventDefault();
  }
}
