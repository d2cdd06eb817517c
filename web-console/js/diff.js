// Renders a diff as the server computes it (src/api/console/diff.rs):
// hunks of lines, each `op` " ", "-" or "+", with line numbers.

import { h } from './ui.js';

export function renderDiff(diff, { leftLabel = 'current', rightLabel = 'new' } = {}) {
  const summary = h('div', { class: 'diff-summary' });
  if (diff.identical) {
    summary.append(h('span', { class: 'muted', text: 'No changes: the two versions are identical.' }));
    return h('div', { class: 'diff-view' }, summary);
  }
  summary.append(
    h('span', { class: 'plus', text: `+${diff.added}` }), ' ',
    h('span', { class: 'minus', text: `−${diff.removed}` }),
    h('span', { class: 'muted', text: ` lines (${leftLabel} → ${rightLabel})` }));
  if (diff.newlineAtEndChanged) {
    summary.append(h('span', { class: 'muted', text: ' · the newline at the end changes' }));
  }
  if (diff.approximate) {
    summary.append(h('span', { class: 'muted', text: ' · large rewrite, shown as replace-all' }));
  }
  const box = h('div', { class: 'diff', attrs: { 'data-testid': 'diff' } });
  for (const hunk of diff.hunks) {
    box.append(h('div', { class: 'hunk-head', text: `@@ ${leftLabel} line ${hunk.leftStart}, ${rightLabel} line ${hunk.rightStart} @@` }));
    for (const line of hunk.lines) {
      const kind = line.op === '+' ? 'add' : line.op === '-' ? 'del' : 'same';
      box.append(h('div', { class: `line ${kind}` },
        h('span', { class: 'n', text: line.left ?? '' }),
        h('span', { class: 'n', text: line.right ?? '' }),
        h('span', { class: 'op', text: line.op === ' ' ? '' : line.op }),
        h('span', { class: 'text', text: line.text })));
    }
  }
  return h('div', { class: 'diff-view' }, summary, diff.hunks.length ? box : null);
}
