// Configs of the current namespace: search (blur or exact) by dataId and
// group, filter by type or content, paging; links to edit, history and
// listeners; delete.

import { api, CONSOLE } from '../api.js';
import { h, table, pager, fmtTime, badge, toast, confirmDialog, errorText, show, nsName } from '../ui.js';
import { t } from '../i18n.js';

const TYPES = ['', 'text', 'json', 'yaml', 'properties', 'xml', 'toml', 'html'];
const PAGE_SIZE = 20;

export function configLink(page, c, ns) {
  const q = new URLSearchParams({ ns, group: c.group, dataId: c.dataId });
  return `#/${page}?${q}`;
}

export async function render(main, params, ctx) {
  const ns = ctx.namespace;
  const dataId = h('input', { value: params.dataId || '', placeholder: t('configs.dataIdHint'), attrs: { 'aria-label': t('config.dataId'), 'data-testid': 'search-dataid' } });
  const group = h('input', { value: params.group || '', placeholder: t('configs.anyGroup'), attrs: { 'aria-label': t('config.group') } });
  const mode = h('select', { attrs: { 'aria-label': t('configs.match') } },
    h('option', { value: 'blur', text: t('configs.blur') }),
    h('option', { value: 'accurate', text: t('configs.exact') }));
  mode.value = params.mode || 'blur';
  const type = h('select', { attrs: { 'aria-label': t('config.type') } }, TYPES.map((x) => h('option', { value: x, text: x || t('configs.anyType') })));
  type.value = params.type || '';
  const content = h('input', { value: params.content || '', placeholder: t('configs.contentHint'), attrs: { 'aria-label': t('configs.contentContains') } });
  const slot = h('div');
  const results = h('div');

  const search = (page = 1) => {
    const q = new URLSearchParams();
    if (dataId.value.trim()) q.set('dataId', dataId.value.trim());
    if (group.value.trim()) q.set('group', group.value.trim());
    if (mode.value !== 'blur') q.set('mode', mode.value);
    if (type.value) q.set('type', type.value);
    if (content.value) q.set('content', content.value);
    if (page > 1) q.set('page', page);
    ctx.go(`#/configs${q.toString() ? `?${q}` : ''}`);
  };
  const form = h('form', { class: 'row', onSubmit: (e) => { e.preventDefault(); search(1); } },
    dataId, group, mode, type, content,
    h('button', { class: 'primary', type: 'submit', text: t('configs.search') }),
    h('button', { type: 'button', text: t('common.reset'), onClick: () => ctx.go('#/configs') }));

  const canWrite = ctx.canWrite();
  main.append(
    h('div', { class: 'page-head' },
      h('div', {},
        h('div', { class: 'crumbs', text: t('common.namespaceTitle', { ns: nsName(ns) }) }),
        h('h1', { text: t('nav.configs') })),
      h('span', { class: 'spacer' }),
      canWrite ? h('a', { href: `#/config?ns=${encodeURIComponent(ns)}&new=1` },
        h('button', { class: 'primary', text: t('editor.newConfig'), attrs: { 'data-testid': 'new-config' } })) : null),
    h('div', { class: 'panel' }, form),
    slot,
    results);

  const load = async () => {
    let page;
    try {
      page = await api.get(`${CONSOLE}/configs`, {
        namespace: ns,
        dataId: params.dataId || '',
        group: params.group || '',
        search: params.mode || 'blur',
        type: params.type || '',
        content: params.content || '',
        pageNo: params.page || 1,
        pageSize: PAGE_SIZE,
      });
    } catch (e) {
      show(slot, 'error', errorText(e));
      return;
    }
    const remove = async (c) => {
      const ok = await confirmDialog(t('configs.deleteTitle'),
        t('configs.deleteBody', { key: `${c.group}/${c.dataId}`, ns: nsName(ns) }),
        t('common.delete'), 'danger solid');
      if (!ok) return;
      try {
        await api.del(`${CONSOLE}/config`, { namespace: ns, group: c.group, dataId: c.dataId });
        toast(t('configs.deleted', { key: `${c.group}/${c.dataId}` }));
        load();
      } catch (e) {
        show(slot, 'error', errorText(e));
      }
    };
    results.replaceChildren(
      table([
        { title: t('config.dataId'), cell: (c) => h('a', { href: configLink('config', c, ns), text: c.dataId, class: 'mono' }) },
        { title: t('config.group'), cell: (c) => c.group },
        { title: t('config.type'), cell: (c) => badge(c.type) },
        { title: t('config.app'), cell: (c) => c.appName },
        { title: t('configs.modified'), class: 'nowrap', cell: (c) => fmtTime(c.modifyTime) },
        { title: t('history.by'), cell: (c) => c.modifiedBy },
        { title: '', cell: (c) => (c.beta ? badge('beta', 'warn') : '') },
        {
          title: t('common.actions'),
          cell: (c) => h('div', { class: 'actions' },
            h('a', { href: configLink('config', c, ns), text: canWrite ? t('configs.edit') : t('history.view') }),
            h('a', { href: configLink('history', c, ns), text: t('configs.history') }),
            h('a', { href: configLink('listeners', c, ns), text: t('configs.listeners') }),
            canWrite ? h('button', { class: 'link danger', text: t('common.delete'), onClick: () => remove(c) }) : null),
        },
      ], page.pageItems, params.dataId || params.group ? t('configs.noMatch') : t('configs.empty')),
      pager(page, (p) => search(p)));
  };
  await load();
}
