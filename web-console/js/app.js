// The console's shell: login gate, top bar (namespace, language, who am
// I, logout), side navigation and a hash router (#/page?params). Each page
// module exports `render(main, params, ctx)` and may return a cleanup
// function. Every text comes from the language files (i18n.js).

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
import * as dashboardPage from './pages/dashboard.js';
import * as rolesPage from './pages/roles.js';
import { t, use, choose, preferred, lang, LANGUAGES } from './i18n.js';

const NS_KEY = 'tacos.namespace';

const pages = {
  configs: { module: configsPage, nav: 'configs' },
  config: { module: editorPage, nav: 'configs' },
  history: { module: historyPage, nav: 'configs' },
  listeners: { module: listenersPage, nav: 'configs' },
  namespaces: { module: namespacesPage, nav: 'namespaces' },
  transfer: { module: transferPage, nav: 'transfer' },
  dashboard: { module: dashboardPage, nav: 'dashboard', admin: true },
  cluster: { module: clusterPage, nav: 'cluster', admin: true },
  users: { module: usersPage, nav: 'users', admin: true },
  roles: { module: rolesPage, nav: 'roles', admin: true },
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

/** The language picker (header and login page): switching re-renders. */
function languageSwitch() {
  const select = h('select', {
    class: 'lang',
    attrs: { 'aria-label': t('app.language'), 'data-testid': 'language' },
    onChange: async () => {
      choose(select.value);
      await use(select.value);
      shell = null;
      if (cleanup) {
        cleanup();
        cleanup = null;
      }
      if (session.get() && ctx.me) {
        buildShell(document.getElementById('app'));
      }
      route();
    },
  }, Object.entries(LANGUAGES).map(([code, name]) => h('option', { value: code, text: name })));
  select.value = lang();
  return select;
}

function showLogin(root, extra = {}) {
  shell = null;
  loginPage.render(root, {}, { onLogin: start, languageSwitch, ...extra });
}

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
    attrs: { 'aria-label': t('common.namespace'), 'data-testid': 'namespace-select' },
    onChange: () => {
      ctx.namespace = nsSelect.value;
      const { page } = parseHash();
      ctx.go(['configs', 'transfer', 'namespaces'].includes(page) ? `#/${page}` : '#/configs');
    },
  });
  const link = (id, label) => h('a', { href: `#/${id}`, text: label, dataset: { nav: id } });
  const admin = ctx.me.admin;
  const nav = h('nav', { class: 'sidebar', attrs: { 'aria-label': t('app.pages') } },
    h('div', { class: 'section', text: t('nav.configuration') }),
    link('configs', t('nav.configs')),
    link('namespaces', t('nav.namespaces')),
    link('transfer', t('nav.transfer')),
    admin ? h('div', { class: 'section', text: t('nav.administration') }) : null,
    admin ? link('dashboard', t('nav.dashboard')) : null,
    admin ? link('cluster', t('nav.cluster')) : null,
    admin ? link('users', t('nav.users')) : null,
    admin ? link('roles', t('nav.roles')) : null,
    admin ? link('audit', t('nav.audit')) : null);
  const main = h('main', { class: 'main', attrs: { id: 'main' } });
  const top = h('header', { class: 'topbar' },
    h('a', { class: 'brand', href: '#/configs' }, h('img', { src: '/console/favicon.svg', alt: '' }), 'Tacos'),
    h('span', { class: 'muted', text: t('common.namespace') }),
    nsSelect,
    h('span', { class: 'spacer' }),
    languageSwitch(),
    h('span', { class: 'who', attrs: { 'data-testid': 'whoami' } },
      t('app.signedInAs'), h('strong', { text: ctx.me.username }),
      ctx.me.admin ? ` ${t('app.adminSuffix')}` : ''),
    h('button', { class: 'link', text: t('app.password'), title: t('app.changeMyPassword'), onClick: changePassword }),
    h('button', { class: 'link', text: t('app.logout'), attrs: { 'data-testid': 'logout' }, onClick: logout }));
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
    showLogin(root);
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
    main.append(h('div', { class: 'message error', text: t('app.adminsOnly') }));
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
    showLogin(root, { notice: e.status === 403 ? t('app.sessionEnded') : errorText(e) });
    return;
  }
  buildShell(root);
  if (parseHash().page === 'login') location.hash = '#/configs';
  else route();
}

/** Changes the caller's own password (PUT /nacos/v1/auth/users). */
function changePassword() {
  const input = h('input', { type: 'password', autocomplete: 'new-password', attrs: { 'aria-label': t('app.newPassword') } });
  const again = h('input', { type: 'password', autocomplete: 'new-password', attrs: { 'aria-label': t('app.newPasswordAgain') } });
  const slot = h('div');
  modal({
    title: t('app.changePasswordTitle', { user: ctx.me.username }),
    wide: false,
    body: h('div', {}, field(t('app.newPassword'), input, t('app.passwordLength')), field(t('app.again'), again),
      h('p', { class: 'muted', text: t('app.passwordSessions') }), slot),
    actions: [
      { label: t('common.cancel') },
      {
        label: t('app.changePassword'),
        kind: 'primary',
        onClick: async (close) => {
          if (input.value.length < 8) return show(slot, 'error', t('app.passwordShort'));
          if (input.value !== again.value) return show(slot, 'error', t('app.passwordsDiffer'));
          try {
            await request('PUT', '/nacos/v1/auth/users', { form: { username: ctx.me.username, newPassword: input.value } });
          } catch (e) {
            return show(slot, 'error', errorText(e));
          }
          close();
          logout();
          toast(t('app.passwordChanged'));
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
  toast(t('app.loggedOut'));
}

whenSessionEnds(() => {
  session.clear();
  showLogin(document.getElementById('app'), { notice: t('app.sessionEnded') });
});

await use(preferred());
window.addEventListener('hashchange', route);
route();
