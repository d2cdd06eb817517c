// End-to-end test of the web console in headless Debian Chromium, driven
// by playwright-core. tests/console.rs starts the real tacos binary, writes
// the zip fixtures, runs this script and then compares the exported zip
// with the imported one. The browser's language is English; one step
// switches the console to Chinese, and the last one takes the screenshots
// of every page in both languages at 1366×768 and 1920×1080.
//
//   node console.test.mjs BASE_URL ADMIN_PASSWORD WORK_DIR SCREENSHOT_DIR
//
// WORK_DIR holds import.zip and bad-import.zip (written by the Rust test);
// the script saves export.zip there. Screenshots of the main pages go to
// SCREENSHOT_DIR (overwritten each run). Every write the UI makes is
// checked through the API; bad input must show a message and write nothing.
// Prints "all ok" at the end; any failure exits 1 with the step named.

import { chromium } from 'playwright-core';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';

const [base, password, workDir, shotsDir] = process.argv.slice(2);
if (!base || !password || !workDir || !shotsDir) {
  console.error('usage: node console.test.mjs BASE_URL ADMIN_PASSWORD WORK_DIR SCREENSHOT_DIR');
  process.exit(2);
}
const NS = 'e2e';
const CONSOLE = `${base}/tacos/api/console`;
const AUTH = `Basic ${Buffer.from(`nacos:${password}`).toString('base64')}`;
const started = Date.now();
const md5 = (text) => createHash('md5').update(text, 'utf8').digest('hex');

/** A console API call as the admin (to check what the UI did). */
async function apiGet(path, query = {}) {
  const url = new URL(path, base);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const response = await fetch(url, { headers: { Authorization: AUTH } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
async function apiPost(path, json) {
  const response = await fetch(new URL(path, base), {
    method: 'POST',
    headers: { Authorization: AUTH, 'Content-Type': 'application/json' },
    body: JSON.stringify(json),
  });
  return { status: response.status, body: await response.json() };
}
/** A form POST or DELETE as the admin (Nacos' user and role routes). */
async function apiForm(method, path, fields) {
  const url = new URL(path, base);
  const init = { method, headers: { Authorization: AUTH } };
  if (method === 'DELETE') for (const [k, v] of Object.entries(fields)) url.searchParams.set(k, v);
  else init.body = new URLSearchParams(fields);
  const response = await fetch(url, init);
  assert.equal(response.status, 200, `${method} ${path}: ${await response.text()}`);
}
const configCount = async (ns = NS) => (await apiGet(`${CONSOLE}/configs`, { namespace: ns, pageSize: 500 })).body.totalCount;
const getConfig = async (dataId, group = 'DEFAULT_GROUP') => apiGet(`${CONSOLE}/config`, { namespace: NS, group, dataId });

let step = 'start';
function log(message) {
  console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
}
async function stepDo(name, fn) {
  step = name;
  log(name);
  await fn();
}

mkdirSync(shotsDir, { recursive: true });
const userDataDir = mkdtempSync(join(tmpdir(), 'tacos-console-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  acceptDownloads: true,
  viewport: { width: 1366, height: 768 },
  locale: 'en-US',
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync',
  ],
});
const page = context.pages()[0] || await context.newPage();
page.setDefaultTimeout(10000);
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('console', (m) => {
  // A failed request is logged by the browser; the UI shows those itself.
  if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console error in "${step}": ${m.text()}`);
});
// What the Content Security Policy refuses, with where it came from.
await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => {
  console.error(`CSP refused ${e.violatedDirective}: ${e.sample || '(no sample)'} at ${e.sourceFile}:${e.lineNumber}:${e.columnNumber} on ${(e.composedPath()[0] || e.target)?.outerHTML?.slice(0, 300)}`);
}));
/** A screenshot of the viewport, without the passing notes in the corner. */
const shot = async (name) => {
  await page.evaluate(() => document.getElementById('toasts')?.replaceChildren());
  await page.screenshot({ path: join(shotsDir, `${name}.png`), fullPage: false });
};
const message = () => page.locator('.message.error').first();
/** The changed lines of a merge view (diff.js): left and right side. */
const mergeSides = (within) => within.getByTestId('diff').first().evaluate((host) => {
  const lines = (side) => [...host.shadowRoot.querySelectorAll(`.cm-merge-${side} .cm-changedLine`)].map((l) => l.textContent);
  return { a: lines('a'), b: lines('b') };
});
/**
 * Replaces the code editor's content as a user would: select all, delete,
 * then the text as typed input. (Playwright's fill() replaces styled text
 * in one browser edit, and Chromium then adds a style attribute to keep
 * the old look, which the console's CSP refuses.)
 */
async function setContent(text) {
  await page.getByTestId('content').click();
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
  await page.waitForFunction((want) => {
    const host = document.querySelector('[data-testid=code-editor]');
    const lines = [...host.shadowRoot.querySelectorAll('.cm-content .cm-line')].map((l) => l.textContent);
    return lines.join('\n') === want;
  }, text);
}
/** Every text of the shadow root of the element with this test id. */
const shadowText = (testId) => page.getByTestId(testId).evaluate((host) => host.shadowRoot.textContent);
const goto = async (hash) => {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForLoadState('networkidle');
};

/**
 * Every page in `lang` at `size`, saved under SCREENSHOT_DIR/`dir`. The
 * admin is logged in; the step ends logged in again.
 */
async function tour(lang, size, dir) {
  mkdirSync(join(shotsDir, dir), { recursive: true });
  const save = async (name) => {
    await page.evaluate(() => document.getElementById('toasts')?.replaceChildren());
    await page.screenshot({ path: join(shotsDir, dir, `${name}.png`) });
  };
  const key = `ns=${NS}&group=DEFAULT_GROUP&dataId=app.json`;
  await page.setViewportSize(size);
  await page.evaluate((l) => localStorage.setItem('tacos.lang', l), lang);
  await page.reload();
  await page.getByTestId('whoami').waitFor();
  const visit = async (name, hash, ready) => {
    await goto(hash);
    await page.locator(ready).first().waitFor();
    await save(name);
  };
  await visit('configs', '#/configs', 'td a');
  await visit('namespaces', '#/namespaces', '[data-testid=ns-create]');
  await visit('editor', `#/config?${key}`, '[data-testid=code-editor]');
  await setContent('{\n  "port": 9191,\n  "debug": true,\n  "name": "shop"\n}\n');
  await page.getByTestId('review-publish').click();
  await page.getByTestId('review').waitFor();
  await save('edit-diff');
  await page.keyboard.press('Escape');
  await page.getByTestId('beta-panel').evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await save('editor-grays');
  await goto(`#/config?new=1&ns=${NS}`);
  await page.getByTestId('type').selectOption('yaml');
  await setContent('a: 1\nb:\n  - x\n c: 2\n');
  await page.getByTestId('check').click();
  await page.locator('[data-testid=editor-message] .message.error').waitFor();
  await save('editor-invalid-yaml');
  await visit('history', `#/history?${key}`, '[data-testid=history-table] input');
  // The newest row and the first one that holds other content.
  const md5s = await page.locator('[data-testid=history-table] tbody tr').evaluateAll((rows) => rows.map((r) => r.children[5].textContent.slice(0, 10)));
  const checks = page.locator('[data-testid=history-table] input[type=checkbox]');
  await checks.nth(0).check();
  await checks.nth(Math.max(md5s.findIndex((m) => m !== md5s[0]), 1)).check();
  await page.getByTestId('compare').click();
  await page.getByTestId('history-diff').waitFor();
  await save('history-diff');
  await page.keyboard.press('Escape');
  await visit('listeners', `#/listeners?${key}`, '[data-testid=listeners] table');
  await visit('import', '#/transfer', '[data-testid=export]');
  await visit('dashboard', '#/dashboard', '[data-testid=chart-cpu] canvas');
  await visit('cluster', '#/cluster', '[data-testid=leader]');
  await visit('users', '#/users', '[data-testid=users] table');
  await visit('roles', '#/roles', '[data-testid=roles] table');
  await visit('audit', '#/audit', '[data-testid=audit] table');
  await page.getByTestId('logout').click();
  await page.getByRole('button').first().waitFor();
  await save('login');
  await page.getByLabel(lang === 'en' ? 'Username' : '用户名').fill('nacos');
  await page.getByLabel(lang === 'en' ? 'Password' : '密码').fill(password);
  await page.locator('button[type=submit]').click();
  await page.getByTestId('whoami').waitFor();
}

try {
  await stepDo('the console is served gzipped; its hashed bundle cached for good, the rest revalidated', async () => {
    const wrapper = await fetch(`${base}/console/js/lib.js`, { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(wrapper.headers.get('content-encoding'), 'gzip');
    assert.equal(wrapper.headers.get('cache-control'), 'no-cache');
    const bundle = /'\/console\/(lib\/console-lib-[0-9a-f]+\.js)'/.exec(await wrapper.text())[1];
    const lib = await fetch(`${base}/console/${bundle}`, { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(lib.headers.get('content-encoding'), 'gzip');
    assert.equal(lib.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const index = await fetch(`${base}/`, { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    assert.match(index.headers.get('content-security-policy'), /style-src 'self';/);
  });

  await stepDo('login page refuses a wrong password', async () => {
    await page.goto(`${base}/`);
    await page.getByLabel('Username').fill('nacos');
    await page.getByLabel('Password').fill('wrong-password');
    await shot('login');
    await page.getByRole('button', { name: 'Log in' }).click();
    await message().waitFor();
    assert.match(await message().innerText(), /Wrong username or password/);
  });

  await stepDo('log in and see who I am', async () => {
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByTestId('whoami').waitFor();
    assert.match(await page.getByTestId('whoami').innerText(), /nacos \(admin\)/);
  });

  await stepDo('create a namespace', async () => {
    await goto('#/namespaces');
    await page.getByTestId('ns-id').fill(NS);
    await page.getByTestId('ns-name').fill('End to end');
    await page.getByTestId('ns-create').click();
    await page.locator('td', { hasText: 'End to end' }).waitFor();
    const namespaces = (await apiGet(`${CONSOLE}/namespaces`)).body;
    assert.ok(namespaces.some((n) => n.id === NS && n.name === 'End to end'), JSON.stringify(namespaces));
    await page.getByTestId('namespace-select').selectOption(NS);
    await goto('#/namespaces');
    await page.locator('td', { hasText: 'End to end' }).waitFor();
    await shot('namespaces');
  });

  const DATA_ID = 'app.json';
  const v1 = '{\n  "port": 8080,\n  "debug": false,\n  "name": "shop"\n}\n';
  const v2 = v1.replace('8080', '9090');
  const other = v1.replace('8080', '7070');
  const betaContent = v1.replace('false', 'true');

  await stepDo('bad input in the editor shows a message and publishes nothing', async () => {
    await goto('#/configs');
    await page.getByTestId('new-config').click();
    await page.getByTestId('dataId').waitFor();
    const review = page.getByTestId('review-publish');
    const editorMessage = page.getByTestId('editor-message');

    await page.getByTestId('dataId').fill('bad id!');
    await page.getByTestId('type').selectOption('json');
    await setContent(v1);
    await review.click();
    await editorMessage.locator('.message.error').waitFor();
    assert.match(await editorMessage.innerText(), /Nothing was published[\s\S]*Data ID may only hold letters, digits/);

    await page.getByTestId('dataId').fill(DATA_ID);
    await setContent('   \n');
    await review.click();
    await page.waitForFunction(() => /content is blank/.test(document.querySelector('[data-testid=editor-message]').innerText));

    await setContent('{\n  "port": 8080,\n  "debug": \n}\n');
    await review.click();
    await page.waitForFunction(() => /Invalid json at line 4, column 1/.test(document.querySelector('[data-testid=editor-message]').innerText));
    await shot('editor-invalid-json');
    assert.equal(await page.locator('[data-testid=review]').count(), 0, 'no review dialog for bad input');

    assert.equal(await configCount(), 0, 'bad input published a config');
    assert.equal((await getConfig(DATA_ID)).status, 404);
    // The server refuses the same inputs on its own, writing nothing.
    const direct = await apiPost(`${CONSOLE}/config`, { namespace: NS, group: 'DEFAULT_GROUP', dataId: DATA_ID, type: 'json', content: '{"a": }', create: true });
    assert.equal(direct.status, 400);
    assert.equal(direct.body.kind, 'syntax');
    const badId = await apiPost(`${CONSOLE}/config`, { namespace: NS, group: 'DEFAULT_GROUP', dataId: 'a b', content: 'x', create: true });
    assert.equal(badId.status, 400);
    assert.match(badId.body.error, /invalid dataId/);
    assert.equal(await configCount(), 0);
  });

  await stepDo('the code editor: invalid YAML is marked at the line and column the server names; search', async () => {
    const yaml = 'a: 1\nb:\n  - x\n c: 2\n';
    await page.getByTestId('type').selectOption('yaml');
    await setContent(yaml);
    await page.getByTestId('check').click();
    await page.waitForFunction(() => /Invalid yaml at line 4, column 2/.test(document.querySelector('[data-testid=editor-message]').innerText));
    const server = (await apiPost(`${CONSOLE}/config/check`, { type: 'yaml', content: yaml })).body.error;
    assert.deepEqual([server.line, server.column], [4, 2]);
    const marked = await page.getByTestId('code-editor').evaluate((host) => {
      const root = host.shadowRoot;
      const lines = [...root.querySelectorAll('.cm-content .cm-line')];
      const at = lines.findIndex((l) => l.querySelector('.cm-lintRange-error'));
      const range = at >= 0 ? lines[at].querySelector('.cm-lintRange-error') : null;
      let column = null;
      if (range) {
        const before = document.createRange();
        before.setStart(lines[at], 0);
        before.setEndBefore(range);
        column = before.toString().length + 1;
      }
      return {
        line: at + 1,
        column,
        text: range && range.textContent,
        gutterMarkers: root.querySelectorAll('.cm-gutter-lint .cm-lint-marker-error').length,
        highlighted: root.querySelectorAll('.cm-line span[class]').length > 0,
        lineNumbers: [...root.querySelectorAll('.cm-lineNumbers .cm-gutterElement')]
          .filter((e) => e.style.visibility !== 'hidden') // CodeMirror's width probe
          .map((e) => e.textContent),
      };
    });
    assert.deepEqual(
      { line: marked.line, column: marked.column, text: marked.text, gutterMarkers: marked.gutterMarkers },
      { line: 4, column: 2, text: 'c', gutterMarkers: 1 },
      JSON.stringify(marked),
    );
    assert.ok(marked.highlighted, 'yaml is highlighted');
    assert.deepEqual(marked.lineNumbers.slice(0, 4), ['1', '2', '3', '4']);
    await shot('editor-invalid-yaml');
    // Search (Ctrl-F): the panel opens and the matches are marked.
    await page.getByTestId('content').click();
    await page.keyboard.press('Control+f');
    await page.keyboard.type('b:');
    await page.waitForFunction(() => document.querySelector('[data-testid=code-editor]').shadowRoot.querySelectorAll('.cm-searchMatch').length === 1);
    await page.keyboard.press('Escape');
    await page.getByTestId('type').selectOption('json');
  });

  await stepDo('create a config after reviewing it', async () => {
    await setContent(v1);
    await page.getByTestId('check').click();
    await page.locator('[data-testid=editor-message] .message.ok', { hasText: 'Valid json' }).waitFor();
    await page.getByTestId('review-publish').click();
    await page.getByTestId('review').waitFor();
    assert.match(await page.getByTestId('review').innerText(), /\+5/);
    await page.locator('[data-action=publish]').click();
    await page.getByTestId('config-meta').waitFor();
    const created = (await getConfig(DATA_ID)).body.config;
    assert.equal(created.content, v1);
    assert.equal(created.type, 'json');
    await shot('editor');
  });

  await stepDo('edit it and see the diff before publishing', async () => {
    await setContent(v2);
    await page.getByTestId('review-publish').click();
    const review = page.getByTestId('review');
    await review.waitFor();
    const sides = await mergeSides(review);
    assert.deepEqual(sides, { a: ['  "port": 8080,'], b: ['  "port": 9090,'] }, 'the merge view marks the changed line on both sides');
    assert.match(await review.innerText(), /\+1\s*−1/);
    await shot('edit-diff');
    assert.equal((await getConfig(DATA_ID)).body.config.content, v1, 'nothing is published before the review is confirmed');
    await page.locator('[data-action=publish]').click();
    await page.waitForFunction((m) => document.querySelector('[data-testid=config-meta]')?.innerText.includes(m), md5(v2));
    assert.equal((await getConfig(DATA_ID)).body.config.content, v2);
  });

  await stepDo('a publish over someone else\'s change is refused (CAS)', async () => {
    // Someone else publishes while the editor holds v2.
    const meanwhile = await apiPost(`${CONSOLE}/config`, { namespace: NS, group: 'DEFAULT_GROUP', dataId: DATA_ID, type: 'json', content: other, casMd5: md5(v2) });
    assert.equal(meanwhile.status, 200, JSON.stringify(meanwhile.body));
    await setContent(v2.replace('"shop"', '"store"'));
    await page.getByTestId('review-publish').click();
    await page.getByTestId('review').waitFor();
    assert.match(await page.getByTestId('review').innerText(), /Someone else published this config after you opened it/);
    await page.locator('[data-action=publish]').click();
    await page.waitForFunction(() => /someone else changed this config/.test(document.querySelector('[data-testid=editor-message]').innerText));
    assert.equal((await getConfig(DATA_ID)).body.config.content, other, 'the CAS refusal must not write');
  });

  await stepDo('history: compare two versions and roll back', async () => {
    await goto(`#/history?ns=${NS}&group=DEFAULT_GROUP&dataId=${DATA_ID}`);
    await page.getByTestId('history-table').waitFor();
    const rows = (await apiGet(`${CONSOLE}/history`, { namespace: NS, group: 'DEFAULT_GROUP', dataId: DATA_ID })).body.pageItems;
    assert.equal(rows.length, 3, JSON.stringify(rows));
    const target = rows.find((r) => r.md5 === md5(v1) && r.op === 'U');
    assert.ok(target, 'a row holding v1');
    const checks = page.locator('[data-testid=history-table] input[type=checkbox]');
    await checks.nth(0).check();
    await checks.nth(2).check();
    await page.getByTestId('compare').click();
    await page.getByTestId('history-diff').waitFor();
    const compared = await mergeSides(page.getByTestId('history-diff'));
    assert.ok(compared.a.length && compared.b.length, JSON.stringify(compared));
    await shot('history-diff');
    await page.keyboard.press('Escape');
    // One version, in a read-only editor.
    await page.locator('[data-testid=history-table] tbody tr').nth(2).getByRole('button', { name: 'View' }).click();
    const viewed = page.getByTestId('history-content');
    await viewed.waitFor();
    const shown = await viewed.evaluate((host) => ({
      text: [...host.shadowRoot.querySelectorAll('.cm-line')].map((l) => l.textContent).join('\n'),
      editable: host.shadowRoot.querySelector('.cm-content').getAttribute('contenteditable'),
    }));
    assert.deepEqual(shown, { text: v1, editable: 'false' });
    await page.keyboard.press('Escape');
    await shot('history');
    await page.locator(`[data-rollback="${target.id}"]`).click();
    const review = page.getByTestId('rollback-review');
    await review.waitFor();
    assert.deepEqual(await mergeSides(review), { a: ['  "port": 7070,'], b: ['  "port": 8080,'] });
    await page.locator('[data-action=rollback]').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=history-table] tbody tr').length === 4);
    const now = (await getConfig(DATA_ID)).body.config;
    assert.equal(now.content, v1, 'the rollback published the old content');
    const after = (await apiGet(`${CONSOLE}/history`, { namespace: NS, group: 'DEFAULT_GROUP', dataId: DATA_ID })).body.pageItems;
    assert.equal(after.length, 4);
    assert.equal(after[0].op, 'U');
    assert.equal(after[0].md5, md5(other), 'the rollback is recorded as a new version');
  });

  await stepDo('beta: publish to an IP, stop it; publish again and promote it', async () => {
    await goto(`#/config?ns=${NS}&group=DEFAULT_GROUP&dataId=${DATA_ID}`);
    const panel = page.getByTestId('beta-panel');
    await panel.waitFor();
    await panel.getByLabel('Beta IPs').fill('10.1.2.3, not-an-ip');
    await panel.getByRole('button', { name: 'Publish the editor content as beta' }).click();
    await panel.locator('.message.error', { hasText: 'not an IP' }).waitFor();
    assert.equal((await getConfig(DATA_ID)).body.beta, null);
    await setContent(betaContent);
    await panel.getByLabel('Beta IPs').fill('10.1.2.3');
    await panel.getByRole('button', { name: 'Publish the editor content as beta' }).click();
    await page.getByTestId('beta-panel').locator('.badge', { hasText: 'beta out' }).waitFor();
    const withBeta = (await getConfig(DATA_ID)).body;
    assert.deepEqual(withBeta.beta.ips, ['10.1.2.3']);
    assert.equal(withBeta.config.content, v1, 'a beta leaves the current version alone');
    await page.getByTestId('beta-panel').evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await shot('beta');
    await page.getByRole('button', { name: 'Stop the beta' }).click();
    await page.locator('[data-action=confirm]').click();
    await page.getByTestId('beta-panel').locator('text=No beta is out').waitFor();
    assert.equal((await getConfig(DATA_ID)).body.beta, null);

    // Again, and this time promote it: it becomes the current version.
    await setContent(betaContent);
    await panel.getByLabel('Beta IPs').fill('10.1.2.3');
    await panel.getByRole('button', { name: 'Publish the editor content as beta' }).click();
    await page.getByRole('button', { name: 'Promote to everyone' }).click();
    await page.locator('[data-action=confirm]').click();
    await page.getByTestId('beta-panel').locator('text=No beta is out').waitFor();
    const promoted = (await getConfig(DATA_ID)).body;
    assert.equal(promoted.beta, null);
    assert.equal(promoted.config.content, betaContent);
  });

  await stepDo('gray by tag: publish for a tag (only tagged reads see it), stop it; publish again and promote it', async () => {
    const tagContent = betaContent.replace('"shop"', '"shop-canary"');
    const read = async (tag) => {
      const query = new URLSearchParams({ dataId: DATA_ID, group: 'DEFAULT_GROUP', tenant: NS, ...(tag ? { tag } : {}) });
      const response = await fetch(`${base}/nacos/v1/cs/configs?${query}`, { headers: { Authorization: AUTH } });
      return response.text();
    };
    await goto(`#/config?ns=${NS}&group=DEFAULT_GROUP&dataId=${DATA_ID}`);
    const panel = page.getByTestId('tag-panel');
    await panel.waitFor();
    await panel.getByTestId('gray-tag').fill('bad tag!');
    await panel.getByTestId('publish-tag-gray').click();
    await panel.locator('.message.error', { hasText: 'No tag gray was published' }).waitFor();
    assert.equal((await getConfig(DATA_ID)).body.grays.length, 0, 'a refused tag writes nothing');
    await setContent(tagContent);
    await panel.getByTestId('gray-tag').fill('canary');
    await panel.getByTestId('publish-tag-gray').click();
    await page.getByTestId('tag-gray-canary').waitFor();
    assert.equal(await read('canary'), tagContent, 'a tagged read sees the gray');
    assert.equal(await read(null), betaContent, 'everyone else keeps the current version');
    await page.getByTestId('tag-panel').evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await shot('gray-tag');
    await page.getByRole('button', { name: 'Stop tag canary' }).click();
    await page.locator('[data-action=confirm]').click();
    await page.getByTestId('tag-panel').locator('text=No tag gray is out').waitFor();
    assert.equal((await getConfig(DATA_ID)).body.grays.length, 0);

    // Again, and promote it; then put the current version back for the
    // steps that follow.
    await setContent(tagContent);
    await page.getByTestId('tag-panel').getByTestId('gray-tag').fill('canary');
    await page.getByTestId('tag-panel').getByTestId('publish-tag-gray').click();
    await page.getByRole('button', { name: 'Promote tag canary to everyone' }).click();
    await page.locator('[data-action=confirm]').click();
    await page.getByTestId('tag-panel').locator('text=No tag gray is out').waitFor();
    const promoted = (await getConfig(DATA_ID)).body;
    assert.equal(promoted.grays.length, 0);
    assert.equal(promoted.config.content, tagContent);
    const restored = await fetch(`${base}/nacos/v1/cs/configs`, {
      method: 'POST',
      headers: { Authorization: AUTH, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ dataId: DATA_ID, group: 'DEFAULT_GROUP', tenant: NS, content: betaContent, type: 'json' }).toString(),
    });
    assert.equal(await restored.text(), 'true');
  });

  await stepDo('listeners: a held long poll shows, in sync', async () => {
    const abort = new AbortController();
    const listening = `${DATA_ID}\u0002DEFAULT_GROUP\u0002${md5(betaContent)}\u0002${NS}\u0001`;
    const poll = fetch(`${base}/nacos/v1/cs/configs/listener`, {
      method: 'POST',
      headers: { 'Long-Pulling-Timeout': '30000', 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ 'Listening-Configs': encodeURIComponent(listening) }).toString(),
      signal: abort.signal,
    }).catch(() => null);
    await goto(`#/listeners?ns=${NS}&group=DEFAULT_GROUP&dataId=${DATA_ID}`);
    await page.getByTestId('listeners').locator('td', { hasText: 'long poll held' }).waitFor();
    assert.match(await page.getByTestId('listeners').innerText(), /HTTP[\s\S]*in sync/);
    await shot('listeners');
    abort.abort();
    await poll;
  });

  await stepDo('import a zip, refuse a bad one, export the same again', async () => {
    await goto('#/transfer');
    const before = await configCount();
    await page.getByTestId('import-file').setInputFiles(join(workDir, 'bad-import.zip'));
    await page.getByTestId('import').click();
    const result = page.getByTestId('import-result');
    await result.locator('.message.error').waitFor();
    const badText = await result.innerText();
    assert.match(badText, /entries are invalid; nothing was imported/);
    assert.match(badText, /IMPORTED\/broken\.json: invalid json at line 1/);
    assert.match(badText, /IMPORTED\/blank\.txt: content is blank/);
    assert.equal(await configCount(), before, 'a bad zip imported something');

    await page.getByTestId('import-file').setInputFiles(join(workDir, 'import.zip'));
    await page.getByTestId('import').click();
    await result.getByTestId('import-summary').waitFor();
    assert.match(await result.getByTestId('import-summary').innerText(), /Created 3, overwritten 0, skipped 0/);
    await shot('import');
    assert.equal(await configCount(), before + 3);

    // The same zip again: abort refuses, skip keeps.
    await page.getByTestId('import').click();
    await result.locator('.message.error', { hasText: 'already exist (policy abort)' }).waitFor();
    await page.getByTestId('import-policy').selectOption('skip');
    await page.getByTestId('import').click();
    await result.getByTestId('import-summary').waitFor();
    assert.match(await result.getByTestId('import-summary').innerText(), /Created 0, overwritten 0, skipped 3/);

    await page.getByLabel('Export group').fill('IMPORTED');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('export').click(),
    ]);
    await download.saveAs(join(workDir, 'export.zip'));
    assert.match(download.suggestedFilename(), /^tacos_config_export_e2e_\d+\.zip$/);
  });

  await stepDo('configs list: search and paging', async () => {
    await goto('#/configs');
    await page.locator('td a', { hasText: DATA_ID }).waitFor();
    await shot('configs');
    await page.getByTestId('search-dataid').fill('*.yaml');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForFunction(() => /1 in all/.test(document.querySelector('.pager')?.innerText || ''));
    assert.equal(await page.locator('td a', { hasText: DATA_ID }).count(), 0);
  });

  await stepDo('a namespace that holds configs cannot be deleted', async () => {
    await goto('#/namespaces');
    await page.locator(`[data-delete="${NS}"]`).click();
    await page.locator('[data-action=confirm]').click();
    await page.getByTestId('namespaces-message').locator('.message.error', { hasText: 'still holds' }).waitFor();
    assert.ok((await apiGet(`${CONSOLE}/namespaces`)).body.some((n) => n.id === NS));
  });

  await stepDo('cluster page', async () => {
    await goto('#/cluster');
    await page.getByTestId('leader').waitFor();
    assert.equal(await page.getByTestId('leader').innerText(), 'node 1');
    assert.match(await page.getByTestId('cluster').innerText(), /Leader[\s\S]*healthy/);
    await shot('cluster');
  });

  await stepDo('users and permissions', async () => {
    await goto('#/users');
    await page.getByTestId('new-username').fill('bad name!');
    await page.getByTestId('new-password').fill('reader-password-1');
    await page.getByTestId('create-user').click();
    await page.locator('.message.error', { hasText: 'A username is 1 to 64' }).waitFor();
    await page.getByTestId('new-username').fill('reader');
    await page.getByTestId('create-user').click();
    await page.getByTestId('users').locator('strong', { hasText: 'reader' }).waitFor();
    const row = page.getByTestId('users').locator('tr', { hasText: 'reader' });
    await row.getByRole('button', { name: '+ grant' }).click();
    await page.getByLabel('Namespace', { exact: true }).last().selectOption(NS);
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    await row.locator('.badge', { hasText: `${NS}: r` }).waitFor();
    const users = await apiGet('/nacos/v1/auth/users', { pageNo: 1, pageSize: 100 });
    const reader = users.body.pageItems.find((u) => u.username === 'reader');
    assert.deepEqual(reader.permissions, { [NS]: 'r' });
    // A grant through a Nacos role shows beside the user's own.
    const form = async (path, fields) => {
      const response = await fetch(new URL(path, base), { method: 'POST', headers: { Authorization: AUTH }, body: new URLSearchParams(fields) });
      assert.equal(response.status, 200, await response.text());
    };
    await form('/nacos/v1/auth/roles', { role: 'readers', username: 'reader' });
    await form('/nacos/v1/auth/permissions', { role: 'readers', resource: `${NS}:*:*`, action: 'r' });
    await goto('#/namespaces'); // the same hash again would not reload the page
    await goto('#/users');
    await page.getByTestId('users').locator('tr', { hasText: 'reader' }).locator('.badge', { hasText: `${NS}: r via readers` }).waitFor();
    await shot('users');
  });

  await stepDo('dashboard: the publishes chart moved, and its total is what /metrics counts', async () => {
    const counted = async () => {
      const text = await (await fetch(`${base}/metrics`, { headers: { Authorization: AUTH } })).text();
      const found = /^tacos_config_publishes_total (\d+)/m.exec(text);
      return found ? Number(found[1]) : null;
    };
    const published = await counted();
    assert.ok(published > 0, 'the steps before published');
    await goto('#/dashboard?window=5m');
    // Samples are taken every second; the page refreshes every 5 s.
    await page.waitForFunction((n) => document.querySelector('[data-testid=publishes-total]')?.textContent === String(n), published, { timeout: 20000 });
    assert.equal(await counted(), published, 'nothing published meanwhile');
    const max = Number(await page.getByTestId('chart-publishes').getAttribute('data-max'));
    assert.ok(max > 0, `publishes/s rose above 0 in the last 5 minutes (chart max ${max})`);
    assert.equal(await page.getByTestId('chart-publishes').locator('canvas').count(), 1, 'the chart is drawn');
    await shot('dashboard');
    await page.getByTestId('window-1h').click();
    await page.getByTestId('chart-raft').locator('canvas').waitFor();
  });

  await stepDo('roles: create, bind, grant, unbind, revoke, delete; each audited', async () => {
    await apiForm('POST', '/nacos/v1/auth/users', { username: 'operator', password: 'operator-password-1' });
    await goto('#/roles');
    await page.getByTestId('new-role').fill('ops');
    await page.getByTestId('new-role-user').selectOption('operator');
    await page.getByTestId('create-role').click();
    const row = page.getByTestId('roles').locator('tr', { hasText: 'operator' });
    await row.locator('[data-user=operator]').waitFor();
    await row.locator('button[data-grant=ops]').click();
    await page.getByTestId('grant-namespace').last().selectOption(NS);
    await page.getByTestId('grant-access').last().selectOption('rw');
    await page.locator('[data-action=grant]').click();
    await row.locator(`span[data-grant="${NS}"]`).waitFor();
    const permissions = async (role) => (await apiGet('/nacos/v1/auth/permissions', { role, pageNo: 1, pageSize: 50 })).body.pageItems;
    const bound = async (role) => (await apiGet('/nacos/v1/auth/roles', { role, pageNo: 1, pageSize: 50 })).body.pageItems.map((b) => b.username).sort();
    assert.deepEqual(await permissions('ops'), [{ role: 'ops', resource: `${NS}:*:*`, action: 'rw' }]);
    // A narrower grant: one group's dataIds by pattern, write-only.
    await row.locator('button[data-grant=ops]').click();
    await page.getByTestId('grant-namespace').last().selectOption(NS);
    await page.getByTestId('grant-access').last().selectOption('w');
    await page.getByTestId('grant-group').last().fill('DEFAULT_GROUP');
    await page.getByTestId('grant-data-id').last().fill('app*.yaml');
    await page.locator('[data-action=grant]').click();
    await row.getByText(`DEFAULT_GROUP:config/app*.yaml: w`).waitFor();
    assert.deepEqual(await permissions('ops'), [
      { role: 'ops', resource: `${NS}:*:*`, action: 'rw' },
      { role: 'ops', resource: `${NS}:DEFAULT_GROUP:config/app*.yaml`, action: 'w' },
    ]);
    // Bind a second user, then unbind it.
    await row.locator('[data-bind=ops]').click();
    await page.getByTestId('role-user').last().selectOption('reader');
    await page.locator('[data-action=bind]').click();
    await row.locator('[data-user=reader]').waitFor();
    assert.deepEqual(await bound('ops'), ['operator', 'reader']);
    await row.locator('[data-user=reader] button').click();
    await page.waitForFunction(() => ![...document.querySelectorAll('[data-testid=roles] tr')].some((tr) => tr.textContent.includes('operator') && tr.querySelector('[data-user=reader]')));
    assert.deepEqual(await bound('ops'), ['operator']);
    // A throwaway role: grant, revoke, delete.
    await page.getByTestId('new-role').fill('tmp');
    await page.getByTestId('new-role-user').selectOption('reader');
    await page.getByTestId('create-role').click();
    const tmp = page.getByTestId('roles').locator('tr', { has: page.locator('strong', { hasText: /^tmp$/ }) });
    await tmp.waitFor();
    await tmp.locator('button[data-grant=tmp]').click();
    await page.getByTestId('grant-namespace').last().selectOption('public');
    await page.locator('[data-action=grant]').click();
    await tmp.locator('span[data-grant=public]').waitFor();
    await tmp.locator('span[data-grant=public] button').click();
    await page.waitForFunction(() => !document.querySelector('[data-testid=roles] span[data-grant=public]'));
    assert.deepEqual(await permissions('tmp'), []);
    await tmp.locator('[data-delete-role=tmp]').click();
    await page.locator('[data-action=confirm]').click();
    await page.waitForFunction(() => ![...document.querySelectorAll('[data-testid=roles] strong')].some((s) => s.textContent === 'tmp'));
    assert.deepEqual(await bound('tmp'), []);
    const audited = (await apiGet('/tacos/v1/admin/audit', { action: 'role.', pageNo: 1, pageSize: 100 })).body.pageItems.map((r) => r.action);
    for (const action of ['role.bind', 'role.unbind', 'role.permission', 'role.remove']) {
      assert.ok(audited.some((a) => a.startsWith(action)), `${action} is audited: ${audited}`);
    }
    await shot('roles');
  });

  await stepDo('switch to Chinese: the page is in Chinese, the choice is kept, and back', async () => {
    await goto('#/configs');
    await page.getByTestId('language').selectOption('zh-CN');
    await page.locator('nav a[data-nav=configs]', { hasText: '配置' }).waitFor();
    assert.equal(await page.locator('h1').first().innerText(), '配置');
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
    assert.match(await page.getByTestId('whoami').innerText(), /当前用户/);
    assert.match(await page.getByRole('button', { name: '搜索' }).innerText(), /搜索/);
    await page.reload();
    await page.locator('nav a[data-nav=dashboard]', { hasText: '监控面板' }).waitFor();
    await page.getByTestId('language').selectOption('en');
    await page.locator('nav a[data-nav=configs]', { hasText: 'Configs' }).waitFor();
  });

  await stepDo('audit log', async () => {
    await goto('#/audit?action=config.');
    await page.getByTestId('audit').locator('td', { hasText: 'config.publish' }).first().waitFor();
    await shot('audit');
  });

  await stepDo('log out', async () => {
    await page.getByTestId('logout').click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
  });

  await stepDo('a read-only user sees only its namespace and cannot write', async () => {
    await page.getByLabel('Username').fill('reader');
    await page.getByLabel('Password').fill('reader-password-1');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByTestId('whoami').waitFor();
    assert.match(await page.getByTestId('whoami').innerText(), /reader/);
    const options = await page.getByTestId('namespace-select').locator('option').allInnerTexts();
    assert.deepEqual(options, ['End to end (e2e)']);
    assert.equal(await page.locator('[data-nav=users]').count(), 0, 'no admin pages for a reader');
    await goto('#/configs');
    await page.locator('td a', { hasText: DATA_ID }).waitFor();
    assert.equal(await page.getByTestId('new-config').count(), 0);
    await page.locator('td a', { hasText: DATA_ID }).click();
    await page.locator('.message.warn', { hasText: 'may read this namespace but not change it' }).waitFor();
    assert.equal(await page.getByTestId('content').getAttribute('contenteditable'), 'false', 'the editor is read-only');
    const refused = await page.evaluate(async (ns) => {
      const { token } = JSON.parse(sessionStorage.getItem('tacos.session'));
      const response = await fetch('/tacos/api/console/config', {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ namespace: ns, group: 'DEFAULT_GROUP', dataId: 'sneaky', content: 'x', create: true }),
      });
      return { status: response.status, body: await response.json() };
    }, NS);
    assert.equal(refused.status, 403);
    assert.match(refused.body.error, /reader may not write e2e:DEFAULT_GROUP:config\/sneaky/);
    assert.equal((await getConfig('sneaky')).status, 404);
    await page.getByTestId('logout').click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
  });

  await stepDo('a user bound to a role with rw on the namespace sees it and may edit', async () => {
    await page.getByLabel('Username').fill('operator');
    await page.getByLabel('Password').fill('operator-password-1');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByTestId('whoami').waitFor();
    const options = await page.getByTestId('namespace-select').locator('option').allInnerTexts();
    assert.deepEqual(options, ['End to end (e2e)']);
    await goto('#/configs');
    await page.locator('td a', { hasText: DATA_ID }).click();
    await page.getByTestId('review-publish').waitFor();
    assert.equal(await page.getByTestId('content').getAttribute('contenteditable'), 'true');
    await page.getByTestId('logout').click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
  });

  await stepDo('screenshots of every page in both languages at 1366×768 and 1920×1080', async () => {
    await page.getByLabel('Username').fill('nacos');
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByTestId('whoami').waitFor();
    await tour('zh-CN', { width: 1366, height: 768 }, 'zh-CN');
    await tour('en', { width: 1920, height: 1080 }, '1920x1080/en');
    await tour('zh-CN', { width: 1920, height: 1080 }, '1920x1080/zh-CN');
    await page.evaluate(() => localStorage.setItem('tacos.lang', 'en'));
  });

  assert.deepEqual(problems, [], 'the page logged errors');
  log('all ok');
} catch (e) {
  console.error(`FAILED at step "${step}": ${e.stack || e}`);
  try {
    await page.screenshot({ path: join(workDir, 'failure.png'), fullPage: true });
    console.error(`screenshot of the failure: ${join(workDir, 'failure.png')}`);
  } catch {
    // the browser may be gone
  }
  if (problems.length) console.error(problems.join('\n'));
  process.exitCode = 1;
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
