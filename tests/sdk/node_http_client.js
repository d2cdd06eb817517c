// Drives Tacos with the official Node.js SDK (npm `nacos`, HTTP client).
// Usage: node node_http_client.js [http[s]://]127.0.0.1:PORT [USERNAME PASSWORD]
//                                 [--ca CA --cert CERT --key KEY]
// (with credentials the client sends them on every request, for a server
// that runs with --open-api-auth); exits non-zero on the first mismatch.
//
// Over TLS: an `https://` address sets the SDK's option `ssl: true` (its
// only TLS switch: the request URL becomes https://). The SDK itself passes
// `rejectUnauthorized: false` on every request (and `secureProtocol:
// 'TLSv1_2_method'`), so it verifies no certificate and has no option for a
// CA or a client certificate; NODE_EXTRA_CA_CERTS changes nothing. With
// --ca/--cert/--key the SDK gets the option it does have for that, its own
// `httpclient`: urllib with the same arguments plus the CA (verified), the
// client certificate and key.
'use strict';
const fs = require('fs');
const urllib = require('urllib');
const { NacosConfigClient } = require('nacos');

const positional = [];
const files = {};
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  if (arg.startsWith('--')) {
    files[arg.slice(2)] = fs.readFileSync(process.argv[++i]);
  } else {
    positional.push(arg);
  }
}
const ssl = positional[0].startsWith('https://');
const serverAddr = positional[0].replace(/^https?:\/\//, '');
const [username, password] = positional.slice(1);
const timer = setTimeout(() => { console.log('FAIL timed out'); process.exit(1); }, 60000);

function check(what, got, want) {
  if (got !== want) {
    console.log(`FAIL ${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

async function main() {
  const options = { serverAddr, namespace: '', requestTimeout: 10000, ssl };
  if (username) Object.assign(options, { username, password });
  if (files.ca) {
    options.httpclient = {
      request: (url, args) => urllib.request(url, Object.assign({}, args, {
        ca: files.ca, cert: files.cert, key: files.key, rejectUnauthorized: true,
      })),
    };
  }
  const client = new NacosConfigClient(options);
  await client.ready();
  check('publish', await client.publishSingle('node.json', 'DEFAULT_GROUP', '{"a":1}'), true);
  check('get', await client.getConfig('node.json', 'DEFAULT_GROUP'), '{"a":1}');
  const unicode = '名字: 配置中心 ✓\nemoji: 🌮\n';
  check('publish unicode', await client.publishSingle('node-u.yaml', 'DEFAULT_GROUP', unicode), true);
  check('get unicode', await client.getConfig('node-u.yaml', 'DEFAULT_GROUP'), unicode);

  const seen = [];
  client.subscribe({ dataId: 'node.json', group: 'DEFAULT_GROUP' }, content => seen.push(content));
  await new Promise(r => setTimeout(r, 1500));
  const started = Date.now();
  check('publish change', await client.publishSingle('node.json', 'DEFAULT_GROUP', '{"a":2}'), true);
  while (!seen.includes('{"a":2}') && Date.now() - started < 10000) {
    await new Promise(r => setTimeout(r, 20));
  }
  check('subscriber notified', seen.includes('{"a":2}'), true);
  console.log(`     notify took ${Date.now() - started} ms (SDK polling included)`);

  // Keys in other scripts: the npm client refuses them itself (its
  // checkParameters allows a-zA-Z0-9 and _ - . : only), before any request;
  // docs/sdk-compatibility.md says so. Checked here so a version that lets
  // them through is noticed.
  for (const [dataId, group] of [['订单服务配置.yaml', '支付组'], ['é.yaml', 'DEFAULT_GROUP']]) {
    let refused = null;
    try {
      await client.publishSingle(dataId, group, 'x');
    } catch (err) {
      refused = String(err && err.message);
    }
    check(`sdk refuses ${dataId} itself`, refused !== null && refused.includes('only allow'), true);
  }

  check('remove', await client.remove('node.json', 'DEFAULT_GROUP'), true);
  check('get after remove', await client.getConfig('node.json', 'DEFAULT_GROUP'), null);
  client.close();
  clearTimeout(timer);
  console.log('all ok');
  process.exit(0);
}

main().catch(err => { console.log(`FAIL ${err && err.stack || err}`); process.exit(1); });
