// The console's shell: login gate, top bar (namespace, who am I, logout),
// side navigation and a hash router (#/page?params). Each page module
// exports `render(main, params, ctx)` and may return a cleanup function.

import { api, request, session, whenSessionEnds, CONSOLE } from './api.js';
import { h, clear, toast, errorText, modal, field, show } from './ui.js';
import * as loginPage from './pages/login.js';
import * as configsPage from './pages/configs.js';
import * as editorPage from './pages/editor.js';
import * as historyPage from './pages/history.js';
import * as listenersPage from './pages/listeners.js';
import * as namespacesPage from './pages/namespaces.js';
import * as transferPage from './pages/transfer.js';
import * as clusterPage from './pages/cluster.js';
import * as usersPage from './pages/users.js';
import * as auditPage from './pages/audit.js';

const NS_KEY = 'tacos.namespace';

const pages = {
  configs: { module: configsPage, nav: 'configs' },
  config: { module: editorPage, nav: 'configs' },
  history: { module: historyPage, nav: 'configs' },
  listeners: { module: listenersPage, nav: 'configs' },
  namespaces: { module: namespacesPage, nav: 'namespaces' },
  transfer: { module: transferPage, nav: 'transfer' },
  cluster: { module: clusterPage, nav: 'cluster', admin: true },
  users: { module: usersPage, nav: 'users', admin: true },
  audit: { module: auditPage, nav: 'audit', admin: true },
};

/** What pages share: who is logged in, the namespaces, the current one. */
const ctx = {
  me: null,
  namespaces: [],
  get namespace() {
    return sessionStorage.getItem(NS_KEY) || '';
  },
  set namespace(id) {
    sessionStorage.setItem(NS_KEY, id);
  },
  /** The current namespace's entry (with the caller's access). */
  currentNamespace() {
    return this.namespaces.find((n) => n.id === this.namespace) || this.namespaces[0] || null;
  },
  canWrite() {
    const ns = this.currentNamespace();
    return !!ns && ns.access === 'rw';
  },
  async reloadNamespaces() {
    this.namespaces = await api.get(`${CONSOLE}/namespaces`);
    if (!this.namespaces.some((n) => n.id === this.namespace) && this.namespaces.length) {
      this.namespace = this.namespaces[0].id;
    }
    renderNamespaceSelect();
  },
  go(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
};

let cleanup = null;
let shell = null;

/** `#/page?x=1` → { page, params }. */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [page, query = ''] = raw.split('?');
  return { page: page || 'configs', params: Object.fromEntries(new URLSearchParams(query)) };
}

function renderNamespaceSelect() {
  if (!shell) return;
  const select = shell.nsSelect;
  clear(select);
  for (const ns of ctx.namespaces) {
    select.append(h('option', { value: ns.id, text: ns.id ? `${ns.name} (${ns.id})` : 'public' }));
  }
  select.value = ctx.namespace;
}

function buildShell(root) {
  const nsSelect = h('select', {
    attrs: { 'aria-label': 'Namespace', 'data-testid': 'namespace-select' },
    onChange: () => {
      ctx.namespace = nsSelect.value;
      const { page } = parseHash();
      ctx.go(['configs', 'transfer', 'namespaces'].includes(page) ? `#/${page}` : '#/configs');
    },
  });
  const link = (id, label) => h('a', { href: `#/${id}`, text: label, dataset: { nav: id } });
  const admin = ctx.me.admin;
  const nav = h('nav', { class: 'sidebar', attrs: { 'aria-label': 'Pages' } },
    h('div', { class: 'section', text: 'Configuration' }),
    link('configs', 'Configs'),
    link('namespaces', 'Namespaces'),
    link('transfer', 'Import / export'),
    admin ? h('div', { class: 'section', text: 'Administration' }) : null,
    admin ? link('cluster', 'Cluster') : null,
    admin ? link('users', 'Users & permissions') : null,
    admin ? link('audit', 'Audit log') : null);
  const main = h('main', { class: 'main', attrs: { id: 'main' } });
  const top = h('header', { class: 'topbar' },
    h('a', { class: 'brand', href: '#/configs' }, h('img', { src: '/console/favicon.svg', alt: '' }), 'Tacos'),
    h('span', { class: 'muted', text: 'Namespace' }),
    nsSelect,
    h('span', { class: 'spacer' }),
    h('span', { class: 'who', attrs: { 'data-testid': 'whoami' } },
      'Signed in as ', h('strong', { text: ctx.me.username }),
      ctx.me.admin ? ' (admin)' : ''),
    h('button', { class: 'link', text: 'Password', title: 'Change my password', onClick: changePassword }),
    h('button', { class: 'link', text: 'Log out', attrs: { 'data-testid': 'logout' }, onClick: logout }));
  clear(root).append(top, h('div', { class: 'layout' }, nav, main));
  shell = { main, nav, nsSelect };
  renderNamespaceSelect();
}

async function route() {
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  const root = document.getElementById('app');
  const { page, params } = parseHash();
  if (page === 'login' || !session.get()) {
    shell = null;
    loginPage.render(root, params, { onLogin: start });
    return;
  }
  if (!shell) {
    await start();
    return;
  }
  const entry = pages[page] || pages.configs;
  for (const a of shell.nav.querySelectorAll('a')) {
    a.classList.toggle('active', a.dataset.nav === entry.nav);
  }
  const main = clear(shell.main);
  if (entry.admin && !ctx.me.admin) {
    main.append(h('div', { class: 'message error', text: 'This page is for admins.' }));
    return;
  }
  try {
    const result = await entry.module.render(main, params, ctx);
    if (typeof result === 'function') cleanup = result;
  } catch (e) {
    main.append(h('div', { class: 'message error', attrs: { role: 'alert' }, text: errorText(e) }));
  }
}

/** After a login (or on load with a session): who am I, namespaces, shell. */
async function start() {
  const root = document.getElementById('app');
  try {
    const me = await api.get('/tacos/v1/auth/me');
    ctx.me = me;
    await ctx.reloadNamespaces();
  } catch (e) {
    session.clear();
    shell = null;
    loginPage.render(root, {}, { onLogin: start, notice: e.status === 403 ? 'Your session ended. Log in again.' : errorText(e) });
    return;
  }
  buildShell(root);
  if (parseHash().page === 'login') location.hash = '#/configs';
  else route();
}

/** Changes the caller's own password (PUT /nacos/v1/auth/users). */
function changePassword() {
  const input = h('input', { type: 'password', autocomplete: 'new-password', attrs: { 'aria-label': 'New password' } });
  const again = h('input', { type: 'password', autocomplete: 'new-password', attrs: { 'aria-label': 'New password again' } });
  const slot = h('div');
  modal({
    title: `Change the password of ${ctx.me.username}`,
    wide: false,
    body: h('div', {}, field('New password', input, '8 to 128 characters'), field('Again', again),
      h('p', { class: 'muted', text: 'Every session of yours ends, this one too: you log in again.' }), slot),
    actions: [
      { label: 'Cancel' },
      {
        label: 'Change password',
        kind: 'primary',
        onClick: async (close) => {
          if (input.value.length < 8) return show(slot, 'error', 'A password has at least 8 characters.');
          if (input.value !== again.value) return show(slot, 'error', 'The two passwords differ.');
          try {
            await request('PUT', '/nacos/v1/auth/users', { form: { username: ctx.me.username, newPassword: input.value } });
          } catch (e) {
            return show(slot, 'error', errorText(e));
          }
          close();
          logout();
          toast('Password changed. Log in with the new one.');
        },
      },
    ],
  });
}

function logout() {
  session.clear();
  shell = null;
  ctx.me = null;
  location.hash = '#/login';
  toast('Logged out.');
}

whenSessionEnds((notice) => {
  session.clear();
  shell = null;
  loginPage.render(document.getElementById('app'), {}, { onLogin: start, notice });
});

window.addEventListener('hashchange', route);
route();
