// A config's history: rows newest first, view one, diff any two (or one
// against the current version) side by side, roll back (a new publish of
// that content, itself recorded in history).

import { api, CONSOLE } from '../api.js';
import { h, table, pager, fmtTime, badge, modal, toast, show, errorText, nsName, fmtBytes } from '../ui.js';
import { renderDiff } from '../diff.js';
import { createEditor, editorPhrases } from '../code.js';
import { configLink } from './configs.js';
import { t } from '../i18n.js';

const OPS = { I: ['history.created', 'ok'], U: ['history.updated', 'info'], D: ['history.deleted', 'bad'] };

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
  const type = current.config ? current.config.type : 'text';
  const slot = h('div', { attrs: { 'data-testid': 'history-message' } });
  const selected = new Set();
  const compareButton = h('button', { text: t('history.compare'), disabled: true, attrs: { 'data-testid': 'compare' } });
  const label = (side) => (side === 'current' ? t('diff.current') : `#${side}`);

  const showDiff = async (left, right, title) => {
    try {
      const reply = await api.get(`${CONSOLE}/history/diff`, { left, right });
      modal({
        title,
        body: h('div', { attrs: { 'data-testid': 'history-diff' } },
          renderDiff(reply.diff, { leftLabel: label(left), rightLabel: label(right), left: reply.leftContent, right: reply.rightContent, type })),
      });
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };
  const view = async (row) => {
    try {
      const full = await api.get(`${CONSOLE}/history/item`, { id: row.id });
      const box = h('div', { class: 'code-editor', attrs: { 'data-testid': 'history-content' } });
      createEditor(box, { doc: full.content, type, readOnly: true, label: t('history.content'), phrases: editorPhrases(), minHeight: '120px' });
      modal({
        title: t('history.versionOf', { id: row.id, key: `${key.group}/${key.dataId}` }),
        body: h('div', {},
          h('p', { class: 'muted', text: t('history.rowMeta', { op: t(OPS[row.op][0]), time: fmtTime(row.time), by: row.srcUser || t('common.unknown'), ip: row.srcIp || '?', md5: row.md5 }) }),
          box),
      });
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };
  const rollback = async (row) => {
    let reply;
    try {
      reply = current.config ? await api.get(`${CONSOLE}/history/diff`, { left: 'current', right: row.id }) : null;
    } catch (e) {
      show(slot, 'error', errorText(e));
      return;
    }
    modal({
      title: t('history.rollbackTitle', { key: `${key.group}/${key.dataId}`, id: row.id }),
      body: h('div', { attrs: { 'data-testid': 'rollback-review' } },
        h('p', { text: t('history.rollbackBody') }),
        reply
          ? renderDiff(reply.diff, { leftLabel: t('diff.current'), rightLabel: `#${row.id}`, left: reply.leftContent, right: reply.rightContent, type })
          : h('p', { class: 'muted', text: t('history.rollbackDeleted') })),
      actions: [
        { label: t('common.cancel') },
        {
          label: t('history.rollback'),
          kind: 'primary',
          id: 'rollback',
          onClick: async (close) => {
            try {
              await api.post(`${CONSOLE}/history/rollback`, { id: row.id, casMd5: currentMd5 });
              close();
              toast(t('history.rolledBack', { id: row.id }));
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
    showDiff(a, b, t('history.compareTitle', { a, b }));
  });
  const pick = (row, checked) => {
    if (checked) selected.add(row.id);
    else selected.delete(row.id);
    compareButton.disabled = selected.size !== 2;
  };

  main.append(
    h('div', { class: 'page-head' },
      h('div', {},
        h('div', { class: 'crumbs' }, h('a', { href: '#/configs', text: t('nav.configs') }), ` · ${t('common.namespaceIs', { ns: nsName(ns) })}`),
        h('h1', { text: t('history.title', { key: `${key.group} / ${key.dataId}` }) })),
      h('span', { class: 'spacer' }),
      h('div', { class: 'actions' },
        current.config ? h('a', { href: configLink('config', key, ns), text: t('configs.edit') }) : badge(t('history.deleted'), 'bad'),
        h('a', { href: configLink('listeners', key, ns), text: t('configs.listeners') }))),
    h('p', { class: 'muted', text: t('history.explain') }),
    slot,
    h('div', { class: 'actions' }, compareButton),
    h('div', { attrs: { 'data-testid': 'history-table' } }, table([
      { title: '', cell: (r) => h('input', { type: 'checkbox', attrs: { 'aria-label': t('history.select', { id: r.id }) }, onChange: (e) => pick(r, e.target.checked) }) },
      { title: t('history.version'), cell: (r) => h('span', { class: 'mono', text: `#${r.id}` }) },
      { title: t('history.change'), cell: (r) => badge(t(OPS[r.op][0]), OPS[r.op][1]) },
      { title: t('history.when'), class: 'nowrap', cell: (r) => fmtTime(r.time) },
      { title: t('history.by'), cell: (r) => `${r.srcUser || t('common.unknown')} (${r.srcIp || '?'})` },
      { title: t('history.content'), cell: (r) => h('span', {}, h('span', { class: 'mono', text: r.md5.slice(0, 10) }), ` · ${fmtBytes(r.size)} `, r.current ? badge(t('history.isCurrent'), 'ok') : null) },
      {
        title: t('common.actions'),
        cell: (r) => h('div', { class: 'actions' },
          h('button', { class: 'link', text: t('history.view'), onClick: () => view(r) }),
          current.config && !r.current ? h('button', { class: 'link', text: t('history.diffCurrent'), onClick: () => showDiff(r.id, 'current', t('history.toCurrent', { id: r.id })) }) : null,
          canWrite && !r.current ? h('button', { class: 'link', text: t('history.rollbackTo'), dataset: { rollback: r.id }, onClick: () => rollback(r) }) : null),
      },
    ], page.pageItems, t('history.empty'))),
    pager(page, (p) => ctx.go(`${configLink('history', key, ns)}&page=${p}`)));
}
