// Bundles src/index.js (CodeMirror 6, uPlot) into web-console/lib/ with a
// content hash in the names, and writes web-console/js/lib.js, the
// fixed-name module the console imports it through. (This source lives
// outside web-console/, which is embedded into the binary and served.) `node build.mjs --check` builds into a
// temporary directory and fails if the committed files differ.

import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const consoleDir = join(here, '..', 'web-console');
const check = process.argv.includes('--check');
const out = check ? mkdtempSync(join(tmpdir(), 'tacos-console-lib-')) : consoleDir;

const result = await build({
  entryPoints: [join(here, 'src/index.js')],
  bundle: true,
  format: 'esm',
  minify: true,
  legalComments: 'none',
  target: ['es2020'],
  write: false,
  outfile: 'lib.js',
});
const js = result.outputFiles[0].contents;
const css = readFileSync(join(here, 'node_modules/uplot/dist/uPlot.min.css'));
const hash = (bytes) => createHash('sha256').update(bytes).digest('hex').slice(0, 12);
const jsName = `lib/console-lib-${hash(js)}.js`;
const cssName = `lib/uplot-${hash(css)}.css`;
const banner = `// Written by console-bundle/build.mjs (scripts/build-console.sh): the
// console's bundle of CodeMirror 6 and uPlot, under hashed names that are
// cached for a year. Do not edit; rebuild.
`;
const wrapper = `${banner}export * from '/console/${jsName}';
export const LIB_CSS = '/console/${cssName}';
`;
mkdirSync(join(out, 'lib'), { recursive: true });
mkdirSync(join(out, 'js'), { recursive: true });
if (!check) {
  for (const old of existsSync(join(out, 'lib')) ? readdirSync(join(out, 'lib')) : []) rmSync(join(out, 'lib', old));
}
writeFileSync(join(out, jsName), js);
writeFileSync(join(out, cssName), css);
writeFileSync(join(out, 'js/lib.js'), wrapper);

if (check) {
  const same = (name) => existsSync(join(consoleDir, name))
    && Buffer.compare(readFileSync(join(consoleDir, name)), readFileSync(join(out, name))) === 0;
  const committed = readdirSync(join(consoleDir, 'lib')).sort();
  const built = readdirSync(join(out, 'lib')).sort();
  const stale = [jsName, cssName, 'js/lib.js'].filter((n) => !same(n));
  rmSync(out, { recursive: true, force: true });
  if (stale.length || committed.join() !== built.join()) {
    console.error(`the committed console bundle differs from its source: ${stale.join(', ') || committed.join(', ')}; run scripts/build-console.sh`);
    process.exit(1);
  }
  console.log('the committed console bundle matches its source');
} else {
  console.log(`${jsName} ${js.length} bytes, ${cssName} ${css.length} bytes`);
}
