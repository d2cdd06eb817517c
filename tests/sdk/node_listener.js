// A listener of the official Node.js SDK (npm `nacos`, HTTP long polling)
// for the failover tests (tests/failover.rs).
// Usage: node node_listener.js HOST:PORT,HOST:PORT,... KEY
// The client polls one server of the list and moves to the next when a
// request fails. It prints one line per event, flushed at once:
//   READY              the subscription is made
//   FIRED <content>    the subscriber was called with this content
// It runs until its stdin closes (the test's end).
'use strict';
const { NacosConfigClient } = require('nacos');

const [serverAddr, key] = process.argv.slice(2);

async function main() {
  const client = new NacosConfigClient({ serverAddr, namespace: '', requestTimeout: 10000 });
  await client.ready();
  client.subscribe({ dataId: key, group: 'DEFAULT_GROUP' }, content => {
    process.stdout.write(`FIRED ${content}\n`);
  });
  process.stdout.write('READY\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    client.close();
    process.exit(0);
  });
}

main().catch(e => {
  process.stdout.write(`ERROR ${e && e.stack}\n`);
  process.exit(1);
});
