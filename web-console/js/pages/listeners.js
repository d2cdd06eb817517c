// Who listens to a config: HTTP long polls (held now, or between polls)
// and gRPC connections, with the md5 each holds, which version that is
// (formal, or a gray: beta, tag_...) and whether it is the version the
// client should have (a gray for a client whose IP or tag it serves).

import { api, CONSOLE } from '../api.js';
import { h, table, badge, show, errorText, nsName } from '../ui.js';
import { configLink } from './configs.js';

const STATES = {
  waiting: 'long poll held',
  'between-polls': 'between polls',
  subscribed: 'subscribed',
  'push-pending': 'push pending',
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
      if (l.inSync === true) return badge('in sync', 'ok');
      if (l.inSync === false) return badge(l.state === 'push-pending' ? 'behind · push pending' : 'behind', 'bad');
      return badge('unknown', 'warn');
    };
    const version = (l) => {
      const holds = l.version ?? 'older version';
      if (l.expectedVersion && l.expectedVersion !== l.version) return `${holds} (should be ${l.expectedVersion})`;
      return holds;
    };
    body.replaceChildren(
      h('p', { class: 'muted' },
        `Current md5 ${reply.currentMd5 || '(deleted)'}`,
        reply.beta ? ` · beta md5 ${reply.beta.md5} for ${reply.beta.ips.join(', ')}` : ''),
      ...reply.unreachable.map((u) => h('div', { class: 'message warn', text: `Node ${u.node} did not answer (${u.error}): its listeners are missing here.` })),
      table([
        { title: 'Node', cell: (l) => `#${l.node}` },
        { title: 'Client', cell: (l) => h('span', { class: 'mono', text: l.client }) },
        { title: 'Protocol', cell: (l) => badge(l.protocol === 'grpc' ? 'gRPC' : 'HTTP', 'info') },
        { title: 'md5 it holds', cell: (l) => h('span', { class: 'mono', text: l.md5 || '(none)' }) },
        { title: 'Version', cell: version },
        { title: 'In sync', cell: sync },
        { title: 'State', cell: (l) => STATES[l.state] || l.state },
        { title: 'For', cell: (l) => (l.protocol === 'http' ? age(l.ageMs) : '') },
      ], reply.listeners, 'Nobody listens to this config right now.'),
      h('p', { class: 'muted', text: 'Every node of the cluster is asked for the clients connected to it. HTTP clients long-poll: between two polls a client shows as "between polls" with the md5 it last reported, for up to 90 s. gRPC clients report their md5 when they start listening; after a push they fetch the new content, so a gRPC row marked behind with no push pending has been told of the change.' }));
  };
  main.append(
    h('div', { class: 'page-head' },
      h('div', {},
        h('div', { class: 'crumbs' }, h('a', { href: '#/configs', text: 'Configs' }), ` · namespace ${nsName(ns)}`),
        h('h1', { text: `Listeners of ${key.group} / ${key.dataId}` })),
      h('span', { class: 'spacer' }),
      h('div', { class: 'actions' },
        h('button', { text: 'Refresh', onClick: load }),
        h('a', { href: configLink('config', key, ns), text: 'Edit' }),
        h('a', { href: configLink('history', key, ns), text: 'History' }))),
    slot,
    body);
  await load();
  const timer = setInterval(load, 5000);
  return () => clearInterval(timer);
}
