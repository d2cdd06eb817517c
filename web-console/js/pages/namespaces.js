// Namespaces: list with config counts and the caller's right; admins
// create, rename and delete (the server refuses to delete a namespace
// that still holds configs).

import { api, CONSOLE } from '../api.js';
import { h, table, field, show, toast, modal, confirmDialog, errorText, badge } from '../ui.js';

export async function render(main, params, ctx) {
  await ctx.reloadNamespaces();
  const admin = ctx.me.admin;
  const slot = h('div', { attrs: { 'data-testid': 'namespaces-message' } });
  const rename = (ns) => {
    const name = h('input', { value: ns.name, attrs: { 'aria-label': 'Name' } });
    const desc = h('input', { value: ns.desc, attrs: { 'aria-label': 'Description' } });
    const err = h('div');
    modal({
      title: `Rename namespace ${ns.id}`,
      wide: false,
      body: h('div', { class: 'row' }, field('Name', name), field('Description', desc), err),
      actions: [
        { label: 'Cancel' },
        {
          label: 'Save',
          kind: 'primary',
          onClick: async (close) => {
            try {
              await api.put(`${CONSOLE}/namespaces`, { id: ns.id, name: name.value, desc: desc.value });
              close();
              toast('Namespace renamed.');
              ctx.go('#/namespaces');
            } catch (e) {
              show(err, 'error', errorText(e));
            }
          },
        },
      ],
    });
  };
  const remove = async (ns) => {
    if (!await confirmDialog('Delete namespace', `Delete namespace ${ns.name} (${ns.id})? Permissions in it go too.`, 'Delete', 'danger solid')) return;
    try {
      await api.del(`${CONSOLE}/namespaces`, { id: ns.id });
      toast(`Deleted namespace ${ns.id}.`);
      ctx.go('#/namespaces');
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };
  main.append(
    h('div', { class: 'page-head' }, h('h1', { text: 'Namespaces' })),
    slot,
    table([
      { title: 'Name', cell: (n) => h('strong', { text: n.name }) },
      { title: 'ID', cell: (n) => h('span', { class: 'mono', text: n.id || '(public)' }) },
      { title: 'Description', cell: (n) => n.desc },
      { title: 'Configs', class: 'num', cell: (n) => String(n.configCount) },
      { title: 'Your access', cell: (n) => badge(n.access === 'rw' ? 'read-write' : 'read', n.access === 'rw' ? 'ok' : '') },
      {
        title: 'Actions',
        cell: (n) => h('div', { class: 'actions' },
          h('button', { class: 'link', text: 'Configs', onClick: () => { ctx.namespace = n.id; ctx.go('#/configs'); } }),
          admin && n.id ? h('button', { class: 'link', text: 'Rename', onClick: () => rename(n) }) : null,
          admin && n.id ? h('button', { class: 'link danger', text: 'Delete', dataset: { delete: n.id }, onClick: () => remove(n) }) : null),
      },
    ], ctx.namespaces));
  if (admin) {
    const id = h('input', { placeholder: 'generated if empty', attrs: { 'data-testid': 'ns-id', 'aria-label': 'Namespace ID' } });
    const name = h('input', { attrs: { 'data-testid': 'ns-name', 'aria-label': 'Namespace name' } });
    const desc = h('input', { attrs: { 'aria-label': 'Namespace description' } });
    const err = h('div');
    main.append(h('div', { class: 'panel' },
      h('h2', { text: 'Create a namespace' }),
      h('form', {
        class: 'row',
        onSubmit: async (e) => {
          e.preventDefault();
          if (!name.value.trim()) {
            show(err, 'error', 'Enter a name.');
            return;
          }
          if (id.value && !/^[A-Za-z0-9_-]+$/.test(id.value)) {
            show(err, 'error', 'An ID may only hold letters, digits, - and _.');
            return;
          }
          try {
            const reply = await api.post(`${CONSOLE}/namespaces`, { id: id.value.trim(), name: name.value.trim(), desc: desc.value });
            toast(`Created namespace ${reply.id}.`);
            ctx.go('#/namespaces');
          } catch (e2) {
            show(err, 'error', errorText(e2));
          }
        },
      },
      field('ID', id), field('Name', name), field('Description', desc),
      h('button', { class: 'primary', type: 'submit', text: 'Create', attrs: { 'data-testid': 'ns-create' } })),
      err));
  }
}
