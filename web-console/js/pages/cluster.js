// The cluster: every member's Raft view and health, gathered by the node
// that serves the console (GET /tacos/api/console/cluster).

import { api, CONSOLE } from '../api.js';
import { h, table, badge, show, errorText } from '../ui.js';
import { t } from '../i18n.js';

const val = (v) => (v === null || v === undefined ? '–' : String(v));

export async function render(main) {
  const slot = h('div');
  const body = h('div', { attrs: { 'data-testid': 'cluster' } });
  const load = async () => {
    let c;
    try {
      c = await api.get(`${CONSOLE}/cluster`);
    } catch (e) {
      show(slot, 'error', errorText(e));
      return;
    }
    show(slot, null, null);
    const healthy = c.nodes.filter((n) => n.healthy).length;
    const card = (label, value, testid) => h('div', { class: 'card' },
      h('div', { class: 'label', text: label }), h('div', { class: 'value', text: value, attrs: testid ? { 'data-testid': testid } : {} }));
    body.replaceChildren(
      h('div', { class: 'cards' },
        card(t('cluster.leader'), c.leader ? t('cluster.nodeN', { id: c.leader }) : t('cluster.noLeader'), 'leader'),
        card(t('cluster.term'), val(c.term), 'term'),
        card(t('cluster.voters'), String(c.voters.length)),
        card(t('cluster.healthyNodes'), t('cluster.nOfM', { n: healthy, m: c.nodes.length })),
        card(t('cluster.thisConsole'), t('cluster.nodeN', { id: c.nodeId }))),
      table([
        { title: t('cluster.node'), class: 'nowrap', cell: (n) => h('span', {}, h('strong', { text: `#${n.id}` }), n.thisNode ? ` ${t('cluster.thisOne')}` : '') },
        { title: t('cluster.role'), cell: (n) => (n.id === c.leader ? badge(t('cluster.leaderBadge'), 'info') : badge(n.role)) },
        { title: t('cluster.state'), cell: (n) => (n.reachable ? n.state : badge(t('cluster.unreachable'), 'bad')) },
        { title: 'HTTP', cell: (n) => h('span', { class: 'mono', text: n.httpAddr }) },
        { title: t('cluster.clusterAddr'), cell: (n) => h('span', { class: 'mono', text: n.clusterAddr }) },
        { title: t('cluster.term'), class: 'num', cell: (n) => (n.reachable ? val(n.term) : '–') },
        { title: t('cluster.lastLog'), class: 'num', cell: (n) => val(n.lastLogIndex) },
        { title: t('cluster.committed'), class: 'num', cell: (n) => val(n.committed) },
        { title: t('cluster.applied'), class: 'num', cell: (n) => val(n.applied) },
        { title: t('cluster.snapshot'), class: 'num', cell: (n) => val(n.snapshot) },
        { title: t('cluster.lag'), class: 'num', cell: (n) => (n.id === c.leader ? '0' : val(n.lagEntries)) },
        { title: t('cluster.health'), cell: (n) => (n.healthy ? badge(t('cluster.healthy'), 'ok') : badge(n.error ? t('cluster.down') : t('cluster.noLeaderBadge'), 'bad')) },
      ], c.nodes),
      ...c.nodes.filter((n) => n.error).map((n) => h('div', { class: 'message error', text: `${t('cluster.nodeN', { id: n.id })}: ${n.error}` })),
      h('p', { class: 'muted', text: t('cluster.explain') }));
  };
  main.append(
    h('div', { class: 'page-head' }, h('h1', { text: t('nav.cluster') }), h('span', { class: 'spacer' }), h('button', { text: t('common.refresh'), onClick: load })),
    slot,
    body);
  await load();
  const timer = setInterval(load, 5000);
  return () => clearInterval(timer);
}
