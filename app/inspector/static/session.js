// A session: its labels, expiry and revision, its events (loaded page by
// page into the virtual timeline), the selected event beside them, the
// current state, and the session's live stream; actions (fork, delete,
// labels) behind a confirmation, each a call to the public API.

import { request, sessionPath } from "./api.js";
import { labelChips, parseLabels } from "./browse.js";
import { clear, confirmDialog, el, formatTime, json } from "./dom.js";
import { eventDetail } from "./event_detail.js";
import { href } from "./router.js";
import { follow } from "./sse.js";
import { StateTimeline } from "./state.js";
import { Timeline } from "./timeline.js";

const EVENTS_PAGE = 1000;

export async function sessionView(main, route, context) {
  const { app, user, session: id } = route;
  const path = sessionPath(app, user, id);
  const head = await request(path, { query: { numRecentEvents: 1 } });
  let session = head.data;
  let revision = head.revision;
  const states = new StateTimeline();
  const events = [];
  const known = new Set();
  let selectedId = route.query.event ?? null;

  const header = el("div", { class: "session-head" });
  const progress = el("p", { class: "muted progress", role: "status" });
  const detail = el("div", { class: "detail", "aria-live": "polite" });
  const current = el("details", { class: "current" });
  const banner = el("p", { class: "banner", hidden: true, role: "alert" });

  const timeline = new Timeline({
    onSelect(index) {
      const event = events[index];
      selectedId = event.id;
      history.replaceState(null, "", href({ app, user, session: id, query: { event: event.id } }));
      clear(detail).append(eventDetail(event, index, events.length, states, actions));
    },
  });

  const actions = {
    async fork(event) {
      const values = await confirmDialog({
        title: "Fork this session",
        message: `A new session with the events up to and including ${event.id}, and the state as it was then.`,
        fields: [{ name: "sessionId", label: "New session id (empty: a new uuid)", placeholder: "optional" }],
        confirm: "Fork",
      });
      if (!values) return;
      const body = { upToEventId: event.id };
      if (values.sessionId.trim()) body.sessionId = values.sessionId.trim();
      try {
        const forked = await request(`${path}/fork`, { method: "POST", body });
        location.hash = href({ app, user, session: forked.data.id });
      } catch (error) {
        context.showError(error);
      }
    },
    async remove() {
      const values = await confirmDialog({
        title: "Delete this session",
        message: `Session ${id} of ${user} and its ${events.length} events are deleted for good.`,
        confirm: "Delete",
        danger: true,
      });
      if (!values) return;
      try {
        await request(path, { method: "DELETE" });
        location.hash = href({ app, user });
      } catch (error) {
        context.showError(error);
      }
    },
    async labels() {
      const text = Object.entries(session.labels ?? {}).map(([key, value]) => `${key}:${value}`).join("\n");
      const values = await confirmDialog({
        title: "Edit labels",
        message: "One key:value a line (lowercase letters, digits, _ and -). The labels are replaced whole.",
        fields: [{ name: "labels", label: "Labels", value: text, multiline: true }],
        confirm: "Save labels",
      });
      if (!values) return;
      try {
        const patched = await request(path, { method: "PATCH", body: { labels: parseLabels(values.labels) } });
        session = patched.data;
        showHeader();
      } catch (error) {
        context.showError(error);
      }
    },
  };

  function showHeader() {
    clear(header).append(
      el("h1", {}, "Session ", el("code", { text: id })),
      el(
        "dl",
        { class: "facts" },
        el("dt", { text: "user" }), el("dd", { text: user }),
        el("dt", { text: "revision" }), el("dd", { class: "revision", text: revision ?? "" }),
        el("dt", { text: "events" }), el("dd", { class: "count", text: events.length }),
        el("dt", { text: "last update" }), el("dd", { text: formatTime(session.lastUpdateTime) }),
        el("dt", { text: "expires" }), el("dd", { text: session.expireTime ?? "never" }),
        el("dt", { text: "labels" }), el("dd", { class: "labels" }, labelChips(session.labels)),
      ),
      el(
        "div",
        { class: "buttons" },
        el("button", { type: "button", text: "Edit labels…", onclick: actions.labels }),
        el("button", { type: "button", class: "danger", text: "Delete…", onclick: actions.remove }),
        el("a", { href: href({ app, user, memory: true }), text: "Memory" }),
      ),
    );
    // Keys whose value now is not what this session's events left: given at
    // create, or (app:, user:) written by another session.
    const now = session.state ?? {};
    const replayed = events.length ? states.stateAt(events.length - 1) : {};
    const outside = Object.keys(now)
      .filter((key) => JSON.stringify(now[key]) !== JSON.stringify(replayed[key]))
      .sort();
    clear(current).append(
      el("summary", {
        text: `Current state (as the API has it now)${outside.length ? `: ${outside.length} not from these events` : ""}`,
      }),
      outside.length
        ? el(
            "table",
            { class: "state outside" },
            el("thead", {}, el("tr", {}, el("th", { text: "key" }), el("th", { text: "now" }), el("th", { text: "after the last event" }))),
            el("tbody", {}, outside.map((key) =>
              el("tr", { dataset: { key } }, el("th", { scope: "row", text: key }), el("td", {}, el("code", { text: json(now[key], 0) })), el("td", {}, el("code", { text: key in replayed ? json(replayed[key], 0) : "—" }))),
            )),
          )
        : null,
      el("pre", { text: json(now) }),
    );
  }

  function add(event) {
    if (known.has(event.id)) return false;
    known.add(event.id);
    events.push(event);
    states.push(event);
    return true;
  }

  showHeader();
  main.append(header, banner, el("div", { class: "session-grid" }, el("section", { class: "events" }, progress, timeline.node), detail), current);

  // Every page of events, oldest first, drawn as it comes.
  let token = null;
  do {
    const page = await request(`${path}/events`, { query: { order: "asc", pageSize: EVENTS_PAGE, pageToken: token } });
    for (const event of page.data.events) add(event);
    token = page.data.nextPageToken ?? null;
    progress.textContent = token ? `Loading… ${events.length} events` : `${events.length} events`;
    timeline.setEvents(events);
  } while (token);
  showHeader();
  const chosen = selectedId ? events.findIndex((event) => event.id === selectedId) : -1;
  if (events.length) timeline.select(chosen >= 0 ? chosen : events.length - 1);
  else detail.append(el("p", { class: "muted", text: "No events yet: new ones appear here live." }));
  main.dataset.loaded = "true";

  const stream = follow(`${path}/events/stream`, {
    lastEventId: revision,
    onStatus: context.setLive,
    onMessage(message) {
      let data = null;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      if (message.id !== null && /^\d+$/.test(message.id)) revision = Number(message.id);
      if (message.event === "appended") {
        const following = timeline.atEnd() || timeline.selected === events.length - 1;
        if (add(data)) {
          timeline.fresh.add(data.id);
          session.lastUpdateTime = data.timestamp;
          if (data.actions?.stateDelta) Object.assign((session.state ??= {}), data.actions.stateDelta);
          timeline.setEvents(events);
          if (following) timeline.select(events.length - 1);
        }
      } else if (message.event === "removed") {
        const gone = new Set(data.removedEventIds ?? []);
        const kept = events.filter((event) => !gone.has(event.id));
        events.length = 0;
        events.push(...kept);
        for (const removedId of gone) known.delete(removedId);
        states.reset(events);
        timeline.setEvents(events, { replaced: true });
        timeline.select(Math.min(timeline.selected, events.length - 1));
        refresh();
      } else if (message.event === "deleted") {
        banner.hidden = false;
        banner.textContent = "This session was deleted (or expired): what is shown is what it was.";
        context.setLive("stopped");
        return "stop";
      }
      progress.textContent = `${events.length} events`;
      showHeader();
      return undefined;
    },
  });

  async function refresh() {
    try {
      const fresh = await request(path, { query: { numRecentEvents: 1 } });
      session = fresh.data;
      showHeader();
    } catch {
      // The stream says when the session is gone.
    }
  }

  return { stop: () => stream.stop() };
}
