// The public REST API, called from the page with fetch: the same routes and
// the same API key any client uses. The key lives in sessionStorage only
// (gone with the tab), and goes in the Authorization header, never a URL.

const KEY = "session-state-inspector-key";
const base = new URL("../", document.baseURI); // /ui/ -> the service's root

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export const apiKey = {
  get: () => sessionStorage.getItem(KEY),
  set: (key) => sessionStorage.setItem(KEY, key),
  forget: () => sessionStorage.removeItem(KEY),
};

export const seg = (value) => encodeURIComponent(value);

export function url(path, query = {}) {
  const target = new URL(path.replace(/^\//, ""), base);
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) target.searchParams.append(name, one);
  }
  return target;
}

export function headers(extra = {}) {
  const all = { Accept: "application/json", ...extra };
  const key = apiKey.get();
  if (key) all.Authorization = `Bearer ${key}`;
  return all;
}

export async function request(path, { method = "GET", query, body, signal } = {}) {
  const init = { method, headers: headers(), signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url(path, query), init);
  if (!response.ok) {
    let problem = null;
    try {
      problem = await response.json();
    } catch {
      problem = null;
    }
    throw new ApiError(response.status, problem);
  }
  const etag = response.headers.get("ETag");
  const data = response.status === 204 ? null : await response.json();
  return { data, revision: etag ? Number(etag.replaceAll('"', "")) : null };
}

export async function get(path, query) {
  return (await request(path, { query })).data;
}

export const userPath = (app, user) => `/apps/${seg(app)}/users/${seg(user)}`;
export const sessionPath = (app, user, session) =>
  `${userPath(app, user)}/sessions/${seg(session)}`;
