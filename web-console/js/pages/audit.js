// The audit log (admins): who wrote what, from where, and the outcome.

import { api } from '../api.js';
import { h, table, pager, fmtTime, badge, show, errorText } from '../ui.js';
import { t } from '../i18n.js';

export async function render(main, params, ctx) {
  const user = h('input', { value: params.user || '', placeholder: t('audit.userHint'), attrs: { 'aria-label': t('audit.user') } });
  const action = h('input', { value: params.action || '', placeholder: t('audit.actionHint'), attrs: { 'aria-label': t('audit.action') } });
  const target = h('input', { value: params.target || '', placeholder: t('audit.targetHint'), attrs: { 'aria-label': t('audit.target') } });
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
    h('div', { class: 'page-head' }, h('h1', { text: t('nav.audit') })),
    h('div', { class: 'panel' }, h('form', { class: 'row', onSubmit: (e) => { e.preventDefault(); go(1); } },
      user, action, target, h('button', { class: 'primary', type: 'submit', text: t('audit.filter') }),
      h('button', { type: 'button', text: t('common.reset'), onClick: () => ctx.go('#/audit') }))),
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
      { title: t('history.when'), class: 'nowrap', cell: (r) => fmtTime(r.time) },
      { title: t('audit.user'), cell: (r) => r.user },
      { title: t('audit.from'), cell: (r) => h('span', { class: 'mono', text: r.ip }) },
      { title: t('audit.action'), cell: (r) => h('span', { class: 'mono', text: r.action }) },
      { title: t('audit.target'), class: 'break', cell: (r) => h('span', { class: 'mono', text: r.target }) },
      { title: t('audit.detail'), class: 'break', cell: (r) => r.detail },
      { title: t('audit.outcome'), class: 'break', cell: (r) => (r.outcome === 'ok' ? badge('ok', 'ok') : badge(r.outcome, 'bad')) },
    ], page.pageItems, t('audit.empty'))),
    pager(page, go));
}
