// Create or edit one config in a code editor (CodeMirror 6, from the
// bundle in web-console/lib/): highlighting by type, line numbers, search,
// the server's syntax error marked at its line and column, read-only for
// readers. A side-by-side diff against the current version before anything
// is published, and CAS (the publish names the md5 the editor loaded; if
// someone else published meanwhile the server refuses and nothing is
// written). Also the gray releases: a beta to listed IPs and grays by tag,
// each compared with the current version, promoted or stopped.

import { api, CONSOLE } from '../api.js';
import { h, field, show, toast, modal, confirmDialog, errorText, fmtTime, badge, nsName, message } from '../ui.js';
import { renderDiff } from '../diff.js';
import { createEditor, editorPhrases } from '../code.js';
import { configLink } from './configs.js';
import { t } from '../i18n.js';

const TYPES = ['text', 'json', 'yaml', 'properties', 'xml', 'toml', 'html'];
// Java Nacos' ParamUtils.isValid: letters and digits of any script (by
// general category, as Java's Character.isLetterOrDigit) and - _ . :, one
// UTF-16 unit at a time, so nothing outside the BMP (an emoji) passes.
const KEY_CHARS = /^[\p{Lu}\p{Ll}\p{Lt}\p{Lm}\p{Lo}\p{Nd}_:.-]+$/u;
const OUTSIDE_BMP = /[\u{10000}-\u{10FFFF}]/u;
const keyOk = (s) => KEY_CHARS.test(s) && !OUTSIDE_BMP.test(s);

/** Client-side key and content rules (the server checks them again). */
function fieldProblems(dataId, group, content) {
  const problems = {};
  if (!dataId.trim()) problems.dataId = t('editor.problem.dataIdEmpty');
  else if (!keyOk(dataId)) problems.dataId = t('editor.problem.dataIdChars');
  else if (dataId.length > 256) problems.dataId = t('editor.problem.dataIdLong');
  if (!group.trim()) problems.group = t('editor.problem.groupEmpty');
  else if (!keyOk(group)) problems.group = t('editor.problem.groupChars');
  else if (group.length > 128) problems.group = t('editor.problem.groupLong');
  if (!content.trim()) problems.content = t('editor.problem.contentBlank');
  return problems;
}

function syntaxText(error) {
  return t('editor.syntaxError', { kind: error.kind, line: error.line, column: error.column, message: error.message });
}

export async function render(main, params, ctx) {
  const ns = params.ns ?? ctx.namespace;
  const isNew = !!params.new;
  const canWrite = (ctx.namespaces.find((n) => n.id === ns) || {}).access === 'rw';
  let loaded = null;
  let beta = null;
  let tagGrays = [];
  if (!isNew) {
    const reply = await api.get(`${CONSOLE}/config`, { namespace: ns, group: params.group, dataId: params.dataId });
    loaded = reply.config;
    beta = reply.beta;
    tagGrays = (reply.grays || []).filter((g) => g.name.startsWith('tag_'));
  }
  const base = loaded || { dataId: params.dataId || '', group: params.group || 'DEFAULT_GROUP', type: 'text', content: '', desc: '', appName: '', tags: '' };
  const baseMd5 = loaded ? loaded.md5 : '';

  const dataId = h('input', { value: base.dataId, readOnly: !isNew, attrs: { 'data-testid': 'dataId', 'aria-label': t('config.dataId') } });
  const group = h('input', { value: base.group, readOnly: !isNew, attrs: { 'data-testid': 'group', 'aria-label': t('config.group') } });
  const type = h('select', { attrs: { 'data-testid': 'type', 'aria-label': t('config.type') } }, TYPES.map((x) => h('option', { value: x, text: x })));
  type.value = TYPES.includes(base.type) ? base.type : 'text';
  const appName = h('input', { value: base.appName, attrs: { 'aria-label': t('config.app') } });
  const desc = h('input', { value: base.desc, attrs: { 'aria-label': t('config.desc') } });
  const tags = h('input', { value: base.tags, placeholder: 'a,b', attrs: { 'aria-label': t('config.tags') } });
  const editorBox = h('div', { class: 'code-editor', attrs: { 'data-testid': 'code-editor' } });
  const content = createEditor(editorBox, {
    doc: base.content,
    type: type.value,
    readOnly: !canWrite,
    label: t('editor.content'),
    testId: 'content',
    phrases: editorPhrases(),
    onChange: () => content && content.clearError(),
  });
  type.addEventListener('change', () => content.setType(type.value));
  const errors = { dataId: h('span', { class: 'field-error' }), group: h('span', { class: 'field-error' }), content: h('span', { class: 'field-error' }) };
  const slot = h('div', { attrs: { 'data-testid': 'editor-message' } });
  for (const input of [dataId, group, appName, desc, tags, type]) input.disabled = !canWrite;

  const markFields = (problems) => {
    for (const [name, el] of Object.entries({ dataId, group, content: editorBox })) {
      el.classList.toggle('invalid', !!problems[name]);
      errors[name].textContent = problems[name] || '';
    }
  };
  const markSyntax = (error) => {
    show(slot, 'error', t('editor.nothingPublished', { why: syntaxText(error) }));
    content.showError(error.line, error.column, syntaxText(error));
  };

  const check = async () => {
    try {
      const result = await api.post(`${CONSOLE}/config/check`, { type: type.value, content: content.value });
      if (result.valid) {
        content.clearError();
        const note = ['text', 'html'].includes(result.type) ? t('editor.notChecked', { type: result.type }) : t('editor.valid', { type: result.type });
        show(slot, 'ok', note, result.warnings);
      } else {
        show(slot, 'error', syntaxText(result.error));
        content.showError(result.error.line, result.error.column, syntaxText(result.error));
      }
    } catch (e) {
      show(slot, 'error', errorText(e));
    }
  };

  const publish = async (close, body) => {
    try {
      await api.post(`${CONSOLE}/config`, body);
    } catch (e) {
      close();
      const conflict = e.status === 409;
      show(slot, 'error', errorText(e));
      if (e.body && e.body.kind === 'syntax') content.showError(e.body.line, e.body.column, errorText(e));
      if (conflict && !isNew) {
        slot.append(h('button', { text: t('editor.reload'), onClick: () => location.reload() }));
      }
      return;
    }
    close();
    toast(t(isNew ? 'editor.created' : 'editor.published', { key: `${body.group}/${body.dataId}` }));
    const link = configLink('config', body, ns);
    if (location.hash === link) ctx.go(link);
    else location.hash = link;
  };

  const review = async () => {
    show(slot, null, null);
    const problems = fieldProblems(dataId.value, group.value, content.value);
    markFields(problems);
    if (Object.keys(problems).length) {
      show(slot, 'error', t('editor.fixFields'), Object.values(problems));
      return;
    }
    let preview;
    try {
      preview = await api.post(`${CONSOLE}/config/preview`, {
        namespace: ns, group: group.value.trim(), dataId: dataId.value.trim(),
        type: type.value, content: content.value, baseMd5,
      });
    } catch (e) {
      show(slot, 'error', t('editor.nothingPublished', { why: errorText(e) }));
      return;
    }
    if (preview.contentError) {
      show(slot, 'error', t('editor.nothingPublished', { why: preview.contentError }));
      return;
    }
    if (!preview.check.valid) {
      markSyntax(preview.check.error);
      return;
    }
    if (isNew && preview.exists) {
      show(slot, 'error', t('editor.nothingPublished', { why: t('editor.exists', { key: `${group.value}/${dataId.value}`, ns: nsName(ns) }) }));
      return;
    }
    const body = {
      namespace: ns, group: group.value.trim(), dataId: dataId.value.trim(), content: content.value,
      type: type.value, desc: desc.value, appName: appName.value, tags: tags.value,
      create: isNew, casMd5: isNew ? null : baseMd5,
    };
    const parts = [];
    if (preview.stale) parts.push(message('warn', t('editor.stale')));
    if (preview.typeChange) parts.push(message('warn', t('editor.typeChange', { from: preview.typeChange, to: type.value })));
    if (preview.check.warnings.length) parts.push(message('warn', t('editor.warnings'), preview.check.warnings));
    parts.push(h('h3', { text: isNew ? t('editor.newConfig') : t('editor.whatChanges') }));
    parts.push(renderDiff(preview.diff, {
      leftLabel: isNew ? t('diff.nothing') : t('diff.current'),
      rightLabel: t('diff.yours'),
      left: preview.currentContent || '',
      right: content.value,
      type: type.value,
    }));
    modal({
      title: t('editor.reviewTitle', { key: `${body.group}/${body.dataId}` }),
      body: h('div', { attrs: { 'data-testid': 'review' } }, parts),
      actions: [
        { label: t('common.cancel') },
        { label: isNew ? t('editor.create') : t('editor.publish'), kind: 'primary', id: 'publish', onClick: (close) => publish(close, body) },
      ],
    });
  };

  const head = h('div', { class: 'page-head' },
    h('div', {},
      h('div', { class: 'crumbs' }, h('a', { href: '#/configs', text: t('nav.configs') }), ` · ${t('common.namespaceIs', { ns: nsName(ns) })}`),
      h('h1', { text: isNew ? t('editor.newConfig') : `${base.group} / ${base.dataId}` })),
    h('span', { class: 'spacer' }),
    isNew ? null : h('div', { class: 'actions' },
      h('a', { href: configLink('history', base, ns), text: t('configs.history') }),
      h('a', { href: configLink('listeners', base, ns), text: t('configs.listeners') })));

  const meta = loaded ? h('div', { class: 'muted', attrs: { 'data-testid': 'config-meta' } },
    t('editor.meta', { md5: loaded.md5, size: loaded.size, time: fmtTime(loaded.modifyTime), by: loaded.modifiedBy || t('common.unknown') })) : null;

  const form = h('div', { class: 'panel' },
    h('div', { class: 'grid2' },
      h('div', {}, field(t('config.dataId'), dataId), errors.dataId),
      h('div', {}, field(t('config.group'), group), errors.group),
      field(t('config.type'), type, t('editor.typeHint')),
      field(t('config.app'), appName),
      field(t('config.desc'), desc),
      field(t('config.tags'), tags)),
    h('h3', {}, t('editor.content'), h('span', { class: 'muted hint', text: ` · ${t('editor.searchHint')}` })),
    editorBox, errors.content,
    slot,
    meta,
    canWrite ? h('div', { class: 'actions' },
      h('button', { class: 'primary', text: isNew ? t('editor.reviewCreate') : t('editor.reviewPublish'), attrs: { 'data-testid': 'review-publish' }, onClick: review }),
      h('button', { text: t('editor.check'), attrs: { 'data-testid': 'check' }, onClick: check }),
      h('a', { href: '#/configs', text: t('editor.back') }))
      : message('warn', t('editor.readOnly')));
  main.append(head, form);
  if (!isNew && loaded) {
    main.append(betaPanel(ns, loaded, beta, canWrite, content, ctx));
    main.append(tagPanel(ns, loaded, tagGrays, canWrite, content, ctx));
  }
}

/** The tag grays of a config: clients that send the tag (Nacos'
 * `Vipserver-Tag`) see their content; see docs/gray.md. */
function tagPanel(ns, config, grays, canWrite, editor, ctx) {
  const slot = h('div');
  const panel = h('div', { class: 'panel', attrs: { 'data-testid': 'tag-panel' } }, h('h2', { text: t('tag.title') }));
  const reload = () => ctx.go(configLink('config', config, ns));
  const key = { namespace: ns, group: config.group, dataId: config.dataId };
  if (!grays.length) {
    panel.append(h('p', { class: 'muted', attrs: { 'data-testid': 'no-tag-gray' }, text: t('tag.none') }));
  }
  for (const gray of grays) {
    const tag = gray.name.slice('tag_'.length);
    const item = h('div', { attrs: { 'data-testid': `tag-gray-${tag}` } },
      h('p', {}, badge(t('tag.badge', { tag }), 'warn'), ` · ${t('gray.meta', { md5: gray.md5, time: fmtTime(gray.modifyTime), by: gray.modifiedBy })}`),
      h('h3', { text: t('tag.changes', { tag }) }),
      renderDiff(null, { leftLabel: t('diff.current'), rightLabel: t('tag.badge', { tag }), left: config.content, right: gray.content, type: config.type }));
    if (canWrite) {
      item.append(h('div', { class: 'actions' },
        h('button', {
          class: 'primary',
          text: t('tag.promote', { tag }),
          dataset: { promoteTag: tag },
          onClick: async () => {
            if (!await confirmDialog(t('tag.promoteTitle'), t('tag.promoteBody', { tag }), t('gray.promote'))) return;
            try {
              await api.post(`${CONSOLE}/config/gray/promote`, { ...key, grayName: gray.name, grayMd5: gray.md5, casMd5: config.md5 });
              toast(t('tag.promoted', { tag }));
              reload();
            } catch (e) {
              show(slot, 'error', errorText(e));
            }
          },
        }),
        h('button', {
          class: 'danger',
          text: t('tag.stop', { tag }),
          dataset: { stopTag: tag },
          onClick: async () => {
            if (!await confirmDialog(t('tag.stopTitle'), t('tag.stopBody', { tag }), t('gray.stop'), 'danger solid')) return;
            try {
              await api.del(`${CONSOLE}/config/gray`, { ...key, grayName: gray.name });
              toast(t('tag.stopped', { tag }));
              reload();
            } catch (e) {
              show(slot, 'error', errorText(e));
            }
          },
        })));
    }
    panel.append(item);
  }
  if (canWrite) {
    const tag = h('input', { placeholder: 'canary', attrs: { 'aria-label': t('tag.tag'), 'data-testid': 'gray-tag' } });
    panel.append(
      h('h3', { text: t('tag.publishTitle') }),
      h('div', { class: 'row' },
        field(t('tag.tag'), tag, t('tag.tagHint')),
        h('button', {
          text: t('tag.publish'),
          attrs: { 'data-testid': 'publish-tag-gray' },
          onClick: async () => {
            show(slot, null, null);
            try {
              await api.post(`${CONSOLE}/config/gray`, { ...key, content: editor.value, tag: tag.value });
              toast(t('tag.published', { tag: tag.value }));
              reload();
            } catch (e) {
              show(slot, 'error', t('tag.refused', { why: errorText(e) }));
            }
          },
        })));
  }
  panel.append(slot);
  return panel;
}

/** The beta (gray release) of a config. */
function betaPanel(ns, config, beta, canWrite, editor, ctx) {
  const slot = h('div');
  const panel = h('div', { class: 'panel', attrs: { 'data-testid': 'beta-panel' } }, h('h2', { text: t('beta.title') }));
  const reload = () => ctx.go(configLink('config', config, ns));
  if (beta) {
    panel.append(
      h('p', {}, badge(t('beta.out'), 'warn'), ` ${t('beta.to', { ips: beta.ips.join(', ') })} · ${t('gray.meta', { md5: beta.md5, time: fmtTime(beta.modifyTime), by: beta.modifiedBy })}`),
      h('h3', { text: t('beta.changes') }),
      renderDiff(null, { leftLabel: t('beta.current'), rightLabel: t('beta.beta'), left: config.content, right: beta.content, type: config.type }));
    if (canWrite) {
      panel.append(h('div', { class: 'actions' },
        h('button', {
          class: 'primary',
          text: t('beta.promote'),
          attrs: { 'data-testid': 'promote-beta' },
          onClick: async () => {
            if (!await confirmDialog(t('beta.promoteTitle'), t('beta.promoteBody'), t('gray.promote'))) return;
            try {
              await api.post(`${CONSOLE}/config/beta/promote`, { namespace: ns, group: config.group, dataId: config.dataId, betaMd5: beta.md5, casMd5: config.md5 });
              toast(t('beta.promoted'));
              reload();
            } catch (e) {
              show(slot, 'error', errorText(e));
            }
          },
        }),
        h('button', {
          class: 'danger',
          text: t('beta.stop'),
          attrs: { 'data-testid': 'stop-beta' },
          onClick: async () => {
            if (!await confirmDialog(t('beta.stopTitle'), t('beta.stopBody'), t('beta.stopConfirm'), 'danger solid')) return;
            try {
              await api.del(`${CONSOLE}/config/beta`, { namespace: ns, group: config.group, dataId: config.dataId });
              toast(t('beta.stopped'));
              reload();
            } catch (e) {
              show(slot, 'error', errorText(e));
            }
          },
        })));
    }
  } else {
    panel.append(h('p', { class: 'muted', attrs: { 'data-testid': 'no-beta' }, text: t('beta.none') }));
  }
  if (canWrite) {
    const ips = h('input', { placeholder: '10.0.0.5, 10.0.0.6', attrs: { 'aria-label': t('beta.ips'), 'data-testid': 'beta-ips' } });
    panel.append(
      h('h3', { text: beta ? t('beta.replace') : t('beta.publishTitle') }),
      h('div', { class: 'row' },
        field(t('beta.ips'), ips, t('beta.ipsHint')),
        h('button', {
          text: t('beta.publish'),
          attrs: { 'data-testid': 'publish-beta' },
          onClick: async () => {
            show(slot, null, null);
            try {
              await api.post(`${CONSOLE}/config/beta`, { namespace: ns, group: config.group, dataId: config.dataId, content: editor.value, betaIps: ips.value });
              toast(t('beta.published'));
              reload();
            } catch (e) {
              show(slot, 'error', t('beta.refused', { why: errorText(e) }));
            }
          },
        })));
  }
  panel.append(slot);
  return panel;
}
