"""A listener of the official Python SDK's gRPC client (PyPI nacos-sdk-python
3.x, module `v2.nacos`) for the failover tests (tests/failover.rs).

usage: python_grpc_listener.py SERVERS KEY WORKDIR

SERVERS is a comma-separated list of host:HTTP-port (the SDK connects to
HTTP port + 1000 over gRPC). The client listens on KEY in DEFAULT_GROUP and
prints one line per event, flushed at once:

    READY                    the listener is added
    FIRED <content>          the listener fired with this content
    LISTEN TASK ENDED <why>  the SDK's own listen task ended: from now on
                             this client hears nothing (an SDK flaw, see
                             docs/grpc.md); printed once

It runs until its stdin closes (the test's end), so it never outlives the
test.
"""
import asyncio
import logging
import os
import sys

from v2.nacos import ClientConfigBuilder, GRPCConfig, NacosConfigService


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main():
    servers, key, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    config = (ClientConfigBuilder()
              .server_address(servers)
              .log_level(logging.INFO)
              .log_dir(os.path.join(workdir, "logs"))
              .cache_dir(os.path.join(workdir, "cache"))
              .grpc_config(GRPCConfig(grpc_timeout=3000))
              .build())
    client = await NacosConfigService.create_config_service(config)

    async def listener(tenant, group, data_id, content):
        # Content is one line in these tests.
        say(f"FIRED {content}")

    await client.add_listener(key, "DEFAULT_GROUP", listener)
    say("READY")

    async def watch_listen_task():
        task = client.grpc_client_proxy.listen_task
        try:
            await asyncio.shield(task)
            why = "returned"
        except BaseException as e:  # CancelledError is a BaseException
            why = type(e).__name__
        say(f"LISTEN TASK ENDED {why}")

    watcher = asyncio.create_task(watch_listen_task())
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    watcher.cancel()
    try:
        await asyncio.wait_for(client.shutdown(), 10)
    except BaseException:
        pass


asyncio.run(main())
