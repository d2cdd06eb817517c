// Users and their namespace permissions (admins only), through the
// existing routes: /nacos/v1/auth/users and /tacos/v1/auth/permissions.
// Grants a user gets through a Nacos role (/nacos/v1/auth/roles and
// /nacos/v1/auth/permissions) are shown beside its own, read-only.

import { api, request } from '../api.js';
import { h, table, field, show, toast, modal, confirmDialog, errorText, badge, fmtTime, nsName } from '../ui.js';

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
    const namespace = h('select', { attrs: { 'aria-label': 'Namespace' } },
      h('option', { value: '*', text: 'every namespace (*)' }),
      ctx.namespaces.map((n) => h('option', { value: n.id || 'public', text: n.id ? `${n.name} (${n.id})` : 'public' })));
    const access = h('select', { attrs: { 'aria-label': 'Access' } },
      h('option', { value: 'r', text: 'read' }), h('option', { value: 'rw', text: 'read-write' }));
    const err = h('div');
    modal({
      title: `Grant ${user.username} access`,
      wide: false,
      body: h('div', {}, h('div', { class: 'row' }, field('Namespace', namespace), field('Access', access)), err),
      actions: [
        { label: 'Cancel' },
        {
          label: 'Grant',
          kind: 'primary',
          onClick: async (close) => {
            try {
              await api.form('POST', PERMISSIONS, { username: user.username, namespace: namespace.value, action: access.value });
              close();
              toast(`Granted ${user.username} ${access.value} on ${namespace.value}.`);
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
    const input = h('input', { type: 'password', autocomplete: 'new-password', attrs: { 'aria-label': 'New password' } });
    const err = h('div');
    modal({
      title: `New password for ${user.username}`,
      wide: false,
      body: h('div', {}, field('New password', input, '8 to 128 characters; ends this user\'s sessions'), err),
      actions: [
        { label: 'Cancel' },
        {
          label: 'Set password',
          kind: 'primary',
          onClick: async (close) => {
            if (input.value.length < 8) {
              show(err, 'error', 'A password has at least 8 characters.');
              return;
            }
            try {
              await request('PUT', USERS, { form: { username: user.username, newPassword: input.value } });
              close();
              toast(`Password of ${user.username} changed.`);
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
    { title: 'User', cell: (u) => h('strong', { text: u.username }) },
    { title: 'Role', cell: (u) => (u.admin ? badge('admin', 'info') : badge('user')) },
    { title: 'Status', cell: (u) => (u.enabled ? badge('enabled', 'ok') : badge('disabled', 'bad')) },
    {
      title: 'Permissions',
      cell: (u) => (u.admin ? h('span', { class: 'muted', text: 'everything' }) : h('div', { class: 'actions' },
        Object.keys(u.permissions).length === 0 ? h('span', { class: 'muted', text: 'none' }) : null,
        Object.entries(u.permissions).map(([ns, access]) => h('span', { class: 'badge' },
          `${ns === '*' ? 'all' : nsName(ns)}: ${access} `,
          h('button', {
            class: 'link',
            text: '×',
            title: 'revoke',
            attrs: { 'aria-label': `revoke ${ns}` },
            onClick: () => act(() => api.del(PERMISSIONS, { username: u.username, namespace: ns || 'public' }), `Revoked ${u.username} on ${nsName(ns)}.`),
          }))),
        h('button', { class: 'link', text: '+ grant', onClick: () => grant(u) }),
        (viaRoles.get(u.username) || []).map((g) => h('span', {
          class: 'badge muted',
          text: `${g.ns === '*' ? 'all' : nsName(g.ns)}: ${g.access} via ${g.role}`,
          title: 'granted through a Nacos role (/nacos/v1/auth/roles)',
        })))),
    },
    { title: 'Created', class: 'nowrap', cell: (u) => fmtTime(u.createTime) },
    {
      title: 'Actions',
      cell: (u) => h('div', { class: 'actions' },
        h('button', { class: 'link', text: 'Password', onClick: () => password(u) }),
        h('button', { class: 'link', text: u.enabled ? 'Disable' : 'Enable', onClick: () => update(u, { enabled: String(!u.enabled) }, `${u.username} ${u.enabled ? 'disabled' : 'enabled'}.`) }),
        h('button', { class: 'link', text: u.admin ? 'Remove admin' : 'Make admin', onClick: () => update(u, { admin: String(!u.admin) }, `${u.username} updated.`) }),
        u.username !== ctx.me.username ? h('button', {
          class: 'link danger',
          text: 'Delete',
          onClick: async () => {
            if (!await confirmDialog('Delete user', `Delete ${u.username}? Their sessions end at once.`, 'Delete', 'danger solid')) return;
            act(() => api.del(USERS, { username: u.username }), `Deleted ${u.username}.`);
          },
        }) : null),
    },
  ], page.pageItems));

  const username = h('input', { autocomplete: 'off', attrs: { 'data-testid': 'new-username', 'aria-label': 'Username' } });
  const newPassword = h('input', { type: 'password', autocomplete: 'new-password', attrs: { 'data-testid': 'new-password', 'aria-label': 'Password' } });
  const admin = h('input', { type: 'checkbox' });
  const createSlot = h('div');
  const create = h('form', {
    class: 'row',
    onSubmit: async (e) => {
      e.preventDefault();
      if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(username.value)) {
        show(createSlot, 'error', 'A username is 1 to 64 of letters, digits and _ . @ -');
        return;
      }
      if (newPassword.value.length < 8) {
        show(createSlot, 'error', 'A password has at least 8 characters.');
        return;
      }
      try {
        await api.form('POST', USERS, { username: username.value, password: newPassword.value, admin: String(admin.checked) });
        toast(`Created ${username.value}.`);
        reload();
      } catch (e2) {
        show(createSlot, 'error', errorText(e2));
      }
    },
  },
  field('Username', username), field('Password', newPassword),
  h('label', { class: 'check' }, admin, 'admin'),
  h('button', { class: 'primary', type: 'submit', text: 'Create user', attrs: { 'data-testid': 'create-user' } }));

  main.append(
    h('div', { class: 'page-head' }, h('h1', { text: 'Users & permissions' })),
    slot,
    list,
    h('div', { class: 'panel' }, h('h2', { text: 'Create a user' }), create, createSlot),
    h('p', { class: 'muted', text: 'A user that is not an admin sees only the namespaces they have a permission in: read (r) lets them read and listen, read-write (rw) also publish and delete.' }));
}
