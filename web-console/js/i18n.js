// The console's languages: English and Simplified Chinese, one JSON file
// each in web-console/i18n/ (flat "page.what" keys; a Rust unit test in
// src/api/console/assets.rs fails when a key is missing in either, or when
// the code uses a key neither has). The language is the one chosen with
// the switch in the header (kept in localStorage), else the browser's.

export const LANGUAGES = { en: 'English', 'zh-CN': '中文' };
const KEY = 'tacos.lang';

let strings = {};
let current = 'en';

/** The language to start with: the saved choice, else the browser's. */
export function preferred() {
  const saved = localStorage.getItem(KEY);
  if (saved && LANGUAGES[saved]) return saved;
  const browser = (navigator.languages && navigator.languages[0]) || navigator.language || 'en';
  return /^zh\b/i.test(browser) ? 'zh-CN' : 'en';
}

/** Loads a language's strings and makes it the page's. */
export async function use(lang) {
  if (!LANGUAGES[lang]) lang = 'en';
  const response = await fetch(`/console/i18n/${lang}.json`);
  if (!response.ok) throw new Error(`the ${lang} strings did not load (HTTP ${response.status})`);
  strings = await response.json();
  current = lang;
  document.documentElement.lang = lang;
  document.title = t('app.title');
}

/** Saves the choice for the next visits. */
export function choose(lang) {
  localStorage.setItem(KEY, lang);
}

export function lang() {
  return current;
}

/** The string of `key`, with `{name}` replaced by `vars.name`. */
export function t(key, vars) {
  const text = Object.hasOwn(strings, key) ? strings[key] : key;
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (all, name) => (Object.hasOwn(vars, name) ? String(vars[name]) : all));
}
