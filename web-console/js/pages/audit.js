// The audit log (admins): who wrote what, from where, and the outcome.

import { api } from '../api.js';
import { h, table, pager, fmtTime, badge, show, errorText } from '../ui.js';

export async function render(main, params, ctx) {
  const user = h('input', { value: params.user || '', placeholder: 'user', attrs: { 'aria-label': 'User' } });
  const action = h('input', { value: params.action || '', placeholder: 'action prefix, e.g. config.', attrs: { 'aria-label': 'Action' } });
  const target = h('input', { value: params.target || '', placeholder: 'target contains', attrs: { 'aria-label': 'Target' } });
  const slot = h('div');
  const go = (page) => {
    const q = new URLSearchParams();
    if (user.value.trim()) q.set('user', user.value.trim());
    if (action.value.trim()) q.set('action', action.value.trim());
    if (target.value.trim()) q.set('target', target.value.trim());
    if (page > 1) q.set('page', page);
    ctx.go(`#/audit${q.toString() ? `?${q}` : ''}`);
  };
  main.append(
    h('div', { class: 'page-head' }, h('h1', { text: 'Audit log' })),
    h('div', { class: 'panel' }, h('form', { class: 'row', onSubmit: (e) => { e.preventDefault(); go(1); } },
      user, action, target, h('button', { class: 'primary', type: 'submit', text: 'Filter' }),
      h('button', { type: 'button', text: 'Reset', onClick: () => ctx.go('#/audit') }))),
    slot);
  let page;
  try {
    page = await api.get('/tacos/v1/admin/audit', {
      user: params.user || '', action: params.action || '', target: params.target || '',
      pageNo: params.page || 1, pageSize: 50,
    });
  } catch (e) {
    show(slot, 'error', errorText(e));
    return;
  }
  main.append(
    h('div', { attrs: { 'data-testid': 'audit' } }, table([
      { title: 'When', class: 'nowrap', cell: (r) => fmtTime(r.time) },
      { title: 'User', cell: (r) => r.user },
      { title: 'From', cell: (r) => h('span', { class: 'mono', text: r.ip }) },
      { title: 'Action', cell: (r) => h('span', { class: 'mono', text: r.action }) },
      { title: 'Target', cell: (r) => h('span', { class: 'mono', text: r.target }) },
      { title: 'Detail', cell: (r) => r.detail },
      { title: 'Outcome', cell: (r) => (r.outcome === 'ok' ? badge('ok', 'ok') : badge(r.outcome, 'bad')) },
    ], page.pageItems, 'No audit rows match.')),
    pager(page, go));
}
