// Command tacos-go-sdk drives the official Go SDK
// (github.com/nacos-group/nacos-sdk-go/v2) against a running Tacos, for
// tests/sdk_go.rs and tests/failover.rs.
//
// Subcommands:
//
//	cases  -server H:P[:G][,...] [flags]   run the config cases, one line each
//	cache  -server H:P[:G] -workdir DIR    the cache dir while every server is down
//	listen SERVERS KEY WORKDIR             a listener for tests/failover.rs
//
// cases and cache print `ok <case>` or `FAIL <case>: why` per case
// and end with `all ok` when every case passed (exit status 0), else with
// `N failed` (exit status 1). cache talks with the test on stdin
// and stdout: a line `WAIT <what>` asks the test to do something and answer
// with a line on stdin. See each subcommand's doc in its file.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/clients"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/config_client"
	"github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var code int
	switch os.Args[1] {
	case "cases":
		code = runCases(os.Args[2:])
	case "cache":
		code = runCache(os.Args[2:])
	case "listen":
		code = runListen(os.Args[2:])
	default:
		usage()
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  tacos-go-sdk cases  -server H:P[:G][,...] [-dead H:P] [-endpoint H:P] [-admin-user U -admin-password P]
                      [-user U -password P] [-only a,b]
                      [-tls-ca CA [-tls-cert CERT -tls-key KEY]] -workdir DIR
  tacos-go-sdk cache  -server H:P[:G] -workdir DIR
  tacos-go-sdk listen SERVERS KEY WORKDIR`)
	os.Exit(2)
}

// say prints one line to stdout at once (the tests read it line by line).
var sayMu sync.Mutex

func say(format string, args ...any) {
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// parseServers reads `host:port[:grpcPort],...` (the gRPC port defaults to
// port + 1000, as in the SDK).
func parseServers(list string) ([]constant.ServerConfig, error) {
	var out []constant.ServerConfig
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("bad server %q: want host:port[:grpcPort]", item)
		}
		port, err := strconv.ParseUint(parts[1], 10, 16)
		if err != nil {
			return nil, fmt.Errorf("bad port in %q: %v", item, err)
		}
		var opts []constant.ServerOption
		if len(parts) == 3 {
			grpc, err := strconv.ParseUint(parts[2], 10, 16)
			if err != nil {
				return nil, fmt.Errorf("bad gRPC port in %q: %v", item, err)
			}
			opts = append(opts, constant.WithGrpcPort(grpc))
		}
		out = append(out, *constant.NewServerConfig(parts[0], port, opts...))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no server in %q", list)
	}
	return out, nil
}

// baseClientConfig is the ClientConfig every client of the driver starts
// from: its own cache dir (`name`), one log dir, a 5 s request timeout.
func baseClientConfig(workdir, name string) constant.ClientConfig {
	sdkLog = workdir + "/logs/nacos-sdk.log"
	return *constant.NewClientConfig(
		constant.WithTimeoutMs(5000),
		constant.WithNotLoadCacheAtStart(true),
		constant.WithCacheDir(workdir+"/cache/"+name),
		constant.WithLogDir(workdir+"/logs"),
		constant.WithLogLevel("info"),
	)
}

// newClient makes a config client of the SDK.
func newClient(servers []constant.ServerConfig, cc constant.ClientConfig) (config_client.IConfigClient, error) {
	return clients.NewConfigClient(vo.NacosClientParam{
		ClientConfig:  &cc,
		ServerConfigs: servers,
	})
}

// event is one call of a listener.
type event struct {
	namespace, group, dataID, content string
	at                                time.Time
}

// recorder is a listener that keeps every call, in order.
type recorder struct {
	name   string
	dataID string
	events chan event
	mu     sync.Mutex
	all    []event
}

func newRecorder(name, dataID string) *recorder {
	return &recorder{name: name, dataID: dataID, events: make(chan event, 100)}
}

// sdkLog is the SDK's log file (every client of the process logs there).
var sdkLog string

// dumpSDKLog copies the SDK's log lines that name dataID to stderr, for a
// failure's diagnosis.
func dumpSDKLog(dataID string) {
	raw, err := os.ReadFile(sdkLog)
	if err != nil {
		fmt.Fprintf(os.Stderr, "no SDK log at %s: %v\n", sdkLog, err)
		return
	}
	fmt.Fprintf(os.Stderr, "--- SDK log lines naming %s:\n", dataID)
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, dataID) {
			fmt.Fprintln(os.Stderr, line)
		}
	}
}

func (r *recorder) listener(namespace, group, dataID, data string) {
	ev := event{namespace, group, dataID, data, time.Now()}
	r.mu.Lock()
	r.all = append(r.all, ev)
	r.mu.Unlock()
	r.events <- ev
}

// next waits for the listener's next call, which must carry `want`.
func (r *recorder) next(want string, within time.Duration) (event, error) {
	select {
	case ev := <-r.events:
		if ev.content != want {
			return ev, fmt.Errorf("%s: listener fired with %q, expected %q", r.name, ev.content, want)
		}
		time.Sleep(FollowUpPause)
		return ev, nil
	case <-time.After(within):
		dumpSDKLog(r.dataID)
		return event{}, fmt.Errorf("%s: listener did not fire with %q within %v (the SDK's log lines about the key are on stderr)", r.name, want, within)
	}
}

// contents lists what the listener was called with so far.
func (r *recorder) contents() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.all))
	for i, ev := range r.all {
		out[i] = ev.content
	}
	return out
}

// expectExactly checks the listener was called with `want`, in order, and
// nothing else (after `settle`, so a late extra call is seen).
func (r *recorder) expectExactly(settle time.Duration, want ...string) error {
	time.Sleep(settle)
	got := r.contents()
	if len(got) != len(want) {
		return fmt.Errorf("%s: listener calls %q, expected exactly %q", r.name, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%s: listener calls %q, expected exactly %q", r.name, got, want)
		}
	}
	return nil
}

// NotifyWait bounds how long a listener may take to hear a change: a push
// reaches it at once; the SDK's own listen loop runs every 5 s.
const NotifyWait = 20 * time.Second

// FollowUpPause is how long the driver lets the SDK be after its listener
// fired, before it changes a config again. After a change the SDK sends
// one more batch listen at once; a change pushed while that (or any) batch
// listen is on its way is lost to the SDK 2.3.2 until its 5-minute full
// sync when the answer predates the change: executeConfigListen marks every
// key the answer does not name as in step with the server
// (isSyncWithServer = true) from a fresh read of its cache map, overwriting
// the false that ConfigChangeNotifyRequestHandler set for the push. (The
// Java client keeps a receiveNotifyChanged flag per key for exactly this.)
// The pause keeps the test about the server, not that race.
const FollowUpPause = time.Second

// Settle is how long the driver waits for extra listener calls before it
// counts them: longer than one turn of the SDK's 5 s listen loop.
const Settle = 6 * time.Second

// tally runs cases and counts failures.
type tally struct {
	failed int
}

func (t *tally) run(name string, f func() error) {
	start := time.Now()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return f()
	}()
	if err != nil {
		t.failed++
		say("FAIL %s: %v", name, err)
		return
	}
	say("ok %s (%v)", name, time.Since(start).Round(time.Millisecond))
}

func (t *tally) finish() int {
	if t.failed == 0 {
		say("all ok")
		return 0
	}
	say("%d failed", t.failed)
	return 1
}
