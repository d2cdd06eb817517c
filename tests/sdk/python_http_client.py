"""Drives Tacos with the official Python SDK's HTTP client (nacos-sdk-python 2.0.x).

Usage: python3 python_http_client.py 127.0.0.1:PORT [USERNAME PASSWORD]
With a username and password the clients log in (for a server that runs
with --open-api-auth).
Exits non-zero with a message on the first mismatch. Bounded in time.
"""
import faulthandler
import os
import sys
import time

import nacos

faulthandler.dump_traceback_later(60, exit=True)
server = sys.argv[1]
credentials = {}
if len(sys.argv) > 3:
    credentials = {"username": sys.argv[2], "password": sys.argv[3]}


def check(what, got, want):
    if got != want:
        print(f"FAIL {what}: got {got!r}, want {want!r}", flush=True)
        os._exit(1)
    print(f"ok   {what}", flush=True)


def wait_for(events, count, seconds=10):
    deadline = time.time() + seconds
    while len(events) < count and time.time() < deadline:
        time.sleep(0.02)
    return len(events) >= count


public = nacos.NacosClient(server, namespace="", **credentials)
check("publish", public.publish_config("py.yaml", "DEFAULT_GROUP", "k: 1"), True)
check("get", public.get_config("py.yaml", "DEFAULT_GROUP", no_snapshot=True), "k: 1")
unicode = "名字: 配置中心 ✓\nemoji: 🌮\n"
check("publish unicode", public.publish_config("py-u.yaml", "DEFAULT_GROUP", unicode), True)
check("get unicode", public.get_config("py-u.yaml", "DEFAULT_GROUP", no_snapshot=True), unicode)

events = []
public.add_config_watcher("py.yaml", "DEFAULT_GROUP", events.append)
time.sleep(1.5)  # the watcher's first long poll is now held
started = time.time()
check("publish change", public.publish_config("py.yaml", "DEFAULT_GROUP", "k: 2"), True)
check("watcher notified", wait_for(events, 1), True)
print(f"     notify took {time.time() - started:.3f}s (SDK polling included)", flush=True)
check("watcher content", events[0]["content"], "k: 2")

check("remove", public.remove_config("py.yaml", "DEFAULT_GROUP"), True)
check("watcher sees remove", wait_for(events, 2), True)
check("get after remove", public.get_config("py.yaml", "DEFAULT_GROUP", no_snapshot=True), None)

# Keys in other scripts (Java Nacos' ParamUtils.isValid): a Chinese dataId
# in a Chinese group, published, read and watched.
cjk_id, cjk_group = "订单服务配置.yaml", "支付组"
check("publish cjk key", public.publish_config(cjk_id, cjk_group, "pay: on"), True)
check("get cjk key", public.get_config(cjk_id, cjk_group, no_snapshot=True), "pay: on")
cjk_events = []
public.add_config_watcher(cjk_id, cjk_group, cjk_events.append)
time.sleep(1.5)
check("publish cjk change", public.publish_config(cjk_id, cjk_group, "pay: off"), True)
check("cjk watcher notified", wait_for(cjk_events, 1), True)
check("cjk watcher content", cjk_events[0]["content"], "pay: off")
check("publish latin-1 key", public.publish_config("é.yaml", "DEFAULT_GROUP", "accent: 1"), True)
check("get latin-1 key", public.get_config("é.yaml", "DEFAULT_GROUP", no_snapshot=True), "accent: 1")

# "public" is the same namespace as "".
named_public = nacos.NacosClient(server, namespace="public", **credentials)
check("public alias", named_public.get_config("py-u.yaml", "DEFAULT_GROUP", no_snapshot=True), unicode)

print("all ok", flush=True)
os._exit(0)
