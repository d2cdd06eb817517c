"""Drives Tacos over TLS with the official Python SDK's gRPC client (PyPI
nacos-sdk-python 3.x, module `v2.nacos`), for tests/sdk_python.rs.

usage: python_grpc_tls.py https://127.0.0.1:HTTP GRPC_PORT CA CERT KEY WORKDIR [USER PASSWORD]

The SDK's TLS switch is `ClientConfigBuilder.tls_config(TLSConfig(enabled=True,
ca_file=..., cert_file=..., key_file=...))`: with it the gRPC channel is
`grpc.aio.secure_channel` with the CA as its roots and CERT/KEY as its client
identity (the SDK opens all three files unconditionally, so a client
certificate is given even when the server does not ask for one), and its
HTTP calls (the login) go through aiohttp with an SSL context of CA and
CERT/KEY. The server address carries `https://` because the login URL is
the address as given (`http://` is prepended only when no scheme is
there); the gRPC address is taken from it (host, and port + offset).

Publishes, reads, listens (the listener must hear a change), removes.
Prints `ok <what>` per step and `all ok` at the end; exits non-zero with
`FAIL <what>` on the first mismatch. Bounded in time.
"""
import asyncio
import faulthandler
import logging
import os
import sys

from v2.nacos import ClientConfigBuilder, ConfigParam, GRPCConfig, NacosConfigService, TLSConfig

faulthandler.dump_traceback_later(80, exit=True)


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def check(what, got, want):
    if got != want:
        say(f"FAIL {what}: got {got!r}, want {want!r}")
        os._exit(1)
    say(f"ok   {what}")


async def main():
    server, grpc_port, ca, cert, key, workdir = sys.argv[1:7]
    http_port = int(server.rsplit(":", 1)[1])
    builder = (ClientConfigBuilder()
               .server_address(server)
               .log_level(logging.INFO)
               .log_dir(os.path.join(workdir, "logs"))
               .cache_dir(os.path.join(workdir, "cache"))
               # The SDK's gRPC port is the HTTP port + port_offset.
               .grpc_config(GRPCConfig(grpc_timeout=5000, port_offset=int(grpc_port) - http_port))
               .tls_config(TLSConfig(enabled=True, ca_file=ca, cert_file=cert, key_file=key)))
    if len(sys.argv) > 8:
        builder = builder.username(sys.argv[7]).password(sys.argv[8])
    client = await asyncio.wait_for(NacosConfigService.create_config_service(builder.build()), 30)
    check("server health over TLS", await client.server_health(), True)

    key_id, group = "py-tls.yaml", "DEFAULT_GROUP"
    check("publish", await client.publish_config(ConfigParam(data_id=key_id, group=group, content="tls: 1")), True)
    check("get", await client.get_config(ConfigParam(data_id=key_id, group=group)), "tls: 1")

    heard = asyncio.Queue()

    async def listener(tenant, group_, data_id, content):
        await heard.put(content)

    await client.add_listener(key_id, group, listener)
    check("publish change", await client.publish_config(ConfigParam(data_id=key_id, group=group, content="tls: 2")), True)
    # The listener may first hear the value it started from; wait for the change.
    got = None
    try:
        while got != "tls: 2":
            got = await asyncio.wait_for(heard.get(), 15)
    except asyncio.TimeoutError:
        pass
    check("listener notified", got, "tls: 2")

    check("remove", await client.remove_config(ConfigParam(data_id=key_id, group=group)), True)
    say("all ok")
    try:
        await asyncio.wait_for(client.shutdown(), 10)
    except BaseException:
        pass
    os._exit(0)


asyncio.run(main())
