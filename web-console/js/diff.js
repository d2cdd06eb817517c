// Shows the difference of two versions: the server's summary of its line
// diff (src/api/console/diff.rs: lines added and removed, newline at the
// end, approximate) above CodeMirror's side-by-side merge view of the two
// contents, highlighted as the config's type, unchanged stretches folded.

import { h } from './ui.js';
import { createMerge, editorPhrases } from './code.js';
import { t } from './i18n.js';

/**
 * `diff`: the server's diff (or null: no summary). Options: leftLabel,
 * rightLabel, left, right (the two contents), type.
 */
export function renderDiff(diff, { leftLabel, rightLabel, left = '', right = '', type = 'text' } = {}) {
  const summary = h('div', { class: 'diff-summary' });
  if (diff) {
    if (diff.identical) {
      summary.append(h('span', { class: 'muted', text: t('diff.identical') }));
      return h('div', { class: 'diff-view' }, summary);
    }
    summary.append(
      h('span', { class: 'plus', text: `+${diff.added}` }), ' ',
      h('span', { class: 'minus', text: `−${diff.removed}` }),
      h('span', { class: 'muted', text: ` ${t('diff.lines', { left: leftLabel, right: rightLabel })}` }));
    if (diff.newlineAtEndChanged) summary.append(h('span', { class: 'muted', text: ` · ${t('diff.newlineAtEnd')}` }));
    if (diff.approximate) summary.append(h('span', { class: 'muted', text: ` · ${t('diff.approximate')}` }));
  } else if (left === right) {
    summary.append(h('span', { class: 'muted', text: t('diff.identical') }));
  }
  const heads = h('div', { class: 'merge-heads' }, h('span', { text: leftLabel }), h('span', { text: rightLabel }));
  const box = h('div', { class: 'merge', attrs: { 'data-testid': 'diff' } });
  createMerge(box, { a: left, b: right, type, phrases: editorPhrases() });
  return h('div', { class: 'diff-view' }, summary, heads, box);
}
