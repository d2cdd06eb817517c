// A config's history: rows newest first, view one, diff any two (or one
// against the current version), roll back (a new publish of that content,
// itself recorded in history).

import { api, CONSOLE } from '../api.js';
import { h, table, pager, fmtTime, badge, modal, toast, show, errorText, nsName, fmtBytes } from '../ui.js';
import { renderDiff } from '../diff.js';
import { configLink } from './configs.js';

const OPS = { I: ['created', 'ok'], U: ['updated', 'info'], D: ['deleted', 'bad'] };

export async function render(main, params, ctx) {
  const ns = params.ns ?? ctx.namespace;
  const key = { group: params.group, dataId: params.dataId };
  const canWrite = (ctx.namespaces.find((n) => n.id === ns) || {}).access === 'rw';
  const pageNo = Number(params.page || 1);
  const [page, current] = await Promise.all([
    api.get(`${CONSOLE}/history`, { namespace: ns, group: key.group, dataId: key.dataId, pageNo, pageSize: 20 }),
    api.get(`${CONSOLE}/config`, { namespace: ns, group: key.group, dataId: key.dataId }).catch(() => ({ config: null })),
  ]);
  const currentMd5 = current.config ? current.config.md5 : '';
  const slot = h('div', { attrs: { 'data-testid': 'history-message' } });
  const selected = new Set();
  const compareButton = h('button', { text: 'Compare the two selected', disabled: true, attrs: { 'data-testid': 'compare' } });

  const showDiff = async (left, right, title) => {
    try {
      const reply = await api.get(`${CONSOLE}/history/diff`, { left, right });
      modal({ title, body: h('div', { attrs: { 'data-testid': 'history-diff' } }, renderDiff(reply.diff, { leftLabel: `#${left}`, rightLabel: right === 'current' ? 'current' : `#${right}` })) });
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };
  const view = async (row) => {
    try {
      const full = await api.get(`${CONSOLE}/history/item`, { id: row.id });
      modal({
        title: `Version #${row.id} of ${key.group}/${key.dataId}`,
        body: h('div', {},
          h('p', { class: 'muted', text: `${OPS[row.op][0]} ${fmtTime(row.time)} by ${row.srcUser || 'unknown'} from ${row.srcIp || '?'} · md5 ${row.md5}` }),
          h('pre', { class: 'content', text: full.content })),
      });
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };
  const rollback = async (row) => {
    let diff;
    try {
      diff = current.config
        ? (await api.get(`${CONSOLE}/history/diff`, { left: 'current', right: row.id })).diff
        : null;
    } catch (e) {
      show(slot, 'error', errorText(e));
      return;
    }
    modal({
      title: `Roll back ${key.group}/${key.dataId} to version #${row.id}`,
      body: h('div', { attrs: { 'data-testid': 'rollback-review' } },
        h('p', { text: 'This publishes the content of that version again, as a new version (recorded in history). What will change:' }),
        diff ? renderDiff(diff, { leftLabel: 'current', rightLabel: `#${row.id}` }) : h('p', { class: 'muted', text: 'The config is deleted now; rolling back creates it again.' })),
      actions: [
        { label: 'Cancel' },
        {
          label: 'Roll back',
          kind: 'primary',
          id: 'rollback',
          onClick: async (close) => {
            try {
              await api.post(`${CONSOLE}/history/rollback`, { id: row.id, casMd5: currentMd5 });
              close();
              toast(`Rolled back to version #${row.id}.`);
              ctx.go(configLink('history', key, ns));
            } catch (e) {
              close();
              show(slot, 'error', errorText(e));
            }
          },
        },
      ],
    });
  };

  compareButton.addEventListener('click', () => {
    const [a, b] = [...selected].sort((x, y) => x - y);
    showDiff(a, b, `Version #${a} → version #${b}`);
  });
  const pick = (row, checked) => {
    if (checked) selected.add(row.id);
    else selected.delete(row.id);
    compareButton.disabled = selected.size !== 2;
  };

  main.append(
    h('div', { class: 'page-head' },
      h('div', {},
        h('div', { class: 'crumbs' }, h('a', { href: '#/configs', text: 'Configs' }), ` · namespace ${nsName(ns)}`),
        h('h1', { text: `History of ${key.group} / ${key.dataId}` })),
      h('span', { class: 'spacer' }),
      h('div', { class: 'actions' },
        current.config ? h('a', { href: configLink('config', key, ns), text: 'Edit' }) : badge('deleted', 'bad'),
        h('a', { href: configLink('listeners', key, ns), text: 'Listeners' }))),
    h('p', { class: 'muted', text: 'As in Nacos, a "created" row holds the content it created and an "updated" or "deleted" row holds the content as it was before that change: each row is a version the config had.' }),
    slot,
    h('div', { class: 'actions' }, compareButton),
    h('div', { attrs: { 'data-testid': 'history-table' } }, table([
      { title: '', cell: (r) => h('input', { type: 'checkbox', attrs: { 'aria-label': `select #${r.id}` }, onChange: (e) => pick(r, e.target.checked) }) },
      { title: 'Version', cell: (r) => h('span', { class: 'mono', text: `#${r.id}` }) },
      { title: 'Change', cell: (r) => badge(OPS[r.op][0], OPS[r.op][1]) },
      { title: 'When', class: 'nowrap', cell: (r) => fmtTime(r.time) },
      { title: 'By', cell: (r) => `${r.srcUser || 'unknown'} (${r.srcIp || '?'})` },
      { title: 'Content', cell: (r) => h('span', {}, h('span', { class: 'mono', text: r.md5.slice(0, 10) }), ` · ${fmtBytes(r.size)} `, r.current ? badge('= current', 'ok') : null) },
      {
        title: 'Actions',
        cell: (r) => h('div', { class: 'actions' },
          h('button', { class: 'link', text: 'View', onClick: () => view(r) }),
          current.config && !r.current ? h('button', { class: 'link', text: 'Diff with current', onClick: () => showDiff(r.id, 'current', `Version #${r.id} → current`) }) : null,
          canWrite && !r.current ? h('button', { class: 'link', text: 'Roll back to this', dataset: { rollback: r.id }, onClick: () => rollback(r) }) : null),
      },
    ], page.pageItems, 'No history for this config.')),
    pager(page, (p) => ctx.go(`${configLink('history', key, ns)}&page=${p}`)));
}
