// The cluster: every member's Raft view and health, gathered by the node
// that serves the console (GET /tacos/api/console/cluster).

import { api, CONSOLE } from '../api.js';
import { h, table, badge, show, errorText } from '../ui.js';

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
        card('Leader', c.leader ? `node ${c.leader}` : 'none', 'leader'),
        card('Term', val(c.term), 'term'),
        card('Voters', String(c.voters.length)),
        card('Healthy nodes', `${healthy} of ${c.nodes.length}`),
        card('This console', `node ${c.nodeId}`)),
      table([
        { title: 'Node', class: 'nowrap', cell: (n) => h('span', {}, h('strong', { text: `#${n.id}` }), n.thisNode ? ' (this one)' : '') },
        { title: 'Role', cell: (n) => (n.id === c.leader ? badge('leader', 'info') : badge(n.role)) },
        { title: 'State', cell: (n) => (n.reachable ? n.state : badge('unreachable', 'bad')) },
        { title: 'HTTP', cell: (n) => h('span', { class: 'mono', text: n.httpAddr }) },
        { title: 'Cluster', cell: (n) => h('span', { class: 'mono', text: n.clusterAddr }) },
        { title: 'Term', class: 'num', cell: (n) => (n.reachable ? val(n.term) : '–') },
        { title: 'Last log', class: 'num', cell: (n) => val(n.lastLogIndex) },
        { title: 'Committed', class: 'num', cell: (n) => val(n.committed) },
        { title: 'Applied', class: 'num', cell: (n) => val(n.applied) },
        { title: 'Snapshot', class: 'num', cell: (n) => val(n.snapshot) },
        { title: 'Lag', class: 'num', cell: (n) => (n.id === c.leader ? '0' : val(n.lagEntries)) },
        { title: 'Health', cell: (n) => (n.healthy ? badge('healthy', 'ok') : badge(n.error ? 'down' : 'no leader', 'bad')) },
      ], c.nodes),
      ...c.nodes.filter((n) => n.error).map((n) => h('div', { class: 'message error', text: `node ${n.id}: ${n.error}` })),
      h('p', { class: 'muted', text: 'Lag: entries a member is behind the leader\'s last log entry, as the leader sees it. Refreshes every 5 s.' }));
  };
  main.append(
    h('div', { class: 'page-head' }, h('h1', { text: 'Cluster' }), h('span', { class: 'spacer' }), h('button', { text: 'Refresh', onClick: load })),
    slot,
    body);
  await load();
  const timer = setInterval(load, 5000);
  return () => clearInterval(timer);
}
