// The HTTP client of the console: the session (token in sessionStorage),
// requests with `Authorization: Bearer`, and errors as ApiError with the
// server's own message (JSON `{error}` from the console API, or Nacos'
// plain `caused: ...;` text from the other routes).

import { t } from './i18n.js';

const SESSION_KEY = 'tacos.session';

export const session = {
  get() {
    try {
      return JSON.parse(sessionStorage.getItem(SESSION_KEY) || 'null');
    } catch {
      return null;
    }
  },
  set(value) {
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(value));
  },
  clear() {
    sessionStorage.removeItem(SESSION_KEY);
  },
};

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

/** Called when the session turns out to be over (token expired). */
let onSessionEnded = () => {};
export function whenSessionEnds(callback) {
  onSessionEnded = callback;
}

function messageOf(status, text, json) {
  if (json && typeof json.error === 'string') return json.error;
  let message = (text || '').trim();
  const caused = /^caused: ([\s\S]*?);?$/.exec(message);
  if (caused) message = caused[1];
  return message || t('api.failed', { status });
}

/**
 * One request. Options: query (object), json (body), form (object, sent
 * url-encoded), body (raw), raw (return the Response for blobs).
 */
export async function request(method, path, options = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(options.query || {})) {
    if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
  }
  const headers = { ...(options.headers || {}) };
  const current = session.get();
  if (current && current.token) headers.Authorization = `Bearer ${current.token}`;
  let body;
  if (options.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.form !== undefined) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  } else if (options.body !== undefined) {
    body = options.body;
  }
  let response;
  try {
    response = await fetch(url, { method, headers, body, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, t('api.noAnswer', { error: e.message }), null);
  }
  if (response.ok && options.raw) return response;
  const text = await response.text();
  let json = null;
  if ((response.headers.get('Content-Type') || '').includes('json')) {
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, messageOf(response.status, text, json), json);
    if (response.status === 403 && current && path !== '/tacos/v1/auth/me' && !options.noSessionCheck) {
      // A 403 is either "no right here" or "your token is no longer
      // valid": ask who we are to tell which.
      try {
        await request('GET', '/tacos/v1/auth/me', { noSessionCheck: true });
      } catch (e) {
        if (e.status === 403) {
          onSessionEnded();
        }
      }
    }
    throw error;
  }
  return json !== null ? json : text;
}

export const api = {
  get: (path, query) => request('GET', path, { query }),
  post: (path, json, query) => request('POST', path, { json, query }),
  put: (path, json, query) => request('PUT', path, { json, query }),
  del: (path, query) => request('DELETE', path, { query }),
  form: (method, path, form) => request(method, path, { form }),
};

export const CONSOLE = '/tacos/api/console';

/** Logs in; keeps the token and who we are in the session. */
export async function login(username, password) {
  const reply = await request('POST', '/nacos/v1/auth/login', { form: { username, password } });
  session.set({ token: reply.accessToken, username: reply.username, admin: reply.globalAdmin });
  return reply;
}
