// The console's side of the bundle (js/lib.js → lib/console-lib-HASH.js):
// the code editor and merge view with CodeMirror's own texts (search
// panel, lint) in the console's language, and uPlot with its stylesheet.

import { createEditor, createMerge, uPlot, LIB_CSS } from './lib.js';
import { t, lang } from './i18n.js';

// uPlot's stylesheet, once (a <link> from this origin: the CSP allows it).
if (!document.querySelector('link[data-lib]')) {
  const link = Object.assign(document.createElement('link'), { rel: 'stylesheet', href: LIB_CSS });
  link.dataset.lib = '1';
  document.head.append(link);
}

/** CodeMirror's phrases in the console's language (English needs none). */
export function editorPhrases() {
  if (lang() === 'en') return null;
  const names = ['Find', 'Replace', 'next', 'previous', 'all', 'match case', 'regexp', 'by word',
    'replace', 'replace all', 'close', 'Go to line', 'go', 'Diagnostics', 'No diagnostics',
    'Folded lines', 'Unfolded lines', 'Fold line', 'Unfold line', 'to', 'folded code',
    'unfold', 'Control character', '$ unchanged lines'];
  return Object.fromEntries(names.map((n) => [n, t(`cm.${n}`)]));
}

export { createEditor, createMerge, uPlot };
