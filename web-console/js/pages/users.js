// Users and their namespace permissions (admins only), through the
// existing routes: /nacos/v1/auth/users and /tacos/v1/auth/permissions.
// Grants a user gets through a Nacos role (/nacos/v1/auth/roles and
// /nacos/v1/auth/permissions) are shown beside its own, read-only.

import { api, request } from '../api.js';
import { h, table, field, show, toast, modal, confirmDialog, errorText, badge, fmtTime, nsName } from '../ui.js';
import { t } from '../i18n.js';

const USERS = '/nacos/v1/auth/users';
const PERMISSIONS = '/tacos/v1/auth/permissions';
const ROLES = '/nacos/v1/auth/roles';
const ROLE_PERMISSIONS = '/nacos/v1/auth/permissions';

/** username -> [{ role, ns, access }] from the Nacos role tables. */
async function roleGrants() {
  const [roles, permissions] = await Promise.all([
    api.get(ROLES, { pageNo: 1, pageSize: 500, search: 'accurate' }),
    api.get(ROLE_PERMISSIONS, { pageNo: 1, pageSize: 500, search: 'accurate' }),
  ]);
  const byRole = new Map();
  for (const p of permissions.pageItems) {
    const ns = p.resource.split(':')[0];
    byRole.set(p.role, [...(byRole.get(p.role) || []), { role: p.role, ns: ns === '*' ? '*' : ns, access: p.action }]);
  }
  const byUser = new Map();
  for (const r of roles.pageItems) {
    byUser.set(r.username, [...(byUser.get(r.username) || []), ...(byRole.get(r.role) || [])]);
  }
  return byUser;
}

/** A namespace picker for grants: every namespace, or one. */
export function namespaceSelect(ctx) {
  return h('select', { attrs: { 'aria-label': t('common.namespace'), 'data-testid': 'grant-namespace' } },
    h('option', { value: '*', text: t('users.everyNamespace') }),
    ctx.namespaces.map((n) => h('option', { value: n.id || 'public', text: n.id ? `${n.name} (${n.id})` : 'public' })));
}

/** Read, read-write or write-only (Nacos' r, rw, w). */
export function accessSelect() {
  return h('select', { attrs: { 'aria-label': t('users.access'), 'data-testid': 'grant-access' } },
    h('option', { value: 'r', text: t('ns.read') }), h('option', { value: 'rw', text: t('ns.readWrite') }),
    h('option', { value: 'w', text: t('ns.writeOnly') }));
}

/**
 * A grant's key as the server lists it: a namespace, or for a grant
 * narrower than a namespace its resource NS:GROUP:config/DATAID or
 * NS:GROUP:* → the namespace, group and dataId of the revoke.
 */
export function grantParts(key) {
  const colon = key.indexOf(':');
  if (colon < 0) return { namespace: key || 'public', group: '*', dataId: '*' };
  const namespace = key.slice(0, colon) || 'public';
  const rest = key.slice(colon + 1);
  if (rest.endsWith(':*')) return { namespace, group: rest.slice(0, -2), dataId: '*' };
  const at = rest.indexOf(':config/');
  return { namespace, group: rest.slice(0, at), dataId: rest.slice(at + ':config/'.length) };
}

export async function render(main, params, ctx) {
  const slot = h('div', { attrs: { 'data-testid': 'users-message' } });
  const list = h('div', { attrs: { 'data-testid': 'users' } });
  const reload = () => ctx.go('#/users');
  const act = async (what, done) => {
    try {
      await what();
      toast(done);
      reload();
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };
  const update = (user, form, done) => act(() => request('PUT', USERS, { form: { username: user.username, ...form } }), done);

  const grant = (user) => {
    const namespace = namespaceSelect(ctx);
    const access = accessSelect();
    const err = h('div');
    modal({
      title: t('users.grantTitle', { user: user.username }),
      wide: false,
      body: h('div', {}, h('div', { class: 'row' }, field(t('common.namespace'), namespace), field(t('users.access'), access)), err),
      actions: [
        { label: t('common.cancel') },
        {
          label: t('users.grant'),
          kind: 'primary',
          onClick: async (close) => {
            try {
              await api.form('POST', PERMISSIONS, { username: user.username, namespace: namespace.value, action: access.value });
              close();
              toast(t('users.granted', { user: user.username, access: access.value, ns: namespace.value }));
              reload();
            } catch (e) {
              show(err, 'error', errorText(e));
            }
          },
        },
      ],
    });
  };
  const password = (user) => {
    const input = h('input', { type: 'password', autocomplete: 'new-password', attrs: { 'aria-label': t('app.newPassword') } });
    const err = h('div');
    modal({
      title: t('users.passwordTitle', { user: user.username }),
      wide: false,
      body: h('div', {}, field(t('app.newPassword'), input, t('users.passwordHint')), err),
      actions: [
        { label: t('common.cancel') },
        {
          label: t('users.setPassword'),
          kind: 'primary',
          onClick: async (close) => {
            if (input.value.length < 8) {
              show(err, 'error', t('app.passwordShort'));
              return;
            }
            try {
              await request('PUT', USERS, { form: { username: user.username, newPassword: input.value } });
              close();
              toast(t('users.passwordChanged', { user: user.username }));
            } catch (e) {
              show(err, 'error', errorText(e));
            }
          },
        },
      ],
    });
  };

  const [page, viaRoles] = await Promise.all([api.get(USERS, { pageNo: 1, pageSize: 500 }), roleGrants()]);
  list.append(table([
    { title: t('audit.user'), cell: (u) => h('strong', { text: u.username }) },
    { title: t('users.kind'), cell: (u) => (u.admin ? badge(t('users.admin'), 'info') : badge(t('users.user'))) },
    { title: t('users.status'), cell: (u) => (u.enabled ? badge(t('users.enabled'), 'ok') : badge(t('users.disabled'), 'bad')) },
    {
      title: t('users.permissions'),
      cell: (u) => (u.admin ? h('span', { class: 'muted', text: t('users.everything') }) : h('div', { class: 'actions' },
        Object.keys(u.permissions).length === 0 ? h('span', { class: 'muted', text: t('users.none') }) : null,
        Object.entries(u.permissions).map(([ns, access]) => h('span', { class: 'badge' },
          `${ns === '*' ? t('users.all') : nsName(ns)}: ${access} `,
          h('button', {
            class: 'link',
            text: '×',
            title: t('users.revoke'),
            attrs: { 'aria-label': t('users.revokeNs', { ns }) },
            onClick: () => act(() => api.del(PERMISSIONS, { username: u.username, ...grantParts(ns) }), t('users.revoked', { user: u.username, ns: nsName(ns) })),
          }))),
        h('button', { class: 'link', text: t('users.plusGrant'), onClick: () => grant(u) }),
        (viaRoles.get(u.username) || []).map((g) => h('span', {
          class: 'badge muted',
          text: t('users.viaRole', { ns: g.ns === '*' ? t('users.all') : nsName(g.ns), access: g.access, role: g.role }),
          title: t('users.viaRoleHint'),
        })))),
    },
    { title: t('users.created'), class: 'nowrap', cell: (u) => fmtTime(u.createTime) },
    {
      title: t('common.actions'),
      cell: (u) => h('div', { class: 'actions' },
        h('button', { class: 'link', text: t('app.password'), onClick: () => password(u) }),
        h('button', { class: 'link', text: u.enabled ? t('users.disable') : t('users.enable'), onClick: () => update(u, { enabled: String(!u.enabled) }, t(u.enabled ? 'users.wasDisabled' : 'users.wasEnabled', { user: u.username })) }),
        h('button', { class: 'link', text: u.admin ? t('users.removeAdmin') : t('users.makeAdmin'), onClick: () => update(u, { admin: String(!u.admin) }, t('users.updated', { user: u.username })) }),
        u.username !== ctx.me.username ? h('button', {
          class: 'link danger',
          text: t('common.delete'),
          onClick: async () => {
            if (!await confirmDialog(t('users.deleteTitle'), t('users.deleteBody', { user: u.username }), t('common.delete'), 'danger solid')) return;
            act(() => api.del(USERS, { username: u.username }), t('users.deleted', { user: u.username }));
          },
        }) : null),
    },
  ], page.pageItems));

  const username = h('input', { autocomplete: 'off', attrs: { 'data-testid': 'new-username', 'aria-label': t('login.username') } });
  const newPassword = h('input', { type: 'password', autocomplete: 'new-password', attrs: { 'data-testid': 'new-password', 'aria-label': t('login.password') } });
  const admin = h('input', { type: 'checkbox' });
  const createSlot = h('div');
  const create = h('form', {
    class: 'row',
    onSubmit: async (e) => {
      e.preventDefault();
      if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(username.value)) {
        show(createSlot, 'error', t('users.usernameRule'));
        return;
      }
      if (newPassword.value.length < 8) {
        show(createSlot, 'error', t('app.passwordShort'));
        return;
      }
      try {
        await api.form('POST', USERS, { username: username.value, password: newPassword.value, admin: String(admin.checked) });
        toast(t('users.createdUser', { user: username.value }));
        reload();
      } catch (e2) {
        show(createSlot, 'error', errorText(e2));
      }
    },
  },
  field(t('login.username'), username), field(t('login.password'), newPassword),
  h('label', { class: 'check' }, admin, t('users.admin')),
  h('button', { class: 'primary', type: 'submit', text: t('users.createUser'), attrs: { 'data-testid': 'create-user' } }));

  main.append(
    h('div', { class: 'page-head' }, h('h1', { text: t('nav.users') })),
    slot,
    list,
    h('div', { class: 'panel' }, h('h2', { text: t('users.createTitle') }), create, createSlot),
    h('p', { class: 'muted', text: t('users.explain') }));
}
