// The dashboard (admins): charts of every node's recent samples, from
// GET /tacos/api/console/dashboard (each node keeps one sample a second
// for 5 minutes and one every 5 s for an hour: src/samples.rs). Charts are
// uPlot, from the bundle in web-console/lib/. Refreshes every 5 s.

import { api, CONSOLE } from '../api.js';
import { h, show, errorText, fmtBytes } from '../ui.js';
import { uPlot } from '../code.js';
import { t } from '../i18n.js';

const COLORS = ['#1f6feb', '#d4462a', '#1d7f45', '#8a5a00', '#7a3fc0', '#0b7a85'];

/** The charts: a title, a unit, and the series each node contributes. */
const CHARTS = [
  { id: 'publishes', title: 'dash.publishes', unit: '/s', series: [['publishesPerS', 'dash.publishesPerS'], ['readsPerS', 'dash.readsPerS']] },
  { id: 'latency', title: 'dash.latency', unit: 'ms', series: [['httpP99Ms', 'dash.http'], ['grpcP99Ms', 'dash.grpc']] },
  { id: 'listeners', title: 'dash.listeners', unit: '', series: [['longPolls', 'dash.longPolls'], ['grpcListeners', 'dash.grpcListeners']] },
  { id: 'push', title: 'dash.push', unit: 'ms', series: [['pushP99Ms', 'dash.pushAck'], ['notifyP99Ms', 'dash.notify']] },
  { id: 'fsync', title: 'dash.fsync', unit: 'ms', series: [['fsyncP99Ms', 'dash.fsyncP99']] },
  { id: 'raft', title: 'dash.raft', unit: '', series: [['committed', 'dash.committed'], ['applied', 'dash.applied']] },
  { id: 'lag', title: 'dash.lag', unit: '', lag: true },
  { id: 'rss', title: 'dash.rss', unit: 'MiB', series: [[(s) => s.rssBytes / 1048576, 'dash.rssSeries']] },
  { id: 'cpu', title: 'dash.cpu', unit: '%', series: [['cpuPercent', 'dash.cpuSeries']] },
];

const value = (sample, field) => {
  const v = typeof field === 'function' ? field(sample) : sample[field];
  return v === undefined ? null : v;
};

const fmt = (v, unit) => {
  if (v === null || v === undefined) return '–';
  const n = Math.abs(v) >= 100 || Number.isInteger(v) ? Math.round(v) : Math.round(v * 100) / 100;
  return unit === '' ? String(n) : unit === '/s' ? `${n}/s` : `${n} ${unit}`;
};

/** One chart's data: uPlot's aligned table and the series' labels. */
function chartData(chart, reply) {
  const tables = [];
  const series = [];
  reply.nodes.forEach((node, i) => {
    const xs = node.samples.map((s) => s.time / 1000);
    if (chart.lag) {
      // The leader's view of each follower.
      if (node.node !== reply.leader) return;
      const followers = [...new Set(node.samples.flatMap((s) => Object.keys(s.followerLag)))];
      followers.forEach((f, j) => {
        tables.push([xs, node.samples.map((s) => s.followerLag[f] ?? null)]);
        series.push({ label: t('dash.follower', { node: f }), stroke: COLORS[(j + 1) % COLORS.length], dash: [] });
      });
      return;
    }
    chart.series.forEach(([field, label], j) => {
      tables.push([xs, node.samples.map((s) => value(s, field))]);
      series.push({ label: `${t(label)} · n${node.node}`, stroke: COLORS[(i * chart.series.length + j) % COLORS.length], dash: [] });
    });
  });
  const data = tables.length ? uPlot.join(tables) : [[]];
  return { data, series };
}

export async function render(main, params, ctx) {
  const windowName = params.window === '5m' ? '5m' : '1h';
  const slot = h('div');
  const cards = h('div', { class: 'cards', attrs: { 'data-testid': 'dash-cards' } });
  const grid = h('div', { class: 'charts' });
  const plots = new Map();
  const tab = (name, label) => h('a', { href: `#/dashboard?window=${name}`, class: name === windowName ? 'active' : '', text: label, attrs: { 'data-testid': `window-${name}` } });
  main.append(
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: t('nav.dashboard') }), h('div', { class: 'muted', text: t('dash.explain') })),
      h('span', { class: 'spacer' })),
    h('div', { class: 'tabs' }, tab('1h', t('dash.lastHour')), tab('5m', t('dash.last5m'))),
    slot, cards, grid);

  const panels = CHARTS.map((chart) => {
    const now = h('div', { class: 'chart-now' });
    const box = h('div', { class: 'chart-box' });
    const panel = h('div', { class: 'panel chart', attrs: { 'data-testid': `chart-${chart.id}` } },
      h('div', { class: 'chart-head' }, h('h2', { text: t(chart.title) }), h('span', { class: 'muted', text: chart.unit ? chart.unit.replace('/s', t('dash.perSecond')) : '' })),
      now, box);
    grid.append(panel);
    return { chart, panel, box, now };
  });

  const draw = (reply) => {
    for (const p of panels) {
      const { data, series } = chartData(p.chart, reply);
      // The latest value of each series, readable without hovering.
      const latest = series.map((s, i) => {
        const column = data[i + 1] || [];
        let v = null;
        for (let k = column.length - 1; k >= 0 && v === null; k--) v = column[k];
        return { label: s.label, v, color: s.stroke };
      });
      const max = Math.max(0, ...data.slice(1).flat().filter((v) => typeof v === 'number'));
      p.panel.dataset.max = String(max);
      p.now.replaceChildren(...(latest.length ? latest.map((l) => h('span', { class: 'now-item' },
        h('i', { class: 'swatch', style: `background:${l.color}` }), `${l.label}: `, h('strong', { text: fmt(l.v, p.chart.unit) })))
        : [h('span', { class: 'muted', text: p.chart.lag ? t('dash.noFollowers') : t('dash.noData') })]));
      const width = Math.max(p.box.clientWidth, 280);
      const key = `${p.chart.id}:${series.map((s) => s.label).join('|')}`;
      let plot = plots.get(p.chart.id);
      if (plot && plot.key !== key) {
        plot.u.destroy();
        plot = null;
      }
      if (!plot) {
        const u = new uPlot({
          width,
          height: 190,
          legend: { show: false },
          cursor: { drag: { x: false, y: false } },
          scales: { x: { time: true }, y: { range: (u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
          axes: [{ stroke: '#5f6b7f', grid: { stroke: '#eef1f6' } }, { stroke: '#5f6b7f', grid: { stroke: '#eef1f6' }, size: 56 }],
          series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke, dash: s.dash, width: 1.6, spanGaps: true, points: { show: false } }))],
        }, data, p.box);
        plot = { u, key };
        plots.set(p.chart.id, plot);
      } else {
        plot.u.setData(data);
        if (plot.u.width !== width) plot.u.setSize({ width, height: 190 });
      }
    }
  };

  const load = async () => {
    let reply;
    try {
      reply = await api.get(`${CONSOLE}/dashboard`, { window: windowName });
    } catch (e) {
      show(slot, 'error', errorText(e));
      return;
    }
    show(slot, null, null);
    for (const u of reply.unreachable) slot.append(h('div', { class: 'message warn', text: t('dash.unreachable', { node: u.node, error: u.error }) }));
    const mine = reply.nodes.find((n) => n.thisNode) || reply.nodes[0];
    const last = mine && mine.samples.length ? mine.samples[mine.samples.length - 1] : null;
    const card = (label, text, testid) => h('div', { class: 'card' }, h('div', { class: 'label', text: label }),
      h('div', { class: 'value', text, attrs: { 'data-testid': testid } }));
    cards.replaceChildren(
      card(t('dash.publishesTotal', { node: mine ? mine.node : '?' }), last ? String(last.publishesTotal) : '–', 'publishes-total'),
      card(t('dash.readsTotal', { node: mine ? mine.node : '?' }), last ? String(last.readsTotal) : '–', 'reads-total'),
      card(t('dash.nodes'), String(reply.nodes.length), 'dash-nodes'),
      card(t('dash.samples'), t('dash.samplesEvery', { n: mine ? mine.samples.length : 0, s: reply.intervalMs / 1000 }), 'dash-samples'),
      card(t('dash.memory'), last ? fmtBytes(last.rssBytes) : '–', 'dash-rss'));
    draw(reply);
  };
  await load();
  const timer = setInterval(load, 5000);
  const resize = new ResizeObserver(() => {
    for (const [, plot] of plots) {
      const box = plot.u.root.parentElement;
      if (box && Math.abs(box.clientWidth - plot.u.width) > 4) plot.u.setSize({ width: Math.max(box.clientWidth, 280), height: 190 });
    }
  });
  resize.observe(grid);
  return () => {
    clearInterval(timer);
    resize.disconnect();
    for (const [, plot] of plots) plot.u.destroy();
  };
}
