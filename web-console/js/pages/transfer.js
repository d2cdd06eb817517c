// Import and export in the Nacos zip layout (group/dataId entries and a
// .metadata.yml), with a conflict policy and a report of what happened.

import { request, CONSOLE } from '../api.js';
import { h, field, show, toast, download, errorText, nsName, table, badge } from '../ui.js';
import { t } from '../i18n.js';

export async function render(main, params, ctx) {
  const ns = ctx.namespace;
  const canWrite = ctx.canWrite();

  // ---- export ----
  const group = h('input', { placeholder: t('configs.anyGroup'), attrs: { 'aria-label': t('transfer.exportGroup') } });
  const dataId = h('input', { placeholder: t('transfer.anyDataId'), attrs: { 'aria-label': t('transfer.exportDataId') } });
  const exportSlot = h('div');
  const exportButton = h('button', {
    class: 'primary',
    text: t('transfer.exportZip'),
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
        toast(t('transfer.exported', { name }));
      } catch (e) {
        show(exportSlot, 'error', errorText(e));
      }
    },
  });

  // ---- import ----
  const file = h('input', { type: 'file', accept: '.zip,application/zip', attrs: { 'data-testid': 'import-file', 'aria-label': t('transfer.zipFile') } });
  const policy = h('select', { attrs: { 'data-testid': 'import-policy', 'aria-label': t('transfer.whenExists') } },
    h('option', { value: 'abort', text: t('transfer.abort') }),
    h('option', { value: 'skip', text: t('transfer.skip') }),
    h('option', { value: 'overwrite', text: t('transfer.overwrite') }));
  const importSlot = h('div', { attrs: { 'data-testid': 'import-result' } });
  const importButton = h('button', {
    class: 'primary',
    text: t('transfer.import'),
    attrs: { 'data-testid': 'import' },
    onClick: async () => {
      show(importSlot, null, null);
      const chosen = file.files[0];
      if (!chosen) {
        show(importSlot, 'error', t('transfer.chooseFile'));
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
          .concat((body.conflicts || []).map((k) => t('transfer.existsAlready', { key: k })));
        show(importSlot, 'error', errorText(e), detail);
      } finally {
        importButton.disabled = false;
      }
    },
  });

  main.append(
    h('div', { class: 'page-head' },
      h('div', {}, h('div', { class: 'crumbs', text: t('common.namespaceTitle', { ns: nsName(ns) }) }), h('h1', { text: t('nav.transfer') }))),
    h('div', { class: 'panel' },
      h('h2', { text: t('transfer.export') }),
      h('p', { class: 'muted', text: t('transfer.exportExplain') }),
      h('div', { class: 'row' }, field(t('config.group'), group), field(t('config.dataId'), dataId), exportButton),
      exportSlot),
    h('div', { class: 'panel' },
      h('h2', { text: t('transfer.importInto', { ns: nsName(ns) }) }),
      canWrite
        ? h('div', {},
          h('p', { class: 'muted', text: t('transfer.importExplain') }),
          h('div', { class: 'row' }, field(t('transfer.zipFile'), file), field(t('transfer.whenExists'), policy), importButton),
          importSlot)
        : h('p', { class: 'muted', text: t('transfer.readOnly') })));
}

function renderReport(report) {
  const rows = [];
  const add = (list, what, kind) => list.forEach((entry) => rows.push({ entry, what, kind }));
  add(report.created, t('transfer.created'), 'ok');
  add(report.overwritten, t('transfer.overwritten'), 'info');
  add(report.skipped, t('transfer.skipped'), '');
  add(report.unchanged, t('transfer.unchanged'), '');
  report.unrecognized.forEach((p) => rows.push({ entry: p.entry, what: t('transfer.notImported', { reason: p.reason }), kind: 'warn' }));
  const summary = t('transfer.summary', { created: report.created.length, overwritten: report.overwritten.length, skipped: report.skipped.length, unchanged: report.unchanged.length })
    + (report.unrecognized.length ? t('transfer.summaryUnrecognized', { n: report.unrecognized.length }) : '') + t('transfer.summaryEnd');
  return h('div', {},
    h('div', { class: 'message ok', text: summary, attrs: { 'data-testid': 'import-summary' } }),
    table([
      { title: t('transfer.entry'), cell: (r) => h('span', { class: 'mono', text: r.entry }) },
      { title: t('transfer.result'), cell: (r) => badge(r.what, r.kind) },
    ], rows));
}
