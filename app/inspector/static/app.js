// The inspector's entry: reads the route from the URL's hash, shows its view,
// asks for an API key when the service wants one, and stops the previous
// view's live streams when the route changes.

import { ApiError, apiKey } from "./api.js";
import { appsView, sessionsView, usersView } from "./browse.js";
import { clear, el } from "./dom.js";
import { threadsView } from "./langgraph.js";
import { memoryView } from "./memory.js";
import { href, parse } from "./router.js";
import { sessionView } from "./session.js";

const VIEWS = {
  apps: appsView,
  users: usersView,
  sessions: sessionsView,
  session: sessionView,
  memory: memoryView,
  threads: threadsView,
};

const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
const live = document.getElementById("live");
const forgetKey = document.getElementById("forget-key");
let running = null;
let renders = 0;

const context = {
  setLive(status) {
    live.textContent = { live: "● live", reconnecting: "○ reconnecting…", stopped: "✕ not live" }[status] ?? "";
    live.className = `live ${status ?? ""}`;
    live.dataset.status = status ?? "";
  },
  showError,
};

function showCrumbs(route) {
  const parts = [el("a", { href: "#/", text: "apps" })];
  if (route.app !== undefined) parts.push(el("a", { href: href({ app: route.app }), text: route.app }));
  if (route.user !== undefined) {
    parts.push(el("a", { href: href({ app: route.app, user: route.user }), text: route.user }));
  }
  if (route.session !== undefined) parts.push(el("span", { text: route.session }));
  if (route.view === "memory") parts.push(el("span", { text: "memory" }));
  if (route.view === "threads") {
    parts.push(el("a", { href: href({ app: route.app, thread: "" }), text: "LangGraph" }));
    if (route.thread) parts.push(el("span", { text: route.thread }));
  }
  clear(crumbs).append(...parts.flatMap((part, index) => (index ? [el("span", { class: "sep", text: "/" }), part] : [part])));
}

function keyPrompt(message) {
  const input = el("input", {
    type: "password",
    name: "key",
    autocomplete: "off",
    "aria-label": "API key",
    placeholder: "API key",
  });
  const form = el(
    "form",
    { class: "key-prompt" },
    el("h1", { text: "API key" }),
    el("p", { text: message }),
    el("p", {
      class: "muted",
      text: "The key is kept in this tab's session storage only, and sent in the Authorization header.",
    }),
    input,
    el("button", { type: "submit", class: "primary", text: "Use this key" }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!input.value.trim()) return;
    apiKey.set(input.value.trim());
    render();
  });
  clear(main).append(form);
  input.focus();
}

function showError(error) {
  if (error instanceof ApiError && error.status === 401) {
    keyPrompt(apiKey.get() ? "This key was refused: enter another." : "This service asks for an API key.");
    return;
  }
  if (error instanceof ApiError && error.status === 403 && apiKey.get()) {
    clear(main).append(
      el("h1", { text: "Not allowed" }),
      el("p", { class: "error", text: error.message }),
      el("button", { type: "button", text: "Use another key", onclick: () => keyPrompt("Enter another key.") }),
    );
    return;
  }
  main.append(el("p", { class: "error", role: "alert", text: `${error.message}` }));
}

async function render() {
  const mine = ++renders;
  running?.stop?.();
  running = null;
  context.setLive("");
  forgetKey.hidden = !apiKey.get();
  const route = parse(location.hash);
  showCrumbs(route);
  clear(main);
  try {
    const view = await VIEWS[route.view](main, route, context);
    if (mine === renders) running = view;
    else view?.stop?.();
  } catch (error) {
    if (mine === renders) showError(error);
  }
}

forgetKey.addEventListener("click", () => {
  apiKey.forget();
  render();
});
window.addEventListener("hashchange", render);
// Keyboard: "/" to the page's search box, "g" back to the apps.
document.addEventListener("keydown", (event) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName ?? "");
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "/") {
    const search = main.querySelector("[data-search]");
    if (search) {
      event.preventDefault();
      search.focus();
    }
  } else if (event.key === "g") {
    location.hash = "#/";
  }
});
render();
