// Create or edit one config: type selector, syntax check, a diff against
// the current version before anything is published, and CAS (the publish
// names the md5 the editor loaded; if someone else published meanwhile the
// server refuses and nothing is written). Also the beta (gray) release:
// publish to listed IPs, compare with the current version, promote, stop.

import { api, CONSOLE } from '../api.js';
import { h, field, show, toast, modal, confirmDialog, errorText, fmtTime, badge, nsName, message } from '../ui.js';
import { renderDiff } from '../diff.js';
import { configLink } from './configs.js';

const TYPES = ['text', 'json', 'yaml', 'properties', 'xml', 'toml', 'html'];
const KEY_RULE = /^[A-Za-z0-9_:.-]+$/;

/** Client-side key and content rules (the server checks them again). */
function fieldProblems(dataId, group, content) {
  const problems = {};
  if (!dataId.trim()) problems.dataId = 'Enter a Data ID.';
  else if (!KEY_RULE.test(dataId)) problems.dataId = 'A Data ID may only hold letters, digits and - _ . :';
  else if (dataId.length > 256) problems.dataId = 'A Data ID is at most 256 characters.';
  if (!group.trim()) problems.group = 'Enter a group.';
  else if (!KEY_RULE.test(group)) problems.group = 'A group may only hold letters, digits and - _ . :';
  else if (group.length > 128) problems.group = 'A group is at most 128 characters.';
  if (!content.trim()) problems.content = 'The content is blank: a config needs content.';
  return problems;
}

/** Moves the caret of `textarea` to a 1-based line and column. */
function placeCaret(textarea, line, column) {
  const lines = textarea.value.split('\n');
  let offset = 0;
  for (let i = 0; i < Math.min(line - 1, lines.length); i++) offset += lines[i].length + 1;
  offset += Math.max(column - 1, 0);
  textarea.focus();
  textarea.setSelectionRange(offset, offset);
}

function syntaxText(error) {
  return `Invalid ${error.kind} at line ${error.line}, column ${error.column}: ${error.message}`;
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

  const dataId = h('input', { value: base.dataId, readOnly: !isNew, attrs: { 'data-testid': 'dataId', 'aria-label': 'Data ID' } });
  const group = h('input', { value: base.group, readOnly: !isNew, attrs: { 'data-testid': 'group', 'aria-label': 'Group' } });
  const type = h('select', { attrs: { 'data-testid': 'type', 'aria-label': 'Type' } }, TYPES.map((t) => h('option', { value: t, text: t })));
  type.value = TYPES.includes(base.type) ? base.type : 'text';
  const appName = h('input', { value: base.appName, attrs: { 'aria-label': 'App' } });
  const desc = h('input', { value: base.desc, attrs: { 'aria-label': 'Description' } });
  const tags = h('input', { value: base.tags, placeholder: 'a,b', attrs: { 'aria-label': 'Tags' } });
  const content = h('textarea', { class: 'code', value: base.content, spellcheck: false, attrs: { 'data-testid': 'content', 'aria-label': 'Content' } });
  const errors = { dataId: h('span', { class: 'field-error' }), group: h('span', { class: 'field-error' }), content: h('span', { class: 'field-error' }) };
  const slot = h('div', { attrs: { 'data-testid': 'editor-message' } });
  for (const input of [dataId, group, appName, desc, tags, content, type]) input.disabled = !canWrite && input !== content;
  if (!canWrite) content.readOnly = true;

  const markFields = (problems) => {
    for (const [name, el] of Object.entries({ dataId, group, content })) {
      el.classList.toggle('invalid', !!problems[name]);
      errors[name].textContent = problems[name] || '';
    }
  };

  const check = async () => {
    try {
      const result = await api.post(`${CONSOLE}/config/check`, { type: type.value, content: content.value });
      if (result.valid) {
        const note = ['text', 'html'].includes(result.type) ? `${result.type} is not syntax-checked.` : `Valid ${result.type}.`;
        show(slot, 'ok', note, result.warnings);
      } else {
        show(slot, 'error', syntaxText(result.error));
        placeCaret(content, result.error.line, result.error.column);
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
      if (conflict && !isNew) {
        slot.append(h('button', { text: 'Reload the current version', onClick: () => location.reload() }));
      }
      return;
    }
    close();
    toast(isNew ? `Created ${body.group}/${body.dataId}.` : `Published ${body.group}/${body.dataId}.`);
    const link = configLink('config', body, ns);
    if (location.hash === link) ctx.go(link);
    else location.hash = link;
  };

  const review = async () => {
    show(slot, null, null);
    const problems = fieldProblems(dataId.value, group.value, content.value);
    markFields(problems);
    if (Object.keys(problems).length) {
      show(slot, 'error', 'Nothing was published: fix the marked fields.', Object.values(problems));
      return;
    }
    let preview;
    try {
      preview = await api.post(`${CONSOLE}/config/preview`, {
        namespace: ns, group: group.value.trim(), dataId: dataId.value.trim(),
        type: type.value, content: content.value, baseMd5,
      });
    } catch (e) {
      show(slot, 'error', `Nothing was published: ${errorText(e)}`);
      return;
    }
    if (preview.contentError) {
      show(slot, 'error', `Nothing was published: ${preview.contentError}`);
      return;
    }
    if (!preview.check.valid) {
      show(slot, 'error', `Nothing was published: ${syntaxText(preview.check.error)}`);
      placeCaret(content, preview.check.error.line, preview.check.error.column);
      return;
    }
    if (isNew && preview.exists) {
      show(slot, 'error', `Nothing was published: ${group.value}/${dataId.value} exists already in namespace ${nsName(ns)}. Open it to edit it.`);
      return;
    }
    const body = {
      namespace: ns, group: group.value.trim(), dataId: dataId.value.trim(), content: content.value,
      type: type.value, desc: desc.value, appName: appName.value, tags: tags.value,
      create: isNew, casMd5: isNew ? null : baseMd5,
    };
    const parts = [];
    if (preview.stale) {
      parts.push(message('warn', 'Someone else published this config after you opened it. Publishing now will be refused; reload to see their version first.'));
    }
    if (preview.typeChange) parts.push(message('warn', `The type changes from ${preview.typeChange} to ${type.value}.`));
    if (preview.check.warnings.length) parts.push(message('warn', 'Syntax warnings:', preview.check.warnings));
    parts.push(h('h3', { text: isNew ? 'New config' : 'What will change' }));
    parts.push(renderDiff(preview.diff, { leftLabel: isNew ? 'nothing' : 'current', rightLabel: 'yours' }));
    modal({
      title: `Review ${body.group}/${body.dataId} before publishing`,
      body: h('div', { attrs: { 'data-testid': 'review' } }, parts),
      actions: [
        { label: 'Cancel' },
        { label: isNew ? 'Create' : 'Publish', kind: 'primary', id: 'publish', onClick: (close) => publish(close, body) },
      ],
    });
  };

  const head = h('div', { class: 'page-head' },
    h('div', {},
      h('div', { class: 'crumbs' }, h('a', { href: '#/configs', text: 'Configs' }), ` · namespace ${nsName(ns)}`),
      h('h1', { text: isNew ? 'New config' : `${base.group} / ${base.dataId}` })),
    h('span', { class: 'spacer' }),
    isNew ? null : h('div', { class: 'actions' },
      h('a', { href: configLink('history', base, ns), text: 'History' }),
      h('a', { href: configLink('listeners', base, ns), text: 'Listeners' })));

  const meta = loaded ? h('div', { class: 'muted', attrs: { 'data-testid': 'config-meta' } },
    `md5 ${loaded.md5} · ${loaded.size} bytes · modified ${fmtTime(loaded.modifyTime)} by ${loaded.modifiedBy || 'unknown'}`) : null;

  const form = h('div', { class: 'panel' },
    h('div', { class: 'grid2' },
      h('div', {}, field('Data ID', dataId), errors.dataId),
      h('div', {}, field('Group', group), errors.group),
      field('Type', type, 'json, yaml, properties, xml and toml are checked before a publish'),
      field('App', appName),
      field('Description', desc),
      field('Tags', tags)),
    h('h3', { text: 'Content' }),
    content, errors.content,
    slot,
    meta,
    canWrite ? h('div', { class: 'actions' },
      h('button', { class: 'primary', text: isNew ? 'Review and create…' : 'Review and publish…', attrs: { 'data-testid': 'review-publish' }, onClick: review }),
      h('button', { text: 'Check syntax', attrs: { 'data-testid': 'check' }, onClick: check }),
      h('a', { href: '#/configs', text: 'Back to configs' }))
      : message('warn', 'You may read this namespace but not change it.'));
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
  const panel = h('div', { class: 'panel', attrs: { 'data-testid': 'tag-panel' } }, h('h2', { text: 'Gray by tag' }));
  const reload = () => ctx.go(configLink('config', config, ns));
  const key = { namespace: ns, group: config.group, dataId: config.dataId };
  if (!grays.length) {
    panel.append(h('p', { class: 'muted', text: 'No tag gray is out. A tag gray serves other content to the clients that send its tag; the rest keep the current version.' }));
  }
  for (const gray of grays) {
    const tag = gray.name.slice('tag_'.length);
    const changes = h('div');
    const item = h('div', { attrs: { 'data-testid': `tag-gray-${tag}` } },
      h('p', {}, badge(`tag ${tag}`, 'warn'), ` · md5 ${gray.md5} · since ${fmtTime(gray.modifyTime)} by ${gray.modifiedBy}`),
      h('pre', { class: 'content', text: gray.content }),
      h('h3', { text: `What the tag ${tag} changes` }),
      changes);
    api.post(`${CONSOLE}/config/preview`, { ...key, type: config.type, content: gray.content })
      .then((preview) => changes.append(renderDiff(preview.diff, { leftLabel: 'current', rightLabel: `tag ${tag}` })))
      .catch((e) => show(changes, 'error', errorText(e)));
    if (canWrite) {
      item.append(h('div', { class: 'actions' },
        h('button', {
          class: 'primary',
          text: `Promote tag ${tag} to everyone`,
          onClick: async () => {
            if (!await confirmDialog('Promote the tag gray', `Publish the content of tag ${tag} to every client and end this gray?`, 'Promote')) return;
            try {
              await api.post(`${CONSOLE}/config/gray/promote`, { ...key, grayName: gray.name, grayMd5: gray.md5, casMd5: config.md5 });
              toast(`Tag ${tag} is now the current version.`);
              reload();
            } catch (e) {
              show(slot, 'error', errorText(e));
            }
          },
        }),
        h('button', {
          class: 'danger',
          text: `Stop tag ${tag}`,
          onClick: async () => {
            if (!await confirmDialog('Stop the tag gray', `Clients with tag ${tag} go back to the current version.`, 'Stop', 'danger solid')) return;
            try {
              await api.del(`${CONSOLE}/config/gray`, { ...key, grayName: gray.name });
              toast(`Tag ${tag} stopped.`);
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
    const tag = h('input', { placeholder: 'canary', attrs: { 'aria-label': 'Tag', 'data-testid': 'gray-tag' } });
    panel.append(
      h('h3', { text: 'Publish or replace a tag gray' }),
      h('div', { class: 'row' },
        field('Tag', tag, 'the tag the clients send'),
        h('button', {
          text: 'Publish the editor content for this tag',
          attrs: { 'data-testid': 'publish-tag-gray' },
          onClick: async () => {
            show(slot, null, null);
            try {
              await api.post(`${CONSOLE}/config/gray`, { ...key, content: editor.value, tag: tag.value });
              toast(`Tag gray ${tag.value} published.`);
              reload();
            } catch (e) {
              show(slot, 'error', `No tag gray was published: ${errorText(e)}`);
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
  const panel = h('div', { class: 'panel', attrs: { 'data-testid': 'beta-panel' } }, h('h2', { text: 'Beta (gray release)' }));
  const reload = () => ctx.go(configLink('config', config, ns));
  if (beta) {
    panel.append(
      h('p', {}, badge('beta out', 'warn'), ` to ${beta.ips.join(', ')} · md5 ${beta.md5} · since ${fmtTime(beta.modifyTime)} by ${beta.modifiedBy}`),
      h('div', { class: 'grid2' },
        h('div', {}, h('h3', { text: 'Current (everyone else)' }), h('pre', { class: 'content', text: config.content })),
        h('div', {}, h('h3', { text: 'Beta (listed IPs)' }), h('pre', { class: 'content', text: beta.content }))));
    const changes = h('div');
    panel.append(h('h3', { text: 'What the beta changes' }), changes);
    api.post(`${CONSOLE}/config/preview`, { namespace: ns, group: config.group, dataId: config.dataId, type: config.type, content: beta.content })
      .then((preview) => changes.append(renderDiff(preview.diff, { leftLabel: 'current', rightLabel: 'beta' })))
      .catch((e) => show(changes, 'error', errorText(e)));
    if (canWrite) {
      panel.append(h('div', { class: 'actions' },
        h('button', {
          class: 'primary',
          text: 'Promote to everyone',
          onClick: async () => {
            if (!await confirmDialog('Promote the beta', 'Publish the beta content to every client and end the beta?', 'Promote')) return;
            try {
              await api.post(`${CONSOLE}/config/beta/promote`, { namespace: ns, group: config.group, dataId: config.dataId, betaMd5: beta.md5, casMd5: config.md5 });
              toast('The beta is now the current version.');
              reload();
            } catch (e) {
              show(slot, 'error', errorText(e));
            }
          },
        }),
        h('button', {
          class: 'danger',
          text: 'Stop the beta',
          onClick: async () => {
            if (!await confirmDialog('Stop the beta', 'The listed clients go back to the current version.', 'Stop beta', 'danger solid')) return;
            try {
              await api.del(`${CONSOLE}/config/beta`, { namespace: ns, group: config.group, dataId: config.dataId });
              toast('Beta stopped.');
              reload();
            } catch (e) {
              show(slot, 'error', errorText(e));
            }
          },
        })));
    }
  } else {
    panel.append(h('p', { class: 'muted', text: 'No beta is out. A beta serves other content to the clients whose IPs you list; the rest keep the current version.' }));
  }
  if (canWrite) {
    const ips = h('input', { placeholder: '10.0.0.5, 10.0.0.6', attrs: { 'aria-label': 'Beta IPs' } });
    panel.append(
      h('h3', { text: beta ? 'Replace the beta' : 'Publish a beta' }),
      h('div', { class: 'row' },
        field('Client IPs', ips, 'comma-separated'),
        h('button', {
          text: 'Publish the editor content as beta',
          onClick: async () => {
            show(slot, null, null);
            try {
              await api.post(`${CONSOLE}/config/beta`, { namespace: ns, group: config.group, dataId: config.dataId, content: editor.value, betaIps: ips.value });
              toast('Beta published.');
              reload();
            } catch (e) {
              show(slot, 'error', `No beta was published: ${errorText(e)}`);
            }
          },
        })));
  }
  panel.append(slot);
  return panel;
}
