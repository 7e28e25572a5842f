// Apps, then users, then sessions: paged lists, newest first, with their
// counts; the sessions list filters by label and update time, shows a chosen
// state key as a title, and follows the user's live stream.

import { get, request, seg, userPath } from "./api.js";
import { clear, confirmDialog, el, formatTime, preview } from "./dom.js";
import { href } from "./router.js";
import { follow } from "./sse.js";

const PAGE = 50;

// A table whose rows come page by page ("More" fetches the next).
export function pagedTable({ columns, load, row, empty }) {
  const body = el("tbody");
  const more = el("button", { type: "button", class: "more", text: "More", hidden: true });
  const table = el(
    "table",
    { class: "list" },
    el("thead", {}, el("tr", {}, columns.map((name) => el("th", { scope: "col", text: name })))),
    body,
  );
  const note = el("p", { class: "muted" });
  let token = null;
  let count = 0;
  async function next(reset = false) {
    if (reset) {
      token = null;
      count = 0;
      clear(body);
    }
    more.disabled = true;
    const { items, nextPageToken } = await load(token);
    const rows = items.map(row);
    body.append(...rows);
    count += items.length;
    token = nextPageToken ?? null;
    more.hidden = token === null;
    more.disabled = false;
    note.textContent = count === 0 ? empty : `${count}${token ? "+" : ""} shown`;
    return rows;
  }
  more.addEventListener("click", () => next());
  return { node: el("div", {}, table, note, more), next, body };
}

function openBox(label, placeholder, onOpen) {
  const input = el("input", { placeholder, "aria-label": label });
  const form = el("form", { class: "inline" }, el("label", {}, label, input), el("button", { type: "submit", text: "Open" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value.trim()) onOpen(input.value.trim());
  });
  return { form, input };
}

export async function appsView(main) {
  const open = openBox("App", "app name", (app) => (location.hash = href({ app })));
  const table = pagedTable({
    columns: ["app", "sessions"],
    empty: "No app has sessions yet.",
    load: async (pageToken) => {
      const data = await get("/apps", { pageSize: PAGE, pageToken });
      return { items: data.apps, nextPageToken: data.nextPageToken };
    },
    row: (app) =>
      el(
        "tr",
        {},
        el("td", {}, el("a", { href: href({ app: app.appName }), text: app.appName })),
        el("td", { class: "number", text: app.sessionCount }),
      ),
  });
  await table.next();
  main.append(el("h1", { text: "Apps" }), open.form, table.node);
  return null;
}

export async function usersView(main, route) {
  const { app } = route;
  const open = openBox("User", "user id", (user) => (location.hash = href({ app, user })));
  open.input.dataset.search = "";
  const table = pagedTable({
    columns: ["user", "sessions", "last update", ""],
    empty: "No user of this app has sessions.",
    load: async (pageToken) => {
      const data = await get(`/apps/${seg(app)}/users`, { pageSize: PAGE, pageToken });
      return { items: data.users, nextPageToken: data.nextPageToken };
    },
    row: (user) =>
      el(
        "tr",
        {},
        el("td", {}, el("a", { href: href({ app, user: user.userId }), text: user.userId })),
        el("td", { class: "number", text: user.sessionCount }),
        el("td", { text: formatTime(user.lastUpdateTime) }),
        el("td", {}, el("a", { href: href({ app, user: user.userId, memory: true }), text: "memory" })),
      ),
  });
  // The app's latest sessions, whoever their user: where a fresh failure is.
  const latest = pagedTable({
    columns: ["session", "user", "last update", "labels"],
    empty: "No session yet.",
    load: async (pageToken) => {
      const data = await get(`/apps/${seg(app)}/sessions`, { order: "desc", pageSize: 20, pageToken, includeState: "false" });
      return { items: data.sessions, nextPageToken: data.nextPageToken };
    },
    row: (session) =>
      el(
        "tr",
        { dataset: { session: session.id } },
        el("td", {}, el("a", { href: href({ app, user: session.userId, session: session.id }), text: session.id })),
        el("td", {}, el("a", { href: href({ app, user: session.userId }), text: session.userId })),
        el("td", { text: formatTime(session.lastUpdateTime) }),
        el("td", {}, labelChips(session.labels)),
      ),
  });
  await Promise.all([table.next(), latest.next()]);
  main.append(
    el("h1", {}, "Users of ", el("code", { text: app })),
    el("p", {}, el("a", { href: href({ app, thread: "" }), text: "LangGraph threads of this app →" })),
    open.form,
    table.node,
    el("h2", { class: "spaced", text: "Latest sessions, every user" }),
    latest.node,
  );
  return null;
}

const toEpoch = (local) => (local ? String(new Date(local).getTime() / 1000) : undefined);

function labelFilters(text) {
  return (text ?? "")
    .split(/[\s,]+/)
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => part.replace("=", ":"));
}

export async function sessionsView(main, route, context) {
  const { app, user, query } = route;
  const base = userPath(app, user);
  const field = (name, label, props = {}) => el("label", {}, label, el("input", { name, value: query[name] ?? "", ...props }));
  const filters = el(
    "form",
    { class: "filters" },
    field("label", "Labels", { placeholder: "env:prod team" }),
    field("after", "Updated after", { type: "datetime-local", step: 1 }),
    field("before", "Updated before", { type: "datetime-local", step: 1 }),
    field("title", "Title from state key", { placeholder: "e.g. title" }),
    el("button", { type: "submit", text: "Apply" }),
  );
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(filters));
    location.hash = href({ app, user, query: values });
  });
  const open = openBox("Session id", "open a session by its id", (session) => (location.hash = href({ app, user, session })));
  open.input.dataset.search = "";
  const titleKey = query.title;
  const table = pagedTable({
    columns: ["session", ...(titleKey ? [titleKey] : []), "last update", "labels", "expires"],
    empty: "No session matches.",
    load: async (pageToken) => {
      const data = await get(`${base}/sessions`, {
        order: "desc",
        pageSize: PAGE,
        pageToken,
        includeState: titleKey ? "true" : "false",
        label: labelFilters(query.label),
        updatedAfter: toEpoch(query.after),
        updatedBefore: toEpoch(query.before),
      });
      return { items: data.sessions, nextPageToken: data.nextPageToken };
    },
    row: (session) =>
      el(
        "tr",
        { dataset: { session: session.id } },
        el("td", {}, el("a", { href: href({ app, user, session: session.id }), text: session.id })),
        titleKey ? el("td", { class: "title", text: session.state && titleKey in session.state ? preview(session.state[titleKey]) : "" }) : null,
        el("td", { text: formatTime(session.lastUpdateTime) }),
        el("td", {}, labelChips(session.labels)),
        el("td", { text: session.expireTime ? String(session.expireTime) : "" }),
      ),
  });
  await table.next();
  const create = el("button", { type: "button", text: "New session…", onclick: () => newSession(app, user, context) });
  main.append(
    el("h1", {}, "Sessions of ", el("code", { text: user }), " in ", el("code", { text: app })),
    el("p", { class: "buttons" }, el("a", { href: href({ app, user, memory: true }), text: "Memory of this user →" }), create),
    open.form,
    filters,
    table.node,
  );
  // The user's stream: any change reloads the first page (a burst once).
  let pending = null;
  const stream = follow(`${base}/sessions/stream`, {
    onStatus: context.setLive,
    onMessage: (message) => {
      if (pending) return;
      pending = setTimeout(async () => {
        pending = null;
        try {
          const rows = await table.next(true);
          let changed = null;
          try {
            changed = JSON.parse(message.data)?.sessionId;
          } catch {
            changed = null;
          }
          for (const row of rows) if (row.dataset.session === changed) row.classList.add("flash");
        } catch (error) {
          context.showError(error);
        }
      }, 250);
    },
  });
  return {
    stop() {
      stream.stop();
      clearTimeout(pending);
    },
  };
}

export function labelChips(labels) {
  return Object.entries(labels ?? {}).map(([key, value]) => el("span", { class: "chip", text: value === "" ? key : `${key}:${value}` }));
}

// `key:value` (or `key=value`) a line or by commas, as the labels dialog takes them.
export function parseLabels(text) {
  const labels = {};
  for (const line of text.split(/[\n,]+/)) {
    const item = line.trim();
    if (!item) continue;
    const [key, ...rest] = item.split(/[:=]/);
    labels[key.trim()] = rest.join(":").trim();
  }
  return labels;
}

// A session with a chosen id, initial state and labels (POST .../sessions),
// for trying an agent from a known state.
async function newSession(app, user, context) {
  const values = await confirmDialog({
    title: "New session",
    message: `A session of ${user} in ${app}.`,
    fields: [
      { name: "sessionId", label: "Session id (empty: a new uuid)", placeholder: "optional" },
      { name: "state", label: "Initial state (a JSON object)", value: "{}", multiline: true },
      { name: "labels", label: "Labels (key:value a line)", value: "", multiline: true },
    ],
    confirm: "Create",
  });
  if (!values) return;
  let state;
  try {
    state = JSON.parse(values.state || "{}");
  } catch (error) {
    context.showError(new Error(`The initial state is not JSON: ${error.message}`));
    return;
  }
  const body = { state, labels: parseLabels(values.labels) };
  if (values.sessionId.trim()) body.sessionId = values.sessionId.trim();
  try {
    const made = await request(`${userPath(app, user)}/sessions`, { method: "POST", body });
    location.hash = href({ app, user, session: made.data.id });
  } catch (error) {
    context.showError(error);
  }
}
