// Namespaces: list with config counts and the caller's right; admins
// create, rename and delete (the server refuses to delete a namespace
// that still holds configs).

import { api, CONSOLE } from '../api.js';
import { h, table, field, show, toast, modal, confirmDialog, errorText, badge } from '../ui.js';
import { t } from '../i18n.js';

export async function render(main, params, ctx) {
  await ctx.reloadNamespaces();
  const admin = ctx.me.admin;
  const slot = h('div', { attrs: { 'data-testid': 'namespaces-message' } });
  const rename = (ns) => {
    const name = h('input', { value: ns.name, attrs: { 'aria-label': t('ns.name') } });
    const desc = h('input', { value: ns.desc, attrs: { 'aria-label': t('ns.desc') } });
    const err = h('div');
    modal({
      title: t('ns.renameTitle', { id: ns.id }),
      wide: false,
      body: h('div', { class: 'row' }, field(t('ns.name'), name), field(t('ns.desc'), desc), err),
      actions: [
        { label: t('common.cancel') },
        {
          label: t('common.save'),
          kind: 'primary',
          onClick: async (close) => {
            try {
              await api.put(`${CONSOLE}/namespaces`, { id: ns.id, name: name.value, desc: desc.value });
              close();
              toast(t('ns.renamed'));
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
    if (!await confirmDialog(t('ns.deleteTitle'), t('ns.deleteBody', { name: ns.name, id: ns.id }), t('common.delete'), 'danger solid')) return;
    try {
      await api.del(`${CONSOLE}/namespaces`, { id: ns.id });
      toast(t('ns.deleted', { id: ns.id }));
      ctx.go('#/namespaces');
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };
  main.append(
    h('div', { class: 'page-head' }, h('h1', { text: t('nav.namespaces') })),
    slot,
    table([
      { title: t('ns.name'), cell: (n) => h('strong', { text: n.name }) },
      { title: t('ns.id'), cell: (n) => h('span', { class: 'mono', text: n.id || t('ns.public') }) },
      { title: t('ns.desc'), cell: (n) => n.desc },
      { title: t('nav.configs'), class: 'num', cell: (n) => String(n.configCount) },
      { title: t('ns.access'), cell: (n) => badge(n.access === 'rw' ? t('ns.readWrite') : t('ns.read'), n.access === 'rw' ? 'ok' : '') },
      {
        title: t('common.actions'),
        cell: (n) => h('div', { class: 'actions' },
          h('button', { class: 'link', text: t('nav.configs'), onClick: () => { ctx.namespace = n.id; ctx.go('#/configs'); } }),
          admin && n.id ? h('button', { class: 'link', text: t('ns.rename'), onClick: () => rename(n) }) : null,
          admin && n.id ? h('button', { class: 'link danger', text: t('common.delete'), dataset: { delete: n.id }, onClick: () => remove(n) }) : null),
      },
    ], ctx.namespaces));
  if (admin) {
    const id = h('input', { placeholder: t('ns.idHint'), attrs: { 'data-testid': 'ns-id', 'aria-label': t('ns.idLabel') } });
    const name = h('input', { attrs: { 'data-testid': 'ns-name', 'aria-label': t('ns.nameLabel') } });
    const desc = h('input', { attrs: { 'aria-label': t('ns.descLabel') } });
    const err = h('div');
    main.append(h('div', { class: 'panel' },
      h('h2', { text: t('ns.createTitle') }),
      h('form', {
        class: 'row',
        onSubmit: async (e) => {
          e.preventDefault();
          if (!name.value.trim()) {
            show(err, 'error', t('ns.enterName'));
            return;
          }
          if (id.value && !/^[A-Za-z0-9_-]+$/.test(id.value)) {
            show(err, 'error', t('ns.idChars'));
            return;
          }
          try {
            const reply = await api.post(`${CONSOLE}/namespaces`, { id: id.value.trim(), name: name.value.trim(), desc: desc.value });
            toast(t('ns.created', { id: reply.id }));
            ctx.go('#/namespaces');
          } catch (e2) {
            show(err, 'error', errorText(e2));
          }
        },
      },
      field(t('ns.id'), id), field(t('ns.name'), name), field(t('ns.desc'), desc),
      h('button', { class: 'primary', type: 'submit', text: t('common.create'), attrs: { 'data-testid': 'ns-create' } })),
      err));
  }
}
