package main

// The modes that run alongside the test: `cache` (the test stops every
// server in the middle) and `listen` (tests/failover.rs and the SIGTERM
// case of tests/sdk_go.rs read its lines).

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/clients/config_client"
	"github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
)

var stdin = bufio.NewReader(os.Stdin)

// wait prints `WAIT what` and blocks until the test answers with a line.
func wait(what string) error {
	say("WAIT %s", what)
	_, err := stdin.ReadString('\n')
	if err != nil {
		return fmt.Errorf("stdin closed while waiting for %s: %v", what, err)
	}
	return nil
}

// runCache: `cache -server H:P[:G] -workdir DIR`.
//
// A client with ClientConfig.CacheDir publishes and reads a key (the
// query writes the SDK's snapshot, CacheDir/config/dataId@@group@@tenant),
// then the driver prints `WAIT stop-all` and waits for a line on stdin:
// the test stops every server first. Then, with no server up:
//
//   - the same client's GetConfig answers the last content (the query
//     fails, the SDK falls back to its snapshot: DisableUseSnapShot off);
//   - a new client on the same CacheDir does too;
//   - a client with DisableUseSnapShot answers an error (so the content
//     above came from the cache, not from a server);
//   - a key never read has no snapshot: an error.
//
// (NotLoadCacheAtStart is a naming-client setting; the config client
// reads its snapshot only when a query fails, and a `failover` file
// beside it, when present, before asking any server.)
func runCache(args []string) int {
	fs := flag.NewFlagSet("cache", flag.ExitOnError)
	server := fs.String("server", "", "host:port[:grpcPort],...")
	workdir := fs.String("workdir", "", "dir for the SDK's cache and logs")
	_ = fs.Parse(args)
	servers, err := parseServers(*server)
	if err != nil || *workdir == "" {
		fmt.Fprintf(os.Stderr, "cache: %v (and -workdir is required)\n", err)
		return 2
	}
	t := &tally{}
	mk := func(cacheName string, edit func(*constant.ClientConfig)) (config_client.IConfigClient, error) {
		cc := baseClientConfig(*workdir, cacheName)
		cc.TimeoutMs = 3000
		if edit != nil {
			edit(&cc)
		}
		return newClient(servers, cc)
	}
	id := fmt.Sprintf("go%d-cached.properties", time.Now().UnixNano()%1_000_000_000)
	content := "cached=yes\nfrom=the last successful read"
	c, err := mk("cache", nil)
	if err != nil {
		say("FAIL cache: %v", err)
		return 1
	}
	ok := true
	t.run("cache-read-while-up", func() error {
		if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: "cached=no"}); err != nil {
			return err
		}
		if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: content}); err != nil {
			return err
		}
		if err := get(c, id, group, content); err != nil {
			return err
		}
		snapshot := filepath.Join(*workdir, "cache", "cache", "config", id+"@@"+group+"@@")
		raw, err := os.ReadFile(snapshot)
		if err != nil {
			return fmt.Errorf("no snapshot after a read: %v", err)
		}
		if string(raw) != content {
			return fmt.Errorf("snapshot holds %q, expected %q", raw, content)
		}
		return nil
	})
	if t.failed > 0 {
		ok = false
	}
	if ok {
		if err := wait("stop-all"); err != nil {
			say("FAIL cache: %v", err)
			return 1
		}
		t.run("cache-same-client-servers-down", func() error {
			start := time.Now()
			err := get(c, id, group, content)
			say("time GetConfig from the cache with every server down: %v", time.Since(start).Round(time.Millisecond))
			return err
		})
		t.run("cache-new-client-servers-down", func() error {
			fresh, err := mk("cache", nil)
			if err != nil {
				return err
			}
			defer fresh.CloseClient()
			return get(fresh, id, group, content)
		})
		t.run("cache-disabled-servers-down", func() error {
			strict, err := mk("cache", func(cc *constant.ClientConfig) { cc.DisableUseSnapShot = true })
			if err != nil {
				return err
			}
			defer strict.CloseClient()
			got, err := strict.GetConfig(vo.ConfigParam{DataId: id, Group: group})
			if err == nil {
				return fmt.Errorf("with DisableUseSnapShot and no server, GetConfig answered %q, expected an error", got)
			}
			return nil
		})
		t.run("cache-unknown-key-servers-down", func() error {
			got, err := c.GetConfig(vo.ConfigParam{DataId: "never-read-" + id, Group: group})
			if err == nil {
				return fmt.Errorf("a key never read answered %q with no server, expected an error", got)
			}
			return nil
		})
	}
	c.CloseClient()
	return t.finish()
}

// runListen: `listen SERVERS KEY WORKDIR`, the interface of
// tests/sdk/python_grpc_listener.py for tests/failover.rs.
//
// SERVERS is a comma-separated list of host:port (HTTP; the SDK uses
// port + 1000 for gRPC) or host:port:grpcPort. The client reads KEY in
// DEFAULT_GROUP once (so it is connected, and its cache holds the current
// content: the listener then fires for changes only), adds its listener
// and prints, one line each, flushed at once:
//
//	READY              the listener is added
//	FIRED <content>    the listener fired with this content ("" when the
//	                   config was removed)
//
// It runs until its stdin closes.
func runListen(args []string) int {
	if len(args) != 3 {
		usage()
	}
	servers, err := parseServers(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		return 2
	}
	key, workdir := args[1], args[2]
	cc := baseClientConfig(workdir, "listen")
	cc.TimeoutMs = 3000
	c, err := newClient(servers, cc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen: making the client:", err)
		return 1
	}
	if _, err := c.GetConfig(vo.ConfigParam{DataId: key, Group: group}); err != nil {
		// Not fatal: the listener still works once a server answers.
		fmt.Fprintln(os.Stderr, "listen: first read:", err)
	}
	err = c.ListenConfig(vo.ConfigParam{DataId: key, Group: group, OnChange: func(_, _, _, data string) {
		// Content is one line in these tests.
		say("FIRED %s", strings.ReplaceAll(data, "\n", "\\n"))
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen: ListenConfig:", err)
		return 1
	}
	say("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	c.CloseClient()
	return 0
}
