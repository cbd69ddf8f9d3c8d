// The public API from the browser, shared by /play and /admin: JSON in and out, a refusal
// thrown as an ApiError with its problem+json, the server's clock read from each Date header.
//
// Credentials never go into a URL: an operator's (or auditor's) key is typed into the page and
// kept in this tab's sessionStorage; a player's seat token comes from the link's fragment and
// lives in `session.token`. Either travels only as `Authorization: Bearer`.

const KEY = "guts.key"; // sessionStorage: the operator's or auditor's key

export const session = {
  token: null, // a player's seat token (from the link's fragment), else null
  skew: 0, // the server's clock minus this one, in ms (from the Date header)
};

export const storedKey = () => sessionStorage.getItem(KEY);
export const keepKey = (key) => sessionStorage.setItem(KEY, key);
export const forgetKey = () => sessionStorage.removeItem(KEY);
const credential = () => session.token || storedKey();

/** A refusal: `status` and the problem+json body (`problem.detail`, `problem.title`). */
export class ApiError extends Error {
  constructor(status, problem, fallback) {
    super(`${status}: ${(problem && (problem.detail || problem.title)) || fallback}`);
    this.status = status;
    this.problem = problem;
  }
}

/** One API call; a refusal throws an ApiError. */
export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = credential();
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  // The server's clock, from its Date header (whole seconds): a countdown by this machine's
  // clock would be wrong by however much it is off; under 1.5 s is taken as no skew at all.
  const skew = Date.parse(response.headers.get("Date")) - Date.now();
  if (!Number.isNaN(skew)) session.skew = Math.abs(skew) < 1500 ? 0 : skew;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null; // not JSON (a proxy's page): the status says enough
  }
  if (!response.ok) throw new ApiError(response.status, data, response.statusText);
  return data;
}

/** This moment by the server's clock, in ms. */
export const serverNow = () => Date.now() + session.skew;

/** A path with its query: `query` values that are empty are left out. */
export function withQuery(path, query) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export const tablePath = (table, rest = "") => `/v1/tables/${encodeURIComponent(table)}${rest}`;

/** Whether the table `view` just fetched is older than the one `shown`: two fetches of a
 * table can answer out of order (several connections, several server workers), and the one
 * answered last must not replace a newer view. */
export const olderThan = (view, shown) =>
  Boolean(shown) && shown.table_id === view.table_id && shown.version > view.version;

/** A DOM element with text and attributes. */
export function element(tag, text, attributes = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/** A button that runs `onClick`. */
export function button(label, onClick, attributes = {}) {
  const node = element("button", label, { type: "button", ...attributes });
  node.addEventListener("click", onClick);
  return node;
}

export const $ = (id) => document.getElementById(id);

/** `act(what, run)`: an event handler that runs a user's action and says how it went with
 * `say(text, result)` (in words from `t`; `result` is what `run` answered, for "done"),
 * showing what went wrong instead of throwing it away. */
export function actWith(say, t) {
  return (what, run) => async (event) => {
    if (event) event.preventDefault();
    try {
      say(t("common.working", { what }));
      const result = await run(event);
      say(t("common.done", { what }), result);
    } catch (error) {
      say(t("common.failed", { what, why: error.message }));
    }
  };
}
