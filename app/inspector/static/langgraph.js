// LangGraph threads of an app: a paged list of the app's live threads, latest
// write first (one user's with the filter), each opening the thread's
// checkpoints, newest first; a thread may also be opened by its id. A
// checkpoint shows its metadata, channel versions, channel values and
// pending writes; values are the serializer's bytes (base64): their type and
// size, and a decoded view when the type is JSON or the bytes are text.

import { get, seg } from "./api.js";
import { pagedTable } from "./browse.js";
import { clear, el, formatTime, json } from "./dom.js";
import { href } from "./router.js";

const PAGE = 50;

function bytesOf(data) {
  try {
    return Uint8Array.from(atob(data), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}

function decoded(type, data) {
  if (data === null || data === undefined) return el("span", { class: "muted", text: "no bytes" });
  const bytes = bytesOf(data);
  if (bytes === null) return el("span", { class: "error", text: "not base64" });
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  if (type === "json") {
    try {
      return el("pre", { text: json(JSON.parse(text)) });
    } catch {
      // shown as text below
    }
  }
  const printable = [...text].filter((char) => char >= " " || char === "\n" || char === "\t").length;
  if (text.length && printable / text.length > 0.9) return el("pre", { text });
  const hex = [...bytes.slice(0, 256)].map((byte) => byte.toString(16).padStart(2, "0")).join(" ");
  return el("pre", { class: "hex", text: hex + (bytes.length > 256 ? " …" : "") });
}

function valueRow(label, type, data, extra = []) {
  const size = data ? bytesOf(data)?.length ?? 0 : 0;
  return el(
    "details",
    { class: "value-row" },
    el("summary", {}, el("code", { text: label }), " ", extra, el("span", { class: "chip", text: type ?? "?" }), el("span", { class: "muted", text: ` ${size} bytes` })),
    decoded(type, data),
  );
}

function checkpointDetail(checkpoint) {
  const values = checkpoint.channelValues ?? {};
  const channels = Array.isArray(values) ? values : Object.entries(values).map(([channel, value]) => ({ channel, ...value }));
  return el(
    "article",
    { class: "checkpoint" },
    el("h2", {}, "Checkpoint ", el("code", { text: checkpoint.checkpointId })),
    el(
      "dl",
      { class: "facts" },
      el("dt", { text: "namespace" }), el("dd", { text: checkpoint.checkpointNs === "" ? "(root)" : checkpoint.checkpointNs }),
      el("dt", { text: "parent" }), el("dd", { text: checkpoint.parentCheckpointId ?? "none" }),
    ),
    el("h3", { text: "Metadata" }),
    el("pre", { text: json(checkpoint.metadata) }),
    el("h3", { text: "Channel versions" }),
    el("pre", { text: json(checkpoint.channelVersions) }),
    el("h3", { text: "Channel values" }),
    channels.length ? channels.map((value) => valueRow(value.channel, value.type, value.data, value.version ? [el("span", { class: "muted", text: `v${value.version} ` })] : [])) : el("p", { class: "muted", text: "None stored with this checkpoint." }),
    checkpoint.checkpoint ? valueRow("checkpoint", checkpoint.checkpoint.type, checkpoint.checkpoint.data) : null,
    el("h3", { text: "Pending writes" }),
    (checkpoint.pendingWrites ?? []).length
      ? (checkpoint.pendingWrites ?? []).map((write) =>
          valueRow(write.channel, write.type, write.data, [el("span", { class: "muted", text: `task ${write.taskId} #${write.idx} ` })]),
        )
      : el("p", { class: "muted", text: "None." }),
    el("details", { class: "raw" }, el("summary", { text: "Raw JSON" }), el("pre", { text: json(checkpoint) })),
  );
}

export async function threadsView(main, route) {
  const { app, thread, query } = route;
  const input = el("input", { name: "thread", value: thread ?? "", placeholder: "thread id", "aria-label": "Thread id", dataset: { search: "" } });
  const ns = el("input", { name: "ns", value: query.ns ?? "", placeholder: "namespace (empty: all)", "aria-label": "Checkpoint namespace" });
  const form = el("form", { class: "inline" }, input, ns, el("button", { type: "submit", class: "primary", text: "Open thread" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value.trim()) location.hash = href({ app, thread: input.value.trim(), query: { ns: ns.value } });
  });
  main.append(el("h1", {}, "LangGraph threads of ", el("code", { text: app })), form);
  if (!thread) {
    await threadList(main, app, query);
    return null;
  }
  const list = el("ol", { class: "checkpoints" });
  const detail = el("div", { class: "detail" });
  const more = el("button", { type: "button", class: "more", text: "More", hidden: true });
  main.append(el("div", { class: "session-grid" }, el("section", {}, el("h2", { text: `Checkpoints of ${thread}, newest first` }), list, more), detail));
  const path = `/apps/${seg(app)}/threads/${seg(thread)}/checkpoints`;
  let token = null;
  let count = 0;
  const show = (checkpoint, item) => {
    for (const other of list.querySelectorAll(".selected")) other.classList.remove("selected");
    item.classList.add("selected");
    clear(detail).append(checkpointDetail(checkpoint));
    history.replaceState(null, "", href({ app, thread, query: { ns: query.ns, checkpoint: checkpoint.checkpointId } }));
  };
  async function next() {
    const page = await get(path, { checkpointNs: query.ns || undefined, limit: PAGE, pageToken: token });
    for (const checkpoint of page.checkpoints) {
      const button = el("button", { type: "button", class: "link" }, el("code", { text: checkpoint.checkpointId }), " ", el("span", { class: "muted", text: `step ${checkpoint.metadata?.step ?? "?"} · ${checkpoint.metadata?.source ?? ""}` }));
      const item = el("li", { dataset: { checkpointId: checkpoint.checkpointId } }, button);
      button.addEventListener("click", () => show(checkpoint, item));
      list.append(item);
      count += 1;
      if (checkpoint.checkpointId === query.checkpoint || (count === 1 && !query.checkpoint)) show(checkpoint, item);
    }
    token = page.nextPageToken ?? null;
    more.hidden = token === null;
    if (!count) list.append(el("li", { class: "muted", text: "No checkpoint: no such thread, or it expired." }));
  }
  more.addEventListener("click", next);
  await next();
  return null;
}

// The app's live threads, latest write first, of one user when filtered.
async function threadList(main, app, query) {
  const user = el("input", { name: "user", value: query.user ?? "", placeholder: "user id (empty: every user)", "aria-label": "User id" });
  const filter = el("form", { class: "filters" }, el("label", {}, "User", user), el("button", { type: "submit", text: "Filter" }));
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = href({ app, thread: "", query: { user: user.value.trim() } });
  });
  const table = pagedTable({
    columns: ["thread", "user", "last write", "latest checkpoint", "expires"],
    empty: query.user ? "No live thread of this user." : "No live thread in this app.",
    load: async (pageToken) => {
      const data = await get(`/apps/${seg(app)}/threads`, { userId: query.user || undefined, pageSize: PAGE, pageToken });
      return { items: data.threads, nextPageToken: data.nextPageToken };
    },
    row: (item) =>
      el(
        "tr",
        { dataset: { thread: item.threadId } },
        el("td", {}, el("a", { href: href({ app, thread: item.threadId }), text: item.threadId })),
        el("td", {}, el("a", { href: href({ app, thread: "", query: { user: item.userId } }), text: item.userId })),
        el("td", { text: formatTime(item.lastUpdateTime) }),
        el("td", {}, item.latestCheckpointId === null ? el("span", { class: "muted", text: "none" }) : el("code", { text: item.latestCheckpointId })),
        el("td", { text: item.expireTime === null ? "never" : formatTime(item.expireTime) }),
      ),
  });
  await table.next();
  main.append(el("h2", { class: "spaced", text: query.user ? `Threads of ${query.user}, latest write first` : "Threads, latest write first" }), filter, table.node);
}
