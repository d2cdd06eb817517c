// Roles (admins): a role binds users, and the resources granted to the
// role apply to every user bound to it. Through Nacos' role API
// (/nacos/v1/auth/roles, /nacos/v1/auth/permissions; docs/auth.md): create
// a role (binding its first user), bind and unbind users, grant and revoke
// resources (a namespace, or a group and dataId pattern in it, as Nacos'
// NS:GROUP:config/DATAID), delete the role. Every change is audited by the
// server.

import { api } from '../api.js';
import { h, table, field, show, toast, modal, confirmDialog, errorText, badge, nsName } from '../ui.js';
import { namespaceSelect, accessSelect } from './users.js';
import { t } from '../i18n.js';

const ROLES = '/nacos/v1/auth/roles';
const PERMISSIONS = '/nacos/v1/auth/permissions';
/** Admins show as ROLE_ADMIN; that role is managed on the users page. */
const ADMIN_ROLE = 'ROLE_ADMIN';

/** role -> { users: [], grants: [{ resource, ns, scope, action }] }. */
async function loadRoles() {
  const [bindings, permissions] = await Promise.all([
    api.get(ROLES, { pageNo: 1, pageSize: 500, search: 'accurate' }),
    api.get(PERMISSIONS, { pageNo: 1, pageSize: 500, search: 'accurate' }),
  ]);
  const roles = new Map();
  const entry = (role) => {
    if (!roles.has(role)) roles.set(role, { role, users: [], grants: [] });
    return roles.get(role);
  };
  for (const b of bindings.pageItems) entry(b.role).users.push(b.username);
  for (const p of permissions.pageItems) {
    const ns = p.resource.split(':')[0] || 'public';
    // What the grant covers inside its namespace: '' for all of it.
    const rest = p.resource.slice(p.resource.indexOf(':') + 1);
    const scope = rest === '*:*' ? '' : rest;
    entry(p.role).grants.push({ resource: p.resource, ns, scope, action: p.action });
  }
  return [...roles.values()].sort((a, b) => a.role.localeCompare(b.role));
}

export async function render(main, params, ctx) {
  const slot = h('div', { attrs: { 'data-testid': 'roles-message' } });
  const reload = () => ctx.go('#/roles');
  const act = async (what, done) => {
    try {
      await what();
      toast(done);
      reload();
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };
  const [roles, users] = await Promise.all([loadRoles(), api.get('/nacos/v1/auth/users', { pageNo: 1, pageSize: 500 })]);
  const usernames = users.pageItems.map((u) => u.username);
  const userSelect = (exclude = []) => h('select', { attrs: { 'aria-label': t('audit.user'), 'data-testid': 'role-user' } },
    usernames.filter((u) => !exclude.includes(u)).map((u) => h('option', { value: u, text: u })));

  const bind = (role) => {
    const user = userSelect(role.users);
    const err = h('div');
    modal({
      title: t('roles.bindTitle', { role: role.role }),
      wide: false,
      body: h('div', {}, field(t('audit.user'), user), err),
      actions: [
        { label: t('common.cancel') },
        {
          label: t('roles.bind'),
          kind: 'primary',
          id: 'bind',
          onClick: async (close) => {
            try {
              await api.form('POST', ROLES, { role: role.role, username: user.value });
              close();
              toast(t('roles.bound', { user: user.value, role: role.role }));
              reload();
            } catch (e) {
              show(err, 'error', errorText(e));
            }
          },
        },
      ],
    });
  };
  const grant = (role) => {
    const namespace = namespaceSelect(ctx);
    const access = accessSelect();
    const pattern = (name, testid) => h('input', { value: '*', autocomplete: 'off', attrs: { 'aria-label': name, 'data-testid': testid } });
    const group = pattern(t('roles.group'), 'grant-group');
    const dataId = pattern(t('roles.dataId'), 'grant-data-id');
    const err = h('div');
    modal({
      title: t('roles.grantTitle', { role: role.role }),
      wide: false,
      body: h('div', {},
        h('div', { class: 'row' }, field(t('common.namespace'), namespace), field(t('users.access'), access)),
        h('div', { class: 'row' }, field(t('roles.group'), group), field(t('roles.dataId'), dataId)),
        h('p', { class: 'muted', text: t('roles.patternHint') }),
        err),
      actions: [
        { label: t('common.cancel') },
        {
          label: t('users.grant'),
          kind: 'primary',
          id: 'grant',
          onClick: async (close) => {
            try {
              const g = group.value.trim() || '*';
              const d = dataId.value.trim() || '*';
              const resource = `${namespace.value}:${g}:${d === '*' ? '*' : `config/${d}`}`;
              await api.form('POST', PERMISSIONS, { role: role.role, resource, action: access.value });
              close();
              toast(t('roles.granted', { role: role.role, access: access.value, ns: namespace.value }));
              reload();
            } catch (e) {
              show(err, 'error', errorText(e));
            }
          },
        },
      ],
    });
  };
  const nsLabel = (ns) => (ns === '*' ? t('users.all') : nsName(ns === 'public' ? '' : ns));

  const list = h('div', { attrs: { 'data-testid': 'roles' } }, table([
    { title: t('roles.role'), cell: (r) => h('strong', { text: r.role }) },
    {
      title: t('roles.users'),
      cell: (r) => (r.role === ADMIN_ROLE
        ? h('span', {}, r.users.map((u) => badge(u, 'info')), ' ', h('span', { class: 'muted', text: t('roles.adminNote') }))
        : h('div', { class: 'actions' },
          r.users.length ? null : h('span', { class: 'muted', text: t('users.none') }),
          r.users.map((u) => h('span', { class: 'badge', dataset: { user: u } }, `${u} `,
            h('button', {
              class: 'link',
              text: '×',
              title: t('roles.unbind'),
              attrs: { 'aria-label': t('roles.unbindUser', { user: u }) },
              onClick: () => act(() => api.del(ROLES, { role: r.role, username: u }), t('roles.unbound', { user: u, role: r.role })),
            }))),
          h('button', { class: 'link', text: t('roles.plusBind'), dataset: { bind: r.role }, onClick: () => bind(r) }))),
    },
    {
      title: t('users.permissions'),
      cell: (r) => (r.role === ADMIN_ROLE ? h('span', { class: 'muted', text: t('users.everything') }) : h('div', { class: 'actions' },
        r.grants.length ? null : h('span', { class: 'muted', text: t('users.none') }),
        r.grants.map((g) => h('span', { class: 'badge', dataset: { grant: g.ns } }, `${nsLabel(g.ns)}${g.scope ? ` ${g.scope}` : ''}: ${g.action} `,
          h('button', {
            class: 'link',
            text: '×',
            title: t('users.revoke'),
            attrs: { 'aria-label': t('users.revokeNs', { ns: nsLabel(g.ns) }) },
            onClick: () => act(() => api.del(PERMISSIONS, { role: r.role, resource: g.resource, action: g.action }), t('roles.revoked', { role: r.role, ns: nsLabel(g.ns) })),
          }))),
        h('button', { class: 'link', text: t('users.plusGrant'), dataset: { grant: r.role }, onClick: () => grant(r) }))),
    },
    {
      title: t('common.actions'),
      cell: (r) => (r.role === ADMIN_ROLE ? null : h('button', {
        class: 'link danger',
        text: t('roles.delete'),
        dataset: { deleteRole: r.role },
        onClick: async () => {
          if (!await confirmDialog(t('roles.deleteTitle'), t('roles.deleteBody', { role: r.role }), t('common.delete'), 'danger solid')) return;
          act(() => api.del(ROLES, { role: r.role }), t('roles.deleted', { role: r.role }));
        },
      })),
    },
  ], roles, t('roles.empty')));

  const name = h('input', { autocomplete: 'off', attrs: { 'data-testid': 'new-role', 'aria-label': t('roles.role') } });
  const firstUser = userSelect();
  firstUser.dataset.testid = 'new-role-user';
  const createSlot = h('div');
  const create = h('form', {
    class: 'row',
    onSubmit: async (e) => {
      e.preventDefault();
      if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(name.value)) {
        show(createSlot, 'error', t('roles.nameRule'));
        return;
      }
      try {
        await api.form('POST', ROLES, { role: name.value, username: firstUser.value });
        toast(t('roles.created', { role: name.value }));
        reload();
      } catch (e2) {
        show(createSlot, 'error', errorText(e2));
      }
    },
  },
  field(t('roles.role'), name), field(t('roles.firstUser'), firstUser),
  h('button', { class: 'primary', type: 'submit', text: t('roles.create'), attrs: { 'data-testid': 'create-role' } }));

  main.append(
    h('div', { class: 'page-head' }, h('h1', { text: t('nav.roles') })),
    h('p', { class: 'muted', text: t('roles.explain') }),
    slot,
    list,
    h('div', { class: 'panel' }, h('h2', { text: t('roles.createTitle') }), create, createSlot));
}
