// Hash routes, so that a link names what it shows and can be shared:
//   #/                                   apps
//   #/apps/{app}                         the app's users
//   #/apps/{app}/users/{user}            the user's sessions (?label=&after=&before=&title=)
//   #/apps/{app}/users/{user}/sessions/{session}   a session (?event=)
//   #/apps/{app}/users/{user}/memory     memory search (?q=&mode=)
//   #/apps/{app}/threads/{thread}        LangGraph checkpoints (?ns=&checkpoint=)
// Segments are percent-encoded, as in the API's own paths.

export function parse(hash) {
  const text = hash.replace(/^#/, "");
  const [path, search = ""] = text.split("?", 2);
  const parts = path.split("/").filter(Boolean).map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  });
  const query = Object.fromEntries(new URLSearchParams(search));
  const route = { view: "apps", query };
  if (parts[0] !== "apps" || parts.length < 2) return route;
  route.app = parts[1];
  route.view = "users";
  if (parts[2] === "threads") {
    route.view = "threads";
    route.thread = parts[3];
    return route;
  }
  if (parts[2] === "users" && parts[3] !== undefined) {
    route.user = parts[3];
    route.view = "sessions";
    if (parts[4] === "memory") route.view = "memory";
    if (parts[4] === "sessions" && parts[5] !== undefined) {
      route.view = "session";
      route.session = parts[5];
    }
  }
  return route;
}

export function href({ app, user, session, thread, memory, query = {} } = {}) {
  const e = encodeURIComponent;
  let path = "#/";
  if (app !== undefined) {
    path += `apps/${e(app)}`;
    if (thread !== undefined) path += `/threads${thread === "" ? "" : "/" + e(thread)}`;
    else if (user !== undefined) {
      path += `/users/${e(user)}`;
      if (session !== undefined) path += `/sessions/${e(session)}`;
      else if (memory) path += "/memory";
    }
  }
  const search = new URLSearchParams(
    Object.entries(query).filter(([, value]) => value !== undefined && value !== null && value !== ""),
  ).toString();
  return search ? `${path}?${search}` : path;
}

export function go(target, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", target);
  else location.hash = target.replace(/^#/, "");
  if (replace) window.dispatchEvent(new HashChangeEvent("hashchange"));
}
