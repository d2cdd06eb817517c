package main

// `cases`: the config cases against one server (plus a dead address and
// the address server for the cases about server lists).

import (
	"crypto/md5"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/clients/config_client"
	"github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/util"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
)

const group = "DEFAULT_GROUP"

// env is what every case gets.
type env struct {
	servers  []constant.ServerConfig
	dead     []constant.ServerConfig
	endpoint string
	user     string // SDK credentials ("" without --open-api-auth)
	password string
	admin    *api                // HTTP checks, logged in as the admin
	tls      *constant.TLSConfig // every client's TLSCfg (-tls-ca), else nil
	workdir  string
	prefix   string // unique per run: every key starts with it
	clients  []config_client.IConfigClient
	// checks run after one shared settle time, before the results print.
	later []laterCheck
}

type laterCheck struct {
	caseName string
	check    func() error
}

// client makes a config client with the run's servers and credentials;
// edit adjusts its ClientConfig.
func (e *env) client(name string, edit func(*constant.ClientConfig)) config_client.IConfigClient {
	cc := baseClientConfig(e.workdir, name)
	cc.Username = e.user
	cc.Password = e.password
	if e.tls != nil {
		cc.TLSCfg = *e.tls
	}
	if edit != nil {
		edit(&cc)
	}
	servers := e.servers
	if cc.Endpoint != "" {
		servers = nil
	}
	c, err := newClient(servers, cc)
	if err != nil {
		panic(fmt.Sprintf("making the client %s: %v", name, err))
	}
	e.clients = append(e.clients, c)
	return c
}

func (e *env) key(name string) string {
	return e.prefix + "-" + name
}

// publish publishes through the SDK and requires success.
func publish(c config_client.IConfigClient, p vo.ConfigParam) error {
	ok, err := c.PublishConfig(p)
	if err != nil || !ok {
		return fmt.Errorf("PublishConfig %s/%s: ok=%v err=%v", p.Group, p.DataId, ok, err)
	}
	return nil
}

// get reads through the SDK and requires `want`.
func get(c config_client.IConfigClient, dataID, grp, want string) error {
	got, err := c.GetConfig(vo.ConfigParam{DataId: dataID, Group: grp})
	if err != nil {
		return fmt.Errorf("GetConfig %s/%s: %v", grp, dataID, err)
	}
	if got != want {
		return fmt.Errorf("GetConfig %s/%s = %q, expected %q", grp, dataID, got, want)
	}
	return nil
}

// getPatiently is get for a client without the snapshot fallback, waiting
// out the SDK's own limit of 5 queries a second per key (process-wide,
// clients/config_client/limiter.go), which a client retrying a failed query
// reaches.
func getPatiently(c config_client.IConfigClient, dataID, grp, want string) error {
	for attempt := 0; ; attempt++ {
		err := get(c, dataID, grp, want)
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), "ConfigQueryRequest is limited") {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// listen adds a recorder as the listener of a key.
func listen(c config_client.IConfigClient, name, dataID, grp string) (*recorder, error) {
	rec := newRecorder(name, dataID)
	err := c.ListenConfig(vo.ConfigParam{DataId: dataID, Group: grp, OnChange: rec.listener})
	if err != nil {
		return nil, fmt.Errorf("ListenConfig %s/%s: %v", grp, dataID, err)
	}
	return rec, nil
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// httpContent checks the server holds `want` for a key (HTTP v1 GET),
// returning the answer's headers.
func (e *env) httpContent(dataID, grp, tenant, want string) (map[string][]string, error) {
	status, body, headers, err := e.admin.getConfig(dataID, grp, tenant, nil)
	if err != nil {
		return nil, err
	}
	if status != 200 || body != want {
		return nil, fmt.Errorf("HTTP GET %s/%s (tenant %q): %d %q, expected 200 %q", grp, dataID, tenant, status, body, want)
	}
	if md5 := headers.Get("Content-MD5"); md5 != md5Hex(want) {
		return nil, fmt.Errorf("HTTP GET %s/%s: Content-MD5 %q, expected %q", grp, dataID, md5, md5Hex(want))
	}
	return headers, nil
}

type caseFn func(e *env, name string) error

var allCases = []struct {
	name string
	run  caseFn
}{
	{"publish-get", casePublishGet},
	{"listen", caseListen},
	{"remove", caseRemove},
	{"cas", caseCas},
	{"namespace", caseNamespace},
	{"config-type", caseConfigType},
	{"search", caseSearch},
	{"several-servers", caseSeveralServers},
	{"endpoint", caseEndpoint},
	{"gray-tag", caseGrayTag},
	{"gray-beta", caseGrayBeta},
	{"encrypted-data-key", caseEncryptedDataKey},
	{"auth-refused", caseAuthRefused},
	{"non-ascii-keys", caseNonASCII},
}

func runCases(args []string) int {
	fs := flag.NewFlagSet("cases", flag.ExitOnError)
	server := fs.String("server", "", "host:port[:grpcPort],... of live servers")
	dead := fs.String("dead", "", "host:port[:grpcPort] where no server listens")
	endpoint := fs.String("endpoint", "", "host:port of the address server (GET /nacos/serverlist)")
	user := fs.String("user", "", "SDK username (servers with --open-api-auth)")
	password := fs.String("password", "", "SDK password")
	adminUser := fs.String("admin-user", "nacos", "admin for the HTTP checks")
	adminPassword := fs.String("admin-password", "", "its password")
	only := fs.String("only", "", "comma-separated cases to run (default: all)")
	skip := fs.String("skip", "", "comma-separated cases not to run")
	workdir := fs.String("workdir", "", "dir for the SDK's cache and logs")
	tlsCA := fs.String("tls-ca", "", "over TLS: the CA of the server's certificate (tls.go)")
	tlsCert := fs.String("tls-cert", "", "over TLS: the client certificate")
	tlsKey := fs.String("tls-key", "", "over TLS: its key")
	_ = fs.Parse(args)
	servers, err := parseServers(*server)
	if err != nil || *workdir == "" {
		fmt.Fprintf(os.Stderr, "cases: %v (and -workdir is required)\n", err)
		return 2
	}
	e := &env{
		servers:  servers,
		endpoint: *endpoint,
		user:     *user,
		password: *password,
		admin:    newAPI(fmt.Sprintf("%s:%d", servers[0].IpAddr, servers[0].Port), *adminUser, *adminPassword),
		workdir:  *workdir,
		prefix:   fmt.Sprintf("go%d", time.Now().UnixNano()%1_000_000_000),
	}
	if *tlsCA != "" {
		files := tlsFiles{*tlsCA, *tlsCert, *tlsKey}
		if err := files.useHTTPS(e.servers, e.admin); err != nil {
			fmt.Fprintf(os.Stderr, "cases: %v\n", err)
			return 2
		}
		cfg := files.sdkConfig()
		e.tls = &cfg
	}
	if *dead != "" {
		if e.dead, err = parseServers(*dead); err != nil {
			fmt.Fprintf(os.Stderr, "cases: %v\n", err)
			return 2
		}
	}
	selected := func(name string) bool {
		if *only != "" && !contains(strings.Split(*only, ","), name) {
			return false
		}
		return !contains(strings.Split(*skip, ","), name)
	}
	// Log in first: a case that tries a wrong password must not be the
	// reason the admin cannot (the server counts failed logins).
	if err := e.admin.login(); err != nil {
		say("FAIL login: %v", err)
		return 1
	}
	t := &tally{}
	type result struct {
		name    string
		err     error
		elapsed time.Duration
	}
	var results []result
	for _, c := range allCases {
		if !selected(c.name) {
			continue
		}
		start := time.Now()
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return c.run(e, c.name)
		}()
		fmt.Fprintf(os.Stderr, "case %s done: %v\n", c.name, err)
		results = append(results, result{c.name, err, time.Since(start)})
	}
	// One settle for every case's "and nothing else" check.
	if len(e.later) > 0 {
		time.Sleep(Settle)
	}
	for _, l := range e.later {
		if err := l.check(); err != nil {
			for i := range results {
				if results[i].name == l.caseName && results[i].err == nil {
					results[i].err = err
				}
			}
		}
	}
	for _, r := range results {
		if r.err != nil {
			t.failed++
			say("FAIL %s: %v", r.name, r.err)
		} else {
			say("ok %s (%v)", r.name, r.elapsed.Round(time.Millisecond))
		}
	}
	for _, c := range e.clients {
		c.CloseClient()
	}
	return t.finish()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

// exactly registers a check, made after the settle time, that a listener
// heard `want` and nothing else.
func (e *env) exactly(caseName string, rec *recorder, want ...string) {
	e.later = append(e.later, laterCheck{caseName, func() error {
		return rec.expectExactly(0, want...)
	}})
}

// ---- cases ----------------------------------------------------------------

// publish-get: PublishConfig, GetConfig, an update, and the server holds
// what the SDK wrote (HTTP content and md5).
func casePublishGet(e *env, name string) error {
	c := e.client(name, nil)
	id := e.key("app.properties")
	first := "greeting=hello from Go\nport=8080"
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: first}); err != nil {
		return err
	}
	if err := get(c, id, group, first); err != nil {
		return err
	}
	if _, err := e.httpContent(id, group, "", first); err != nil {
		return err
	}
	second := "greeting=hello again\nport=8081"
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: second}); err != nil {
		return err
	}
	if err := get(c, id, group, second); err != nil {
		return err
	}
	_, err := e.httpContent(id, group, "", second)
	return err
}

// listen: a listener on a key hears each of three changes exactly once,
// with its content (checked again after the settle time: nothing more).
func caseListen(e *env, name string) error {
	writer := e.client(name+"-writer", nil)
	reader := e.client(name+"-reader", nil)
	id := e.key("listened.yaml")
	rec, err := listen(reader, name, id, group)
	if err != nil {
		return err
	}
	var want []string
	for i := 1; i <= 3; i++ {
		content := fmt.Sprintf("version: %d\nchanged-by: go", i)
		published := time.Now()
		if err := publish(writer, vo.ConfigParam{DataId: id, Group: group, Content: content}); err != nil {
			return err
		}
		ev, err := rec.next(content, NotifyWait)
		if err != nil {
			return err
		}
		if ev.dataID != id || ev.group != group || ev.namespace != "" {
			return fmt.Errorf("listener called for %q/%q/%q, expected \"\"/%q/%q", ev.namespace, ev.group, ev.dataID, group, id)
		}
		say("time listen change %d: publish to listener %v", i, ev.at.Sub(published).Round(time.Millisecond))
		want = append(want, content)
	}
	e.exactly(name, rec, want...)
	return nil
}

// remove: DeleteConfig answers true; the listener is called once with ""
// (the Go SDK's way of saying the config is gone); GetConfig then answers
// "" without an error (the SDK turns the server's not-found into that), and
// the server answers 404.
func caseRemove(e *env, name string) error {
	writer := e.client(name+"-writer", nil)
	reader := e.client(name+"-reader", nil)
	id := e.key("removed.properties")
	content := "to.be.removed=true"
	if err := publish(writer, vo.ConfigParam{DataId: id, Group: group, Content: content}); err != nil {
		return err
	}
	if err := get(reader, id, group, content); err != nil {
		return err
	}
	rec, err := listen(reader, name, id, group)
	if err != nil {
		return err
	}
	ok, err := writer.DeleteConfig(vo.ConfigParam{DataId: id, Group: group})
	if err != nil || !ok {
		return fmt.Errorf("DeleteConfig: ok=%v err=%v", ok, err)
	}
	if _, err := rec.next("", NotifyWait); err != nil {
		return err
	}
	if err := get(reader, id, group, ""); err != nil {
		return err
	}
	status, body, _, err := e.admin.getConfig(id, group, "", nil)
	if err != nil {
		return err
	}
	if status != 404 {
		return fmt.Errorf("HTTP GET after delete: %d %q, expected 404", status, body)
	}
	// Deleting what is not there succeeds too (as Nacos).
	ok, err = writer.DeleteConfig(vo.ConfigParam{DataId: id, Group: group})
	if err != nil || !ok {
		return fmt.Errorf("DeleteConfig of a missing config: ok=%v err=%v", ok, err)
	}
	e.exactly(name, rec, "")
	return nil
}

// cas: PublishConfig with CasMd5: a wrong md5 is refused and changes
// nothing, the right one succeeds, and the md5 that was right before is
// refused after the change.
func caseCas(e *env, name string) error {
	c := e.client(name, nil)
	id := e.key("cas.properties")
	v1 := "cas=1"
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: v1}); err != nil {
		return err
	}
	wrong := md5Hex("not the content")
	ok, err := c.PublishConfig(vo.ConfigParam{DataId: id, Group: group, Content: "cas=wrong", CasMd5: wrong})
	if ok || err == nil {
		return fmt.Errorf("CAS publish with a wrong md5: ok=%v err=%v, expected a refusal", ok, err)
	}
	if !strings.Contains(err.Error(), "Cas publish fail") {
		return fmt.Errorf("CAS refusal says %q, expected Nacos' \"Cas publish fail, server md5 may have changed.\"", err)
	}
	say("info cas refusal: %v", err)
	if err := get(c, id, group, v1); err != nil {
		return fmt.Errorf("after the refused CAS: %v", err)
	}
	v2 := "cas=2"
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: v2, CasMd5: md5Hex(v1)}); err != nil {
		return fmt.Errorf("CAS publish with the right md5: %v", err)
	}
	if err := get(c, id, group, v2); err != nil {
		return err
	}
	ok, err = c.PublishConfig(vo.ConfigParam{DataId: id, Group: group, Content: "cas=3", CasMd5: md5Hex(v1)})
	if ok || err == nil {
		return fmt.Errorf("CAS publish with the stale md5: ok=%v err=%v, expected a refusal", ok, err)
	}
	_, err = e.httpContent(id, group, "", v2)
	return err
}

// namespace: a namespace made through the HTTP API; a client in it and a
// client in public publish the same key; each reads its own, a listener in
// the namespace hears only the namespace's change, and the namespace
// counts one config.
func caseNamespace(e *env, name string) error {
	ns := e.prefix + "-ns"
	if err := e.admin.createNamespace(ns, "Go SDK "+ns); err != nil {
		return err
	}
	inNs := func(cc *constant.ClientConfig) { cc.NamespaceId = ns }
	nsWriter := e.client(name+"-ns-writer", inNs)
	nsReader := e.client(name+"-ns-reader", inNs)
	public := e.client(name+"-public", nil)
	id := e.key("shared-name.properties")
	nsV1, pubV1 := "where=namespace\nv=1", "where=public\nv=1"
	if err := publish(nsWriter, vo.ConfigParam{DataId: id, Group: group, Content: nsV1}); err != nil {
		return err
	}
	if err := publish(public, vo.ConfigParam{DataId: id, Group: group, Content: pubV1}); err != nil {
		return err
	}
	if err := get(nsReader, id, group, nsV1); err != nil {
		return err
	}
	if err := get(public, id, group, pubV1); err != nil {
		return err
	}
	if _, err := e.httpContent(id, group, ns, nsV1); err != nil {
		return err
	}
	if _, err := e.httpContent(id, group, "", pubV1); err != nil {
		return err
	}
	rec, err := listen(nsReader, name, id, group)
	if err != nil {
		return err
	}
	// A change in public first: the namespace's listener must not hear it
	// (if it did, the next call below would carry it).
	if err := publish(public, vo.ConfigParam{DataId: id, Group: group, Content: "where=public\nv=2"}); err != nil {
		return err
	}
	nsV2 := "where=namespace\nv=2"
	if err := publish(nsWriter, vo.ConfigParam{DataId: id, Group: group, Content: nsV2}); err != nil {
		return err
	}
	ev, err := rec.next(nsV2, NotifyWait)
	if err != nil {
		return err
	}
	if ev.namespace != ns {
		return fmt.Errorf("listener called with namespace %q, expected %q", ev.namespace, ns)
	}
	count, err := e.admin.namespaceConfigCount(ns)
	if err != nil {
		return err
	}
	if count != 1 {
		return fmt.Errorf("namespace %s counts %d configs, expected 1", ns, count)
	}
	e.exactly(name, rec, nsV2)
	return nil
}

// config-type: PublishConfig with Type "yaml" (and "json"); the server
// answers it as Config-Type.
func caseConfigType(e *env, name string) error {
	c := e.client(name, nil)
	for _, tc := range []struct{ id, typ, content string }{
		{e.key("typed.yaml"), "yaml", "server:\n  port: 8080\nlist: [a, b]\n"},
		{e.key("typed.json"), "json", `{"port": 8080}`},
	} {
		if err := publish(c, vo.ConfigParam{DataId: tc.id, Group: group, Content: tc.content, Type: tc.typ}); err != nil {
			return err
		}
		if err := get(c, tc.id, group, tc.content); err != nil {
			return err
		}
		headers, err := e.httpContent(tc.id, group, "", tc.content)
		if err != nil {
			return err
		}
		if got := first(headers["Config-Type"]); got != tc.typ {
			return fmt.Errorf("%s: Config-Type %q, expected %q", tc.id, got, tc.typ)
		}
	}
	return nil
}

func first(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}

// search: SearchConfig (the SDK's HTTP search), accurate and blur.
func caseSearch(e *env, name string) error {
	c := e.client(name, nil)
	base := e.key("search")
	contents := map[string]string{base + "-a.properties": "s=a", base + "-b.properties": "s=b"}
	for id, content := range contents {
		if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: content}); err != nil {
			return err
		}
	}
	page, err := c.SearchConfig(vo.SearchConfigParam{Search: "accurate", DataId: base + "-a.properties", Group: group, PageNo: 1, PageSize: 10})
	if err != nil {
		return fmt.Errorf("SearchConfig accurate: %v", err)
	}
	if page.TotalCount != 1 || len(page.PageItems) != 1 || page.PageItems[0].Content != "s=a" {
		return fmt.Errorf("SearchConfig accurate: %+v, expected the one config", page)
	}
	page, err = c.SearchConfig(vo.SearchConfigParam{Search: "blur", DataId: base + "-*", Group: group, PageNo: 1, PageSize: 10})
	if err != nil {
		return fmt.Errorf("SearchConfig blur: %v", err)
	}
	if page.TotalCount != 2 || len(page.PageItems) != 2 {
		return fmt.Errorf("SearchConfig blur: %+v, expected 2 configs", page)
	}
	for _, item := range page.PageItems {
		if contents[item.DataId] != item.Content || item.Md5 != md5Hex(item.Content) {
			return fmt.Errorf("SearchConfig blur item %+v does not match what was published", item)
		}
	}
	return nil
}

// several-servers: two ServerConfigs, one a port where nothing listens,
// in either order: publish, get and listen work.
func caseSeveralServers(e *env, name string) error {
	if len(e.dead) == 0 {
		return fmt.Errorf("needs -dead")
	}
	orders := [][]constant.ServerConfig{
		{e.dead[0], e.servers[0]},
		{e.servers[0], e.dead[0]},
	}
	for i, order := range orders {
		cc := baseClientConfig(e.workdir, fmt.Sprintf("%s-%d", name, i))
		cc.Username, cc.Password = e.user, e.password
		c, err := newClient(order, cc)
		if err != nil {
			return err
		}
		e.clients = append(e.clients, c)
		id := e.key(fmt.Sprintf("two-servers-%d.properties", i))
		if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: "v=1"}); err != nil {
			return fmt.Errorf("order %d: %v", i, err)
		}
		if err := get(c, id, group, "v=1"); err != nil {
			return fmt.Errorf("order %d: %v", i, err)
		}
		rec, err := listen(c, fmt.Sprintf("%s-%d", name, i), id, group)
		if err != nil {
			return err
		}
		if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: "v=2"}); err != nil {
			return fmt.Errorf("order %d: %v", i, err)
		}
		if _, err := rec.next("v=2", NotifyWait); err != nil {
			return fmt.Errorf("order %d: %v", i, err)
		}
		e.exactly(name, rec, "v=2")
	}
	return nil
}

// endpoint: a client with only ClientConfig.Endpoint (the address server,
// Tacos' GET /nacos/serverlist) and no ServerConfigs finds the server and
// publishes, reads and listens through it.
func caseEndpoint(e *env, name string) error {
	if e.endpoint == "" {
		return fmt.Errorf("needs -endpoint")
	}
	list, err := newAPI(e.endpoint, "", "").serverList()
	if err != nil {
		return err
	}
	say("info serverlist %v", list)
	want := fmt.Sprintf("%s:%d", e.servers[0].IpAddr, e.servers[0].Port)
	if !contains(list, want) {
		return fmt.Errorf("GET /nacos/serverlist lists %v, expected %s among them", list, want)
	}
	c := e.client(name, func(cc *constant.ClientConfig) {
		cc.Endpoint = e.endpoint
		cc.EndpointContextPath = "nacos"
	})
	id := e.key("via-endpoint.properties")
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: "found=by endpoint"}); err != nil {
		return err
	}
	if err := get(c, id, group, "found=by endpoint"); err != nil {
		return err
	}
	rec, err := listen(c, name, id, group)
	if err != nil {
		return err
	}
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: "found=by endpoint, changed"}); err != nil {
		return err
	}
	if _, err := rec.next("found=by endpoint, changed", NotifyWait); err != nil {
		return err
	}
	e.exactly(name, rec, "found=by endpoint, changed")
	return nil
}

// gray-tag: a tag gray published through the SDK (ConfigParam.Tag goes
// into additionMap.tag) is served to the clients whose connection carries
// the label Vipserver-Tag (ClientConfig.AppConnLabels, sent as
// app_Vipserver-Tag) and to no other; removing it moves them back.
//
// The SDK 2.3.2 cannot read a tag gray: its ConfigQueryResponse declares
// `Tag bool`, and the server (as Nacos 3's ConfigQueryRequestHandler)
// answers a tag gray with the tag as a string, so the SDK's query fails
// with "cannot unmarshal string into Go struct field
// ConfigQueryResponse.tag of type bool". The case accepts that failure
// (it shows the server served the gray to the labelled connection: only
// such an answer carries a tag) or the gray's content (an SDK that decodes
// it), and nothing else.
func caseGrayTag(e *env, name string) error {
	const tag = "go-gray"
	plain := e.client(name+"-plain", nil)
	tagged := e.client(name+"-tagged", func(cc *constant.ClientConfig) {
		cc.AppConnLabels = map[string]string{"Vipserver-Tag": tag}
		// A failed query would otherwise answer the snapshot (the formal
		// version read before) without an error.
		cc.DisableUseSnapShot = true
	})
	id := e.key("gray.properties")
	f1, g1, f2 := "version=formal-1", "version=gray-1", "version=formal-2"
	if err := publish(plain, vo.ConfigParam{DataId: id, Group: group, Content: f1}); err != nil {
		return err
	}
	if err := get(plain, id, group, f1); err != nil {
		return err
	}
	if err := get(tagged, id, group, f1); err != nil {
		return fmt.Errorf("tagged client before the gray: %v", err)
	}
	plainRec, err := listen(plain, name+"-plain", id, group)
	if err != nil {
		return err
	}
	taggedRec, err := listen(tagged, name+"-tagged", id, group)
	if err != nil {
		return err
	}
	if err := publish(plain, vo.ConfigParam{DataId: id, Group: group, Content: g1, Tag: tag}); err != nil {
		return fmt.Errorf("publishing the tag gray: %v", err)
	}
	status, body, _, err := e.admin.getConfig(id, group, "", map[string][]string{"tag": {tag}})
	if err != nil {
		return err
	}
	if status != 200 || body != g1 {
		return fmt.Errorf("HTTP GET tag=%s: %d %q, expected 200 %q (the SDK's Tag publish made no gray)", tag, status, body, g1)
	}
	if _, err := e.httpContent(id, group, "", f1); err != nil {
		return fmt.Errorf("the formal version after the gray publish: %v", err)
	}
	if err := get(plain, id, group, f1); err != nil {
		return fmt.Errorf("plain client reads: %v", err)
	}
	taggedSawGray := false
	got, err := tagged.GetConfig(vo.ConfigParam{DataId: id, Group: group})
	switch {
	case err == nil && got == g1:
		taggedSawGray = true
		if _, err := taggedRec.next(g1, NotifyWait); err != nil {
			return err
		}
	case err != nil && strings.Contains(err.Error(), "ConfigQueryResponse.tag of type bool"):
		say("info gray-tag: the labelled client was answered the tag gray, which the SDK cannot decode: %v", err)
	default:
		return fmt.Errorf("tagged client reads %q (err %v), expected the gray %q (or the SDK's decode failure of a tag answer)", got, err, g1)
	}
	if err := publish(plain, vo.ConfigParam{DataId: id, Group: group, Content: f2}); err != nil {
		return err
	}
	if _, err := plainRec.next(f2, NotifyWait); err != nil {
		return err
	}
	if err := e.admin.deleteTag(id, group, "", tag); err != nil {
		return err
	}
	if _, err := taggedRec.next(f2, NotifyWait); err != nil {
		return fmt.Errorf("after the gray's removal: %v", err)
	}
	if err := getPatiently(tagged, id, group, f2); err != nil {
		return fmt.Errorf("tagged client after the gray's removal: %v", err)
	}
	e.exactly(name, plainRec, f2)
	if taggedSawGray {
		e.exactly(name, taggedRec, g1, f2)
	} else {
		e.exactly(name, taggedRec, f2)
	}
	return nil
}

// gray-beta: a beta published through the SDK (ConfigParam.BetaIps goes
// into additionMap.betaIps) naming the IP the SDK reports
// (metadata.clientIp: its first non-loopback IPv4, util.LocalIP; none:
// the server takes the peer, 127.0.0.1): the SDK reads and hears the beta,
// another IP reads the formal version, and stopping the beta moves the
// SDK back.
func caseGrayBeta(e *env, name string) error {
	ip := util.LocalIP()
	if ip == "" {
		ip = "127.0.0.1"
	}
	const otherIP = "203.0.113.7" // TEST-NET-3: no client of this test
	c := e.client(name, nil)
	id := e.key("beta.properties")
	f1, b1 := "version=formal-1", "version=beta-1"
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: f1}); err != nil {
		return err
	}
	if err := get(c, id, group, f1); err != nil {
		return err
	}
	rec, err := listen(c, name, id, group)
	if err != nil {
		return err
	}
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: b1, BetaIps: ip}); err != nil {
		return fmt.Errorf("publishing the beta for %s: %v", ip, err)
	}
	if _, err := rec.next(b1, NotifyWait); err != nil {
		return fmt.Errorf("the SDK at %s: %v", ip, err)
	}
	if err := get(c, id, group, b1); err != nil {
		return fmt.Errorf("the SDK at %s reads: %v", ip, err)
	}
	for _, probe := range []struct{ ip, want string }{{ip, b1}, {otherIP, f1}} {
		status, body, err := e.admin.getConfigAs(id, group, "", probe.ip)
		if err != nil {
			return err
		}
		if status != 200 || body != probe.want {
			return fmt.Errorf("HTTP GET as %s: %d %q, expected 200 %q", probe.ip, status, body, probe.want)
		}
	}
	if err := e.admin.deleteBeta(id, group, ""); err != nil {
		return err
	}
	if _, err := rec.next(f1, NotifyWait); err != nil {
		return fmt.Errorf("after the beta stopped: %v", err)
	}
	if err := get(c, id, group, f1); err != nil {
		return err
	}
	say("info gray-beta: the SDK reports client IP %s", ip)
	e.exactly(name, rec, b1, f1)
	return nil
}

// encrypted-data-key: what the SDK's KMS filter would send and read back
// (ConfigParam.EncryptedDataKey on a `cipher-` dataId) is kept by the
// server: the SDK's cache holds the key the query answered, and HTTP
// answers it as Encrypted-Data-Key. (The filter itself needs Alibaba Cloud
// KMS: ClientConfig.OpenKMS is off here.)
func caseEncryptedDataKey(e *env, name string) error {
	c := e.client(name, nil)
	id := "cipher-kms-aes-128-" + e.key("secret.properties")
	content, dataKey := "Y2lwaGVydGV4dA==", "ZW5jcnlwdGVkLWRhdGEta2V5"
	if err := publish(c, vo.ConfigParam{DataId: id, Group: group, Content: content, EncryptedDataKey: dataKey}); err != nil {
		return err
	}
	if err := get(c, id, group, content); err != nil {
		return err
	}
	cached := filepath.Join(e.workdir, "cache", name, "config", "encrypted-data-key", id+"@@"+group+"@@")
	raw, err := os.ReadFile(cached)
	if err != nil {
		return fmt.Errorf("the SDK cached no encrypted data key: %v", err)
	}
	if string(raw) != dataKey {
		return fmt.Errorf("the query answered encryptedDataKey %q, expected %q", raw, dataKey)
	}
	headers, err := e.httpContent(id, group, "", content)
	if err != nil {
		return err
	}
	if got := first(headers["Encrypted-Data-Key"]); got != dataKey {
		return fmt.Errorf("HTTP Encrypted-Data-Key %q, expected %q", got, dataKey)
	}
	return nil
}

// auth-refused (with -user): a client with a wrong password is refused
// (publish fails, and a read without the cache fallback fails) and wrote
// nothing.
func caseAuthRefused(e *env, name string) error {
	if e.user == "" {
		return fmt.Errorf("needs -user (a server with --open-api-auth)")
	}
	cc := baseClientConfig(e.workdir, name)
	cc.Username, cc.Password = e.user, e.password+"-wrong"
	cc.DisableUseSnapShot = true
	cc.TimeoutMs = 2000
	c, err := newClient(e.servers, cc)
	if err != nil {
		return err
	}
	defer c.CloseClient()
	id := e.key("refused.properties")
	ok, err := c.PublishConfig(vo.ConfigParam{DataId: id, Group: group, Content: "should not land"})
	if ok || err == nil {
		return fmt.Errorf("publish with a wrong password: ok=%v err=%v, expected a refusal", ok, err)
	}
	say("info refused publish: %v", err)
	got, err := c.GetConfig(vo.ConfigParam{DataId: e.key("app.properties"), Group: group})
	if err == nil {
		return fmt.Errorf("read with a wrong password answered %q, expected a refusal", got)
	}
	status, body, _, err := e.admin.getConfig(id, group, "", nil)
	if err != nil {
		return err
	}
	if status != 404 {
		return fmt.Errorf("the refused publish landed: %d %q", status, body)
	}
	return nil
}

// non-ascii-keys: dataIds and groups in other scripts (what Java Nacos'
// ParamUtils.isValid accepts): publish, get, listen, and the server holds
// them under those names.
func caseNonASCII(e *env, name string) error {
	writer := e.client(name+"-writer", nil)
	reader := e.client(name+"-reader", nil)
	for i, key := range []struct{ id, grp string }{
		{"订单服务配置.yaml", "支付组"},
		{"é.yaml", group},
	} {
		v1 := fmt.Sprintf("run: %s\nv: 1\n名字: 值", e.prefix)
		if err := publish(writer, vo.ConfigParam{DataId: key.id, Group: key.grp, Content: v1, Type: "yaml"}); err != nil {
			return err
		}
		if err := get(reader, key.id, key.grp, v1); err != nil {
			return err
		}
		if _, err := e.httpContent(key.id, key.grp, "", v1); err != nil {
			return err
		}
		rec, err := listen(reader, fmt.Sprintf("%s-%d", name, i), key.id, key.grp)
		if err != nil {
			return err
		}
		v2 := fmt.Sprintf("run: %s\nv: 2\n名字: 新值", e.prefix)
		if err := publish(writer, vo.ConfigParam{DataId: key.id, Group: key.grp, Content: v2, Type: "yaml"}); err != nil {
			return err
		}
		ev, err := rec.next(v2, NotifyWait)
		if err != nil {
			return err
		}
		if ev.dataID != key.id || ev.group != key.grp {
			return fmt.Errorf("listener called for %q/%q, expected %q/%q", ev.group, ev.dataID, key.grp, key.id)
		}
		e.exactly(name, rec, v2)
	}
	return nil
}
