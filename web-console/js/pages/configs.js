// Configs of the current namespace: search (blur or exact) by dataId and
// group, filter by type or content, paging; links to edit, history and
// listeners; delete.

import { api, CONSOLE } from '../api.js';
import { h, table, pager, fmtTime, badge, toast, confirmDialog, errorText, show, nsName } from '../ui.js';

const TYPES = ['', 'text', 'json', 'yaml', 'properties', 'xml', 'toml', 'html'];
const PAGE_SIZE = 20;

export function configLink(page, c, ns) {
  const q = new URLSearchParams({ ns, group: c.group, dataId: c.dataId });
  return `#/${page}?${q}`;
}

export async function render(main, params, ctx) {
  const ns = ctx.namespace;
  const dataId = h('input', { value: params.dataId || '', placeholder: 'e.g. app or *.yaml', attrs: { 'aria-label': 'Data ID', 'data-testid': 'search-dataid' } });
  const group = h('input', { value: params.group || '', placeholder: 'any group', attrs: { 'aria-label': 'Group' } });
  const mode = h('select', { attrs: { 'aria-label': 'Match' } },
    h('option', { value: 'blur', text: 'contains / wildcard' }),
    h('option', { value: 'accurate', text: 'exact' }));
  mode.value = params.mode || 'blur';
  const type = h('select', { attrs: { 'aria-label': 'Type' } }, TYPES.map((t) => h('option', { value: t, text: t || 'any type' })));
  type.value = params.type || '';
  const content = h('input', { value: params.content || '', placeholder: 'text in the content', attrs: { 'aria-label': 'Content contains' } });
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
    h('button', { class: 'primary', type: 'submit', text: 'Search' }),
    h('button', { type: 'button', text: 'Reset', onClick: () => ctx.go('#/configs') }));

  const canWrite = ctx.canWrite();
  main.append(
    h('div', { class: 'page-head' },
      h('div', {},
        h('div', { class: 'crumbs', text: `Namespace ${nsName(ns)}` }),
        h('h1', { text: 'Configs' })),
      h('span', { class: 'spacer' }),
      canWrite ? h('a', { href: `#/config?ns=${encodeURIComponent(ns)}&new=1` },
        h('button', { class: 'primary', text: 'New config', attrs: { 'data-testid': 'new-config' } })) : null),
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
      const ok = await confirmDialog('Delete config',
        `Delete ${c.group}/${c.dataId} from namespace ${nsName(ns)}? Clients listening to it will see it disappear. Its history stays.`,
        'Delete', 'danger solid');
      if (!ok) return;
      try {
        await api.del(`${CONSOLE}/config`, { namespace: ns, group: c.group, dataId: c.dataId });
        toast(`Deleted ${c.group}/${c.dataId}.`);
        load();
      } catch (e) {
        show(slot, 'error', errorText(e));
      }
    };
    results.replaceChildren(
      table([
        { title: 'Data ID', cell: (c) => h('a', { href: configLink('config', c, ns), text: c.dataId, class: 'mono' }) },
        { title: 'Group', cell: (c) => c.group },
        { title: 'Type', cell: (c) => badge(c.type) },
        { title: 'App', cell: (c) => c.appName },
        { title: 'Modified', class: 'nowrap', cell: (c) => fmtTime(c.modifyTime) },
        { title: 'By', cell: (c) => c.modifiedBy },
        { title: '', cell: (c) => (c.beta ? badge('beta', 'warn') : '') },
        {
          title: 'Actions',
          cell: (c) => h('div', { class: 'actions' },
            h('a', { href: configLink('config', c, ns), text: canWrite ? 'Edit' : 'View' }),
            h('a', { href: configLink('history', c, ns), text: 'History' }),
            h('a', { href: configLink('listeners', c, ns), text: 'Listeners' }),
            canWrite ? h('button', { class: 'link danger', text: 'Delete', onClick: () => remove(c) }) : null),
        },
      ], page.pageItems, params.dataId || params.group ? 'No config matches.' : 'No configs in this namespace yet.'),
      pager(page, (p) => search(p)));
  };
  await load();
}
