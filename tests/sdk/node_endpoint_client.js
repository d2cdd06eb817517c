// The official Node.js SDK (npm `nacos`) configured with an address server
// (`endpoint`) instead of server addresses: it fetches
// http://ENDPOINT/nacos/serverlist, then publishes and reads through the
// servers listed there.
// Usage: node node_endpoint_client.js 127.0.0.1:PORT DATA_ID
'use strict';
const { NacosConfigClient } = require('nacos');

const [endpoint, dataId] = process.argv.slice(2);
const timer = setTimeout(() => { console.log('FAIL timed out'); process.exit(1); }, 60000);

function check(what, got, want) {
  if (got !== want) {
    console.log(`FAIL ${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

async function main() {
  const client = new NacosConfigClient({ endpoint, namespace: '', requestTimeout: 10000 });
  await client.ready();
  check('publish', await client.publishSingle(dataId, 'DEFAULT_GROUP', 'via endpoint'), true);
  check('get', await client.getConfig(dataId, 'DEFAULT_GROUP'), 'via endpoint');
  client.close();
  clearTimeout(timer);
  console.log('all ok');
}

main().catch((e) => { console.log(`FAIL ${e.stack || e}`); process.exit(1); });
