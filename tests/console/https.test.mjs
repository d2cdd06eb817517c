// The console over HTTPS in headless Debian Chromium (npm playwright-core),
// run by tests/console.rs against a Tacos started with --cert-file:
//
//   node https.test.mjs HTTPS_BASE_URL ADMIN_PASSWORD SPKI_SHA256 DATA_ID
//
// Chromium trusts exactly the server's key (--ignore-certificate-errors-spki-list
// with its SPKI hash), not any certificate: a wrong key still fails. The page
// loads over HTTP/2 (ALPN), the login and the config list (which must show
// DATA_ID, published by the Rust side) work, and the console's own calls stay
// on https. Prints "all ok" at the end.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [base, password, spki, dataId] = process.argv.slice(2);
if (!base || !password || !spki || !dataId) {
  console.error('usage: node https.test.mjs HTTPS_BASE_URL ADMIN_PASSWORD SPKI_SHA256 DATA_ID');
  process.exit(2);
}

const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'tacos-https-chromium-')), {
  executablePath: '/usr/bin/chromium',
  headless: true,
  locale: 'en-US',
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync',
    `--ignore-certificate-errors-spki-list=${spki}`,
  ],
});
const page = context.pages()[0] || await context.newPage();
page.setDefaultTimeout(10000);
const requests = [];
page.on('request', (r) => requests.push(r.url()));
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
try {
  await page.goto(`${base}/`);
  assert.equal(await page.evaluate(() => location.protocol), 'https:');
  const protocol = await page.evaluate(() => performance.getEntriesByType('navigation')[0].nextHopProtocol);
  assert.equal(protocol, 'h2', 'the page should come over HTTP/2 (ALPN)');
  await page.getByLabel('Username').fill('nacos');
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByTestId('whoami').waitFor();
  assert.match(await page.getByTestId('whoami').innerText(), /nacos \(admin\)/);
  await page.evaluate(() => { location.hash = '#/configs'; });
  await page.locator('td a', { hasText: dataId }).waitFor();
  const insecure = requests.filter((u) => !u.startsWith('https://') && !u.startsWith('data:'));
  assert.deepEqual(insecure, [], 'every request of the console stays on https');
  assert.deepEqual(problems, []);
  console.log(`${requests.length} requests, all over https; all ok`);
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  await context.close();
}
