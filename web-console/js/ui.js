import { t } from './i18n.js';

// Small DOM helpers. Text always goes in as text (never as HTML), so data
// from configs, users or the audit log cannot inject markup.

/**
 * Creates an element. `props`: class, text, title, value, type, href,
 * dataset, attrs (object), on{Event} handlers; anything else is set as a
 * property. Children: nodes, strings, arrays, null/false (skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'attrs') for (const [a, v] of Object.entries(value)) el.setAttribute(a, v);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2).toLowerCase(), value);
    else el[key] = value;
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** A short note in the corner. */
export function toast(message, kind = 'ok') {
  const box = document.getElementById('toasts');
  const el = h('div', { class: `toast ${kind}`, text: message, attrs: { role: 'status' } });
  box.append(el);
  while (box.children.length > 3) box.firstChild.remove();
  setTimeout(() => el.remove(), kind === 'error' ? 7000 : 3500);
}

/**
 * An inline message. `detail`: extra lines (a list). Returns the element.
 */
export function message(kind, text, detail = []) {
  return h('div', { class: `message ${kind}`, attrs: { role: kind === 'error' ? 'alert' : 'status' } },
    h('div', { class: 'text', text }),
    detail.length ? h('ul', {}, detail.map((line) => h('li', { text: line }))) : null);
}

/** Replaces the contents of `slot` with a message (or clears it). */
export function show(slot, kind, text, detail) {
  clear(slot);
  if (text) slot.append(message(kind, text, detail));
}

/** The message of an error (ApiError or other). */
export function errorText(e) {
  return e && e.message ? e.message : String(e);
}

/**
 * A modal dialog. `actions`: [{label, kind, onClick(close) }]; returns
 * { close, root, footer }.
 */
export function modal({ title, body, actions = [], wide = true }) {
  const footer = h('footer');
  const box = h('div', { class: 'modal', attrs: { role: 'dialog', 'aria-modal': 'true', 'aria-label': title } },
    h('header', { text: title }),
    h('div', { class: 'body' }, body),
    footer);
  if (!wide) box.style.width = 'min(520px, 100%)';
  const overlay = h('div', { class: 'overlay' }, box);
  const close = () => {
    overlay.remove();
    document.removeEventListener('keydown', onKey);
  };
  const onKey = (e) => {
    if (e.key === 'Escape') close();
  };
  for (const action of actions) {
    footer.append(h('button', {
      class: action.kind || '',
      text: action.label,
      dataset: action.id ? { action: action.id } : undefined,
      onClick: () => (action.onClick ? action.onClick(close) : close()),
    }));
  }
  if (!actions.length) footer.append(h('button', { text: t('common.close'), onClick: close }));
  document.addEventListener('keydown', onKey);
  document.body.append(overlay);
  return { close, root: box, footer };
}

/** Asks yes or no; resolves true for yes. */
export function confirmDialog(title, body, confirmLabel = t('common.ok'), kind = 'primary') {
  return new Promise((resolve) => {
    modal({
      title,
      body: typeof body === 'string' ? h('p', { text: body }) : body,
      wide: false,
      actions: [
        { label: t('common.cancel'), onClick: (close) => { close(); resolve(false); } },
        { label: confirmLabel, kind, id: 'confirm', onClick: (close) => { close(); resolve(true); } },
      ],
    });
  });
}

const pad = (n) => String(n).padStart(2, '0');

/** Epoch ms as local `YYYY-MM-DD HH:MM:SS`. */
export function fmtTime(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * A table. `columns`: [{ title, cell(row) -> node|string, class }];
 * `empty`: text when there are no rows.
 */
export function table(columns, rows, empty = t('common.empty')) {
  const head = h('tr', {}, columns.map((c) => h('th', { class: c.class || '', text: c.title })));
  const body = h('tbody');
  for (const row of rows) {
    body.append(h('tr', {}, columns.map((c) => h('td', { class: c.class || '' }, c.cell(row)))));
  }
  if (!rows.length) {
    body.append(h('tr', {}, h('td', { class: 'empty', colSpan: columns.length, text: empty })));
  }
  return h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, head), body));
}

/** Page controls for a Nacos-style page object. */
export function pager(page, onPage) {
  const total = page.totalCount;
  const pages = Math.max(page.pagesAvailable, 1);
  const no = page.pageNumber;
  return h('div', { class: 'pager' },
    h('span', { text: t('pager.summary', { total, no, pages }) }),
    h('button', { class: 'small', text: t('pager.previous'), disabled: no <= 1, onClick: () => onPage(no - 1) }),
    h('button', { class: 'small', text: t('pager.next'), disabled: no >= pages, onClick: () => onPage(no + 1) }));
}

/** A labelled form field. */
export function field(name, input, hint) {
  return h('label', { class: 'field' }, h('span', { class: 'name', text: name }), input,
    hint ? h('span', { class: 'hint', text: hint }) : null);
}

export function badge(text, kind = '') {
  return h('span', { class: `badge ${kind}`, text });
}

/** Saves a blob as a file (a click on a temporary link). */
export function download(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** The namespace as people read it. */
export function nsName(id) {
  return id ? id : 'public';
}
