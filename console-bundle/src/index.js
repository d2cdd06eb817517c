// The console's code editor and charts, bundled by esbuild (build.mjs)
// into web-console/lib/. The console's own modules import it through
// web-console/js/lib.js (written by the build with the bundle's hashed
// name).
//
// createEditor: CodeMirror 6 with line numbers, search (Ctrl-F), folding,
// highlighting chosen by the config type, read-only mode, and the
// server's syntax error shown as a lint marker at its line and column.
// createMerge: a side-by-side merge view of two versions, highlighted the
// same way. uPlot: the dashboard's charts.

import { EditorState, Compartment } from '@codemirror/state';
import {
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter,
  highlightSpecialChars, drawSelection,
} from '@codemirror/view';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import {
  StreamLanguage, syntaxHighlighting, defaultHighlightStyle, bracketMatching,
  foldGutter, foldKeymap,
} from '@codemirror/language';
import { search, searchKeymap, highlightSelectionMatches } from '@codemirror/search';
import { lintGutter, setDiagnostics, lintKeymap } from '@codemirror/lint';
import { MergeView } from '@codemirror/merge';
import { json } from '@codemirror/lang-json';
import { yaml } from '@codemirror/legacy-modes/mode/yaml';
import { properties } from '@codemirror/legacy-modes/mode/properties';
import { toml } from '@codemirror/legacy-modes/mode/toml';
import { xml, html } from '@codemirror/legacy-modes/mode/xml';
import uPlot from 'uplot';

export { uPlot };

/** The highlighting of a config type (Nacos' types; anything else is text). */
export function language(type) {
  switch (type) {
    case 'json': return json();
    case 'yaml': return StreamLanguage.define(yaml);
    case 'properties': return StreamLanguage.define(properties);
    case 'toml': return StreamLanguage.define(toml);
    case 'xml': return StreamLanguage.define(xml);
    case 'html': return StreamLanguage.define(html);
    default: return [];
  }
}

const theme = EditorView.theme({
  '&': { fontSize: '13px', border: '1px solid #c7cdd8', borderRadius: '6px', background: '#fff' },
  '&.cm-focused': { outline: '2px solid #b7d0fb' },
  '.cm-scroller': { fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace', lineHeight: '1.5' },
  '.cm-gutters': { background: '#f8f9fb', borderRight: '1px solid #dde1e8', color: '#8a94a6' },
});

/** Search labels and lint texts in the console's language. */
function phrases(t) {
  return t ? EditorState.phrases.of(t) : [];
}

/**
 * An editor in `parent`. Options: doc, type, readOnly, label (aria),
 * testId (data-testid of the editable area), phrases (translations of
 * CodeMirror's own texts). Returns a handle: value (get/set), setType,
 * setReadOnly, showError(line, column, message), clearError, view.
 */
export function createEditor(parent, options = {}) {
  const root = shadow(parent);
  const lang = new Compartment();
  const ro = new Compartment();
  const attrs = {};
  if (options.label) attrs['aria-label'] = options.label;
  if (options.testId) attrs['data-testid'] = options.testId;
  const view = new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc: options.doc || '',
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), foldGutter(), lintGutter(),
        highlightSpecialChars(), history(), drawSelection(), bracketMatching(),
        highlightActiveLine(), highlightSelectionMatches(), search({ top: true }),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        keymap.of([...defaultKeymap, ...searchKeymap, ...historyKeymap, ...foldKeymap, ...lintKeymap, indentWithTab]),
        EditorState.tabSize.of(2),
        EditorView.contentAttributes.of(attrs),
        EditorView.updateListener.of((u) => {
          // An edit makes the last check's marker stale.
          if (u.docChanged && options.onChange) options.onChange();
        }),
        lang.of(language(options.type)),
        ro.of(readOnly(!!options.readOnly)),
        phrases(options.phrases),
        theme,
        EditorView.theme({
          '&': { maxHeight: '62vh' },
          '.cm-scroller': { overflow: 'auto' },
          '.cm-content, .cm-gutter': { minHeight: options.minHeight || '220px' },
        }),
      ],
    }),
  });
  return {
    view,
    get value() {
      return view.state.doc.toString();
    },
    set value(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    setType(type) {
      view.dispatch({ effects: lang.reconfigure(language(type)) });
    },
    setReadOnly(yes) {
      view.dispatch({ effects: ro.reconfigure(readOnly(yes)) });
    },
    /** Marks the error the server found (1-based line and column). */
    showError(line, column, message) {
      const doc = view.state.doc;
      const l = doc.line(Math.min(Math.max(line || 1, 1), doc.lines));
      const from = Math.min(l.from + Math.max((column || 1) - 1, 0), l.to);
      const to = from < l.to ? from + 1 : from;
      view.dispatch(setDiagnostics(view.state, [{ from, to, severity: 'error', message }]));
      view.dispatch({ selection: { anchor: from }, scrollIntoView: true });
    },
    clearError() {
      view.dispatch(setDiagnostics(view.state, []));
    },
    focus() {
      view.focus();
    },
  };
}

/**
 * An open shadow root on `host` for an editor. CodeMirror styles itself
 * with generated CSS; in a shadow root it uses a constructed stylesheet
 * (adoptedStyleSheets), which the console's Content Security Policy
 * (`style-src 'self'`, no inline styles) allows, where a <style> element
 * in the document would be refused.
 */
function shadow(host) {
  return host.shadowRoot || host.attachShadow({ mode: 'open' });
}

function readOnly(yes) {
  return [EditorState.readOnly.of(yes), EditorView.editable.of(!yes)];
}

/**
 * A read-only side-by-side view of two versions, with unchanged stretches
 * collapsed. Options: a, b (texts), type, phrases. Returns the MergeView.
 */
export function createMerge(parent, options) {
  const root = shadow(parent);
  const extensions = [
    lineNumbers(), highlightSpecialChars(), drawSelection(),
    syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
    language(options.type), EditorState.readOnly.of(true), EditorView.editable.of(false),
    phrases(options.phrases), theme,
    EditorView.theme({
      '&': { border: 'none', borderRadius: '0' },
      '&.cm-merge-a .cm-changedLine, .cm-deletedChunk': { backgroundColor: '#fdeceb' },
      '&.cm-merge-b .cm-changedLine': { backgroundColor: '#e3f4e9' },
      '&.cm-merge-a .cm-changedText': { background: '#f7c6c0' },
      '&.cm-merge-b .cm-changedText': { background: '#b8e3c6' },
    }),
  ];
  return new MergeView({
    parent: root,
    root,
    a: { doc: options.a, extensions },
    b: { doc: options.b, extensions },
    collapseUnchanged: { margin: 3, minSize: 6 },
    highlightChanges: true,
    gutter: true,
  });
}
