// Who listens to a config: HTTP long polls (held now, or between polls)
// and gRPC connections, with the md5 each holds, which version that is
// (formal, or a gray: beta, tag_...) and whether it is the version the
// client should have (a gray for a client whose IP or tag it serves).

import { api, CONSOLE } from '../api.js';
import { h, table, badge, show, errorText, nsName } from '../ui.js';
import { configLink } from './configs.js';
import { t } from '../i18n.js';

const STATES = {
  waiting: 'listeners.state.waiting',
  'between-polls': 'listeners.state.betweenPolls',
  subscribed: 'listeners.state.subscribed',
  'push-pending': 'listeners.state.pushPending',
};

function age(ms) {
  if (ms < 1000) return `${ms} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}

export async function render(main, params, ctx) {
  const ns = params.ns ?? ctx.namespace;
  const key = { group: params.group, dataId: params.dataId };
  const slot = h('div');
  const body = h('div', { attrs: { 'data-testid': 'listeners' } });
  const load = async () => {
    let reply;
    try {
      reply = await api.get(`${CONSOLE}/config/listeners`, { namespace: ns, group: key.group, dataId: key.dataId });
    } catch (e) {
      show(slot, 'error', errorText(e));
      return;
    }
    show(slot, null, null);
    const sync = (l) => {
      if (l.inSync === true) return badge(t('listeners.inSync'), 'ok');
      if (l.inSync === false) return badge(l.state === 'push-pending' ? t('listeners.behindPending') : t('listeners.behind'), 'bad');
      return badge(t('listeners.unknown'), 'warn');
    };
    const version = (l) => {
      const holds = l.version ?? t('listeners.olderVersion');
      if (l.expectedVersion && l.expectedVersion !== l.version) return t('listeners.shouldBe', { holds, expected: l.expectedVersion });
      return holds;
    };
    body.replaceChildren(
      h('p', { class: 'muted' },
        t('listeners.currentMd5', { md5: reply.currentMd5 || t('listeners.deleted') }),
        reply.beta ? ` · ${t('listeners.betaMd5', { md5: reply.beta.md5, ips: reply.beta.ips.join(', ') })}` : ''),
      ...reply.unreachable.map((u) => h('div', { class: 'message warn', text: t('listeners.unreachable', { node: u.node, error: u.error }) })),
      table([
        { title: t('listeners.node'), cell: (l) => `#${l.node}` },
        { title: t('listeners.client'), cell: (l) => h('span', { class: 'mono', text: l.client }) },
        { title: t('listeners.protocol'), cell: (l) => badge(l.protocol === 'grpc' ? 'gRPC' : 'HTTP', 'info') },
        { title: t('listeners.md5'), cell: (l) => h('span', { class: 'mono', text: l.md5 || t('listeners.none') }) },
        { title: t('listeners.version'), cell: version },
        { title: t('listeners.sync'), cell: sync },
        { title: t('listeners.stateTitle'), cell: (l) => (STATES[l.state] ? t(STATES[l.state]) : l.state) },
        { title: t('listeners.for'), cell: (l) => (l.protocol === 'http' ? age(l.ageMs) : '') },
      ], reply.listeners, t('listeners.empty')),
      h('p', { class: 'muted', text: t('listeners.explain') }));
  };
  main.append(
    h('div', { class: 'page-head' },
      h('div', {},
        h('div', { class: 'crumbs' }, h('a', { href: '#/configs', text: t('nav.configs') }), ` · ${t('common.namespaceIs', { ns: nsName(ns) })}`),
        h('h1', { text: t('listeners.title', { key: `${key.group} / ${key.dataId}` }) })),
      h('span', { class: 'spacer' }),
      h('div', { class: 'actions' },
        h('button', { text: t('common.refresh'), onClick: load }),
        h('a', { href: configLink('config', key, ns), text: t('configs.edit') }),
        h('a', { href: configLink('history', key, ns), text: t('configs.history') }))),
    slot,
    body);
  await load();
  const timer = setInterval(load, 5000);
  return () => clearInterval(timer);
}
