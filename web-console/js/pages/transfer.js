// Import and export in the Nacos zip layout (group/dataId entries and a
// .metadata.yml), with a conflict policy and a report of what happened.

import { request, CONSOLE } from '../api.js';
import { h, field, show, toast, download, errorText, nsName, table, badge } from '../ui.js';

export async function render(main, params, ctx) {
  const ns = ctx.namespace;
  const canWrite = ctx.canWrite();

  // ---- export ----
  const group = h('input', { placeholder: 'any group', attrs: { 'aria-label': 'Export group' } });
  const dataId = h('input', { placeholder: 'any dataId (* wildcards)', attrs: { 'aria-label': 'Export dataId' } });
  const exportSlot = h('div');
  const exportButton = h('button', {
    class: 'primary',
    text: 'Export zip',
    attrs: { 'data-testid': 'export' },
    onClick: async () => {
      show(exportSlot, null, null);
      try {
        const response = await request('GET', `${CONSOLE}/export`, {
          query: { namespace: ns, group: group.value.trim(), dataId: dataId.value.trim() },
          raw: true,
        });
        const disposition = response.headers.get('Content-Disposition') || '';
        const name = (/filename="([^"]+)"/.exec(disposition) || [])[1] || 'tacos_config_export.zip';
        download(await response.blob(), name);
        toast(`Exported ${name}.`);
      } catch (e) {
        show(exportSlot, 'error', errorText(e));
      }
    },
  });

  // ---- import ----
  const file = h('input', { type: 'file', accept: '.zip,application/zip', attrs: { 'data-testid': 'import-file', 'aria-label': 'Zip file' } });
  const policy = h('select', { attrs: { 'data-testid': 'import-policy', 'aria-label': 'When a config exists' } },
    h('option', { value: 'abort', text: 'abort the whole import' }),
    h('option', { value: 'skip', text: 'skip it (keep the existing one)' }),
    h('option', { value: 'overwrite', text: 'overwrite it' }));
  const importSlot = h('div', { attrs: { 'data-testid': 'import-result' } });
  const importButton = h('button', {
    class: 'primary',
    text: 'Import',
    attrs: { 'data-testid': 'import' },
    onClick: async () => {
      show(importSlot, null, null);
      const chosen = file.files[0];
      if (!chosen) {
        show(importSlot, 'error', 'Choose a zip file first.');
        return;
      }
      importButton.disabled = true;
      try {
        const report = await request('POST', `${CONSOLE}/import`, {
          query: { namespace: ns, policy: policy.value },
          body: await chosen.arrayBuffer(),
          headers: { 'Content-Type': 'application/zip' },
        });
        importSlot.replaceChildren(renderReport(report));
        await ctx.reloadNamespaces();
      } catch (e) {
        const body = e.body || {};
        const detail = (body.problems || []).map((p) => `${p.entry}: ${p.reason}`)
          .concat((body.conflicts || []).map((k) => `${k} exists already`));
        show(importSlot, 'error', errorText(e), detail);
      } finally {
        importButton.disabled = false;
      }
    },
  });

  main.append(
    h('div', { class: 'page-head' },
      h('div', {}, h('div', { class: 'crumbs', text: `Namespace ${nsName(ns)}` }), h('h1', { text: 'Import / export' }))),
    h('div', { class: 'panel' },
      h('h2', { text: 'Export' }),
      h('p', { class: 'muted', text: 'A zip in the Nacos layout: one group/dataId entry per config and a .metadata.yml with types, descriptions and apps. Nacos imports it too.' }),
      h('div', { class: 'row' }, field('Group', group), field('Data ID', dataId), exportButton),
      exportSlot),
    h('div', { class: 'panel' },
      h('h2', { text: `Import into ${nsName(ns)}` }),
      canWrite
        ? h('div', {},
          h('p', { class: 'muted', text: 'Every entry is checked first (keys, blank content, syntax of its type), then all are written as one change: if one is bad or refused, nothing is imported.' }),
          h('div', { class: 'row' }, field('Zip file', file), field('When a config exists', policy), importButton),
          importSlot)
        : h('p', { class: 'muted', text: 'You may read this namespace but not import into it.' })));
}

function renderReport(report) {
  const rows = [];
  const add = (list, what, kind) => list.forEach((entry) => rows.push({ entry, what, kind }));
  add(report.created, 'created', 'ok');
  add(report.overwritten, 'overwritten', 'info');
  add(report.skipped, 'skipped (exists)', '');
  add(report.unchanged, 'unchanged', '');
  report.unrecognized.forEach((p) => rows.push({ entry: p.entry, what: `not imported: ${p.reason}`, kind: 'warn' }));
  const summary = `Created ${report.created.length}, overwritten ${report.overwritten.length}, skipped ${report.skipped.length}, unchanged ${report.unchanged.length}`
    + (report.unrecognized.length ? `, not recognized ${report.unrecognized.length}` : '') + '.';
  return h('div', {},
    h('div', { class: 'message ok', text: summary, attrs: { 'data-testid': 'import-summary' } }),
    table([
      { title: 'Entry', cell: (r) => h('span', { class: 'mono', text: r.entry }) },
      { title: 'Result', cell: (r) => badge(r.what, r.kind) },
    ], rows));
}
