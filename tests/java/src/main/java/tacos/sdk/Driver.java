package tacos.sdk;

import com.alibaba.nacos.api.NacosFactory;
import com.alibaba.nacos.api.PropertyKeyConst;
import com.alibaba.nacos.api.config.ConfigChangeEvent;
import com.alibaba.nacos.api.config.ConfigChangeItem;
import com.alibaba.nacos.api.config.ConfigService;
import com.alibaba.nacos.api.config.listener.AbstractListener;
import com.alibaba.nacos.api.exception.NacosException;
import com.alibaba.nacos.client.config.listener.impl.AbstractConfigChangeListener;
import com.alibaba.nacos.common.utils.VersionUtils;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The Java driver of tests/sdk_java.rs: the official Nacos Java client
 * (Maven com.alibaba.nacos:nacos-client, 2.x or 3.x: whichever is on the
 * class path) against a running Tacos.
 *
 * <pre>
 * cases --server HOST:PORT --dead-port PORT --user U --password P [--only a,b]
 *     every case in order; one line per case, "ok NAME (N ms)" or
 *     "FAIL NAME: why", then "all ok" or "N failed" (exit 0 / 1). The last
 *     case (snapshot) prints "NEED stop-servers" and reads one line from
 *     stdin once the test has stopped every server.
 * listen SERVERS KEY WORKDIR [--user U --password P]
 *     a long-running listener (ListenMain) for the failover tests.
 * tls --server HOST:PORT --ca CA [--cert CERT --key KEY] [--user U --password P]
 *     publish, get, listen, remove over TLS (TlsMain).
 * </pre>
 *
 * The gRPC port is the HTTP port + 1000 (the client's default offset).
 */
public final class Driver {

    /** One check; throws on a failure. */
    public interface Case {
        void run() throws Exception;
    }

    static final String GROUP = "DEFAULT_GROUP";
    /** Bound on waiting for one listener event. */
    static final long EVENT_WAIT_MS = 20_000;
    /** How long a listener must stay quiet to count as "no more events". */
    static final long QUIET_MS = 1_500;
    /** Bound on one client call. */
    static final long CALL_MS = 5_000;

    final String server;
    final int deadPort;
    final String user;
    final String password;
    final String prefix;
    final Http http;
    final List<ConfigService> services = new ArrayList<>();

    Driver(String server, int deadPort, String user, String password) {
        this.server = server;
        this.deadPort = deadPort;
        this.user = user;
        this.password = password;
        this.prefix = "java" + generation() + "-";
        this.http = new Http(server, user, password);
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usage();
        }
        switch (args[0]) {
            case "cases":
                System.exit(runCases(args));
                break;
            case "listen":
                ListenMain.main(args);
                break;
            case "tls":
                TlsMain.main(args);
                break;
            default:
                usage();
        }
    }

    static void usage() {
        System.err.println("usage: cases --server HOST:PORT --dead-port PORT --user U --password P [--only a,b]\n"
                + "       listen SERVERS KEY WORKDIR [--user U --password P]\n"
                + "       tls --server HOST:PORT --ca CA [--cert CERT --key KEY] [--user U --password P]");
        System.exit(2);
    }

    static Map<String, String> options(String[] args, int from) {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = from; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected an --option, got " + args[i]);
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        return options;
    }

    /** The client generation on the class path: 2 or 3. */
    static int generation() {
        String version = clientVersion();
        return version.startsWith("3.") ? 3 : 2;
    }

    static String clientVersion() {
        return VersionUtils.version == null ? "unknown" : VersionUtils.version;
    }

    static int runCases(String[] args) throws Exception {
        Map<String, String> o = options(args, 1);
        Driver d = new Driver(required(o, "server"), Integer.parseInt(required(o, "dead-port")),
                required(o, "user"), required(o, "password"));
        say("nacos-client " + clientVersion() + " (generation " + generation() + ") against " + d.server);
        Map<String, Case> cases = d.cases();
        List<String> only = o.containsKey("only") ? List.of(o.get("only").split(",")) : null;
        int failed = 0;
        int ran = 0;
        for (Map.Entry<String, Case> c : cases.entrySet()) {
            if (only != null && !only.contains(c.getKey())) {
                continue;
            }
            ran++;
            long start = System.nanoTime();
            try {
                c.getValue().run();
                say("ok " + c.getKey() + " (" + (System.nanoTime() - start) / 1_000_000 + " ms)");
            } catch (Throwable t) {
                failed++;
                say("FAIL " + c.getKey() + ": " + t);
                t.printStackTrace();
            }
        }
        for (ConfigService s : d.services) {
            try {
                s.shutDown();
            } catch (Throwable ignored) {
                // the servers may be gone (snapshot case)
            }
        }
        if (ran == 0) {
            say("no case ran");
            return 1;
        }
        say(failed == 0 ? "all ok" : failed + " failed");
        return failed == 0 ? 0 : 1;
    }

    static String required(Map<String, String> o, String name) {
        String v = o.get(name);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return v;
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Every case, in the order they run (3.x-only ones from Nacos3Cases). */
    Map<String, Case> cases() throws Exception {
        Map<String, Case> cases = new LinkedHashMap<>();
        cases.put("publish_get", this::publishGet);
        cases.put("listen", this::listen);
        cases.put("remove", this::remove);
        cases.put("cas", this::cas);
        cases.put("namespace", this::namespace);
        cases.put("auth", this::auth);
        cases.put("config_type", this::configType);
        cases.put("multi_address", this::multiAddress);
        cases.put("endpoint", this::endpoint);
        cases.put("gray_tag", this::grayTag);
        cases.put("gray_beta", this::grayBeta);
        cases.put("encryption", this::encryption);
        cases.put("unicode_keys", this::unicodeKeys);
        if (generation() >= 3) {
            // Only the 3.x module has this class.
            @SuppressWarnings("unchecked")
            Map<String, Case> more = (Map<String, Case>) nacos3("cases", new Class<?>[] {Driver.class}, this);
            cases.putAll(more);
        }
        // Last: it stops every server.
        cases.put("snapshot", this::snapshot);
        return cases;
    }

    /**
     * Calls a static method of tacos.sdk.Nacos3Cases, which only the 3.x
     * module compiles (it uses 3.x-only API).
     */
    static Object nacos3(String method, Class<?>[] types, Object... args) throws Exception {
        try {
            return Class.forName("tacos.sdk.Nacos3Cases").getMethod(method, types).invoke(null, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw e;
        }
    }

    // ---- clients ---------------------------------------------------------

    /** Properties of a client logged in as the test user on the server. */
    Properties props() {
        Properties p = new Properties();
        p.setProperty(PropertyKeyConst.SERVER_ADDR, server);
        p.setProperty(PropertyKeyConst.USERNAME, user);
        p.setProperty(PropertyKeyConst.PASSWORD, password);
        return p;
    }

    ConfigService client(Properties p) throws NacosException {
        ConfigService s = NacosFactory.createConfigService(p);
        services.add(s);
        return s;
    }

    ConfigService client() throws NacosException {
        return client(props());
    }

    // ---- listener helpers ------------------------------------------------

    /** A listener that records every content it is given (null as null). */
    static final class Recorder extends AbstractListener {
        final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
        final List<String> all = new ArrayList<>();
        static final Object NULL = new Object();

        @Override
        public void receiveConfigInfo(String content) {
            synchronized (all) {
                all.add(content);
            }
            events.add(content == null ? NULL : content);
        }

        /** The next event's content (null for a null content); fails after the bound. */
        String next(String what) throws InterruptedException {
            Object e = events.poll(EVENT_WAIT_MS, TimeUnit.MILLISECONDS);
            check(e != null, "no listener event within " + EVENT_WAIT_MS + " ms (waiting for " + what + ")");
            return e == NULL ? null : (String) e;
        }

        /** Asserts the next event carries exactly {@code content}. */
        void expect(String content) throws InterruptedException {
            String got = next(show(content));
            check(Objects.equals(got, content), "listener got " + show(got) + ", expected " + show(content));
        }

        /** Asserts nothing more arrives within {@link #QUIET_MS}. */
        void quiet() throws InterruptedException {
            Object e = events.poll(QUIET_MS, TimeUnit.MILLISECONDS);
            check(e == null, "unexpected extra listener event " + show(e == NULL ? null : (String) e) + "; all: "
                    + history());
        }

        List<String> history() {
            synchronized (all) {
                return new ArrayList<>(all);
            }
        }
    }

    static String show(String s) {
        return s == null ? "null" : '"' + s + '"';
    }

    static void check(boolean ok, String why) {
        if (!ok) {
            throw new AssertionError(why);
        }
    }

    static void checkEq(Object got, Object want, String what) {
        check(Objects.equals(got, want), what + ": got " + got + ", expected " + want);
    }

    static String md5(String s) throws Exception {
        byte[] d = MessageDigest.getInstance("MD5").digest(s.getBytes(StandardCharsets.UTF_8));
        StringBuilder sb = new StringBuilder();
        for (byte b : d) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    /** Polls getConfig until it answers {@code want} (a publish is read back at once, but be fair to caches). */
    static void checkGet(ConfigService s, String dataId, String group, String want) throws Exception {
        String got = s.getConfig(dataId, group, CALL_MS);
        check(Objects.equals(got, want), "getConfig(" + dataId + ", " + group + ") = " + show(got) + ", expected "
                + show(want));
    }

    // ---- cases -----------------------------------------------------------

    void publishGet() throws Exception {
        ConfigService s = client();
        String dataId = prefix + "publish.properties";
        checkGet(s, dataId, GROUP, null);
        check(s.publishConfig(dataId, GROUP, "a=1"), "publishConfig returned false");
        checkGet(s, dataId, GROUP, "a=1");
        check(s.publishConfig(dataId, GROUP, "a=2\nb=ü"), "second publishConfig returned false");
        checkGet(s, dataId, GROUP, "a=2\nb=ü");
        // What the server holds, over its HTTP API.
        Http.Answer a = http.getConfig(dataId, GROUP, "", null);
        checkEq(a.status, 200, "HTTP GET status");
        checkEq(a.body, "a=2\nb=ü", "HTTP GET body");
        checkEq(a.header("Content-MD5"), md5("a=2\nb=ü"), "Content-MD5");
    }

    void listen() throws Exception {
        ConfigService s = client();
        ConfigService writer = client();
        String dataId = prefix + "listen.properties";
        Recorder r = new Recorder();
        s.addListener(dataId, GROUP, r);
        List<String> published = List.of("v=1", "v=2", "v=3");
        for (String v : published) {
            check(writer.publishConfig(dataId, GROUP, v), "publishConfig " + v);
            r.expect(v);
        }
        r.quiet();
        checkEq(r.history(), published, "every event, in order");
    }

    void remove() throws Exception {
        ConfigService s = client();
        String dataId = prefix + "remove.properties";
        check(s.publishConfig(dataId, GROUP, "doomed=1"), "publishConfig");
        Recorder r = new Recorder();
        String first = s.getConfigAndSignListener(dataId, GROUP, CALL_MS, r);
        checkEq(first, "doomed=1", "getConfigAndSignListener");
        check(s.removeConfig(dataId, GROUP), "removeConfig returned false");
        // The client re-reads a removed key as not found and hands the
        // listener null (CacheData: content null, md5 "").
        String got = r.next("the delete");
        check(got == null || got.isEmpty(), "listener heard the delete as " + show(got) + ", expected null/empty");
        r.quiet();
        checkGet(s, dataId, GROUP, null);
        checkEq(http.getConfig(dataId, GROUP, "", null).status, 404, "HTTP GET after remove");
        // Removing again is fine (Nacos answers true for an absent key too).
        check(s.removeConfig(dataId, GROUP), "second removeConfig returned false");
    }

    void cas() throws Exception {
        ConfigService s = client();
        String dataId = prefix + "cas.properties";
        check(s.publishConfig(dataId, GROUP, "n=1"), "publishConfig");
        String md5 = md5("n=1");
        check(s.publishConfigCas(dataId, GROUP, "n=2", md5), "publishConfigCas with the right md5 was refused");
        checkGet(s, dataId, GROUP, "n=2");
        check(!s.publishConfigCas(dataId, GROUP, "n=3", md5), "publishConfigCas with a stale md5 succeeded");
        checkGet(s, dataId, GROUP, "n=2");
        check(!s.publishConfigCas(dataId, GROUP, "n=4", "0123456789abcdef0123456789abcdef"),
                "publishConfigCas with a wrong md5 succeeded");
        check(s.publishConfigCas(dataId, GROUP, "n=5", md5("n=2"), "properties"),
                "publishConfigCas (with type) with the right md5 was refused");
        checkGet(s, dataId, GROUP, "n=5");
        checkEq(http.getConfig(dataId, GROUP, "", null).header("Config-Type"), "properties", "Config-Type");
    }

    void namespace() throws Exception {
        String ns = prefix + "ns";
        Http.Answer created = http.createNamespace(ns, "java sdk " + ns);
        check(created.status == 200 && created.body.trim().equals("true"), "creating namespace " + ns + ": "
                + created);
        Properties p = props();
        p.setProperty(PropertyKeyConst.NAMESPACE, ns);
        ConfigService inNs = client(p);
        ConfigService pub = client();
        String dataId = prefix + "ns.properties";
        Recorder r = new Recorder();
        inNs.addListener(dataId, GROUP, r);
        check(inNs.publishConfig(dataId, GROUP, "where=ns"), "publishConfig in the namespace");
        r.expect("where=ns");
        checkGet(inNs, dataId, GROUP, "where=ns");
        checkGet(pub, dataId, GROUP, null);
        check(pub.publishConfig(dataId, GROUP, "where=public"), "publishConfig in public");
        checkGet(inNs, dataId, GROUP, "where=ns");
        checkGet(pub, dataId, GROUP, "where=public");
        r.quiet();
        checkEq(http.getConfig(dataId, GROUP, ns, null).body, "where=ns", "HTTP GET with tenant");
        check(http.get("/nacos/v1/console/namespaces").body.contains("\"" + ns + "\""),
                "the namespace list names " + ns);
    }

    void auth() throws Exception {
        // The server runs with --open-api-auth: a client without
        // credentials is refused, one with the wrong password too.
        Properties anonymous = new Properties();
        anonymous.setProperty(PropertyKeyConst.SERVER_ADDR, server);
        ConfigService nobody = client(anonymous);
        expectRefused(nobody, "without credentials");
        nobody.shutDown();
        Properties wrong = props();
        wrong.setProperty(PropertyKeyConst.PASSWORD, password + "-wrong");
        // Shut down at once: the client retries its login every 5 s, and
        // Tacos locks the account after 5 failed logins within 300 s
        // (--login-lockout-failures), which would lock out every other
        // client of this user too.
        ConfigService badPassword = client(wrong);
        try {
            expectRefused(badPassword, "with a wrong password");
        } finally {
            badPassword.shutDown();
        }
        // The logged-in client reads and writes (as every other case does).
        ConfigService s = client();
        String dataId = prefix + "auth.properties";
        check(s.publishConfig(dataId, GROUP, "secret=1"), "publishConfig with credentials");
        checkGet(s, dataId, GROUP, "secret=1");
    }

    void expectRefused(ConfigService s, String what) throws Exception {
        try {
            String got = s.getConfig(prefix + "publish.properties", GROUP, CALL_MS);
            throw new AssertionError("getConfig " + what + " answered " + show(got) + ", expected 403");
        } catch (NacosException e) {
            checkEq(e.getErrCode(), NacosException.NO_RIGHT, "error code of getConfig " + what + " (" + e + ")");
        }
    }

    void configType() throws Exception {
        ConfigService s = client();
        String dataId = prefix + "type.yaml";
        String v1 = "server:\n  port: 8080\n  name: a\n";
        String v2 = "server:\n  port: 8081\n  name: a\n";
        check(s.publishConfig(dataId, GROUP, v1, "yaml"), "publishConfig type yaml");
        checkEq(http.getConfig(dataId, GROUP, "", null).header("Config-Type"), "yaml", "Config-Type");
        // A key-level listener: the client parses the change by the type the
        // server answered (ConfigQueryResponse.contentType); a yaml parse
        // yields the flattened key server.port, any other type would not.
        BlockingQueue<ConfigChangeEvent> events = new LinkedBlockingQueue<>();
        String first = s.getConfigAndSignListener(dataId, GROUP, CALL_MS, new AbstractConfigChangeListener() {
            @Override
            public void receiveConfigChange(ConfigChangeEvent event) {
                events.add(event);
            }
        });
        checkEq(first, v1, "getConfigAndSignListener");
        check(s.publishConfig(dataId, GROUP, v2, "yaml"), "publishConfig v2");
        ConfigChangeEvent e = events.poll(EVENT_WAIT_MS, TimeUnit.MILLISECONDS);
        check(e != null, "no ConfigChangeEvent within " + EVENT_WAIT_MS + " ms");
        ConfigChangeItem port = e.getChangeItem("server.port");
        check(port != null, "no item server.port in the event (was the type yaml?): " + e.getChangeItems());
        checkEq(port.getOldValue(), "8080", "server.port old value");
        checkEq(port.getNewValue(), "8081", "server.port new value");
        checkEq(e.getChangeItems().size(), 1, "changed items " + e.getChangeItems());
        if (generation() >= 3) {
            // ConfigService.getConfigWithResult (3.x only) names the type.
            nacos3("checkType", new Class<?>[] {ConfigService.class, String.class, String.class, String.class}, s,
                    dataId, GROUP, "yaml");
        }
    }

    void multiAddress() throws Exception {
        // One dead address first and one live: whichever the client picks
        // first, it ends up on the live one.
        String host = server.substring(0, server.lastIndexOf(':'));
        Properties p = props();
        p.setProperty(PropertyKeyConst.SERVER_ADDR, host + ":" + deadPort + "," + server);
        ConfigService s = client(p);
        String dataId = prefix + "multi.properties";
        Recorder r = new Recorder();
        s.addListener(dataId, GROUP, r);
        check(s.publishConfig(dataId, GROUP, "m=1"), "publishConfig through the two-address client");
        r.expect("m=1");
        checkGet(s, dataId, GROUP, "m=1");
        // and a change made elsewhere reaches it
        check(client().publishConfig(dataId, GROUP, "m=2"), "publishConfig m=2");
        r.expect("m=2");
    }

    void endpoint() throws Exception {
        String host = server.substring(0, server.lastIndexOf(':'));
        String port = server.substring(server.lastIndexOf(':') + 1);
        Http.Answer list = http.get("/nacos/serverlist");
        checkEq(list.status, 200, "GET /nacos/serverlist status");
        check(list.body.lines().anyMatch(l -> l.trim().equals(server)), "GET /nacos/serverlist lists " + server
                + ": " + list.body);
        Properties p = new Properties();
        p.setProperty(PropertyKeyConst.ENDPOINT, host);
        p.setProperty(PropertyKeyConst.ENDPOINT_PORT, port);
        p.setProperty(PropertyKeyConst.ENDPOINT_CONTEXT_PATH, "nacos");
        p.setProperty(PropertyKeyConst.ENDPOINT_CLUSTER_NAME, "serverlist");
        p.setProperty(PropertyKeyConst.USERNAME, user);
        p.setProperty(PropertyKeyConst.PASSWORD, password);
        ConfigService s = client(p);
        String dataId = prefix + "endpoint.properties";
        Recorder r = new Recorder();
        s.addListener(dataId, GROUP, r);
        check(s.publishConfig(dataId, GROUP, "e=1"), "publishConfig through the endpoint client");
        r.expect("e=1");
        checkGet(s, dataId, GROUP, "e=1");
        checkEq(http.getConfig(dataId, GROUP, "", null).body, "e=1", "HTTP GET");
    }

    void grayTag() throws Exception {
        String tag = "java-gray";
        String dataId = prefix + "gray.properties";
        ConfigService plain = client();
        Properties p = props();
        // DefaultLabelsCollector: "k=v" pairs, sent with the app_ prefix.
        p.setProperty("nacos.app.conn.labels", "Vipserver-Tag=" + tag);
        ConfigService tagged = client(p);
        check(plain.publishConfig(dataId, GROUP, "formal=1"), "publishConfig formal");
        Http.Answer g = http.publishGray(dataId, GROUP, "gray=1", tag);
        check(g.status == 200 && g.body.trim().equals("true"), "publishing the gray by tag: " + g);
        checkGet(tagged, dataId, GROUP, "gray=1");
        checkGet(plain, dataId, GROUP, "formal=1");
        checkEq(http.getConfig(dataId, GROUP, "", tag).body, "gray=1", "HTTP GET with tag");
        Recorder rt = new Recorder();
        Recorder rp = new Recorder();
        checkEq(tagged.getConfigAndSignListener(dataId, GROUP, CALL_MS, rt), "gray=1", "tagged sign listener");
        checkEq(plain.getConfigAndSignListener(dataId, GROUP, CALL_MS, rp), "formal=1", "plain sign listener");
        // A gray change reaches the tagged client only.
        check(http.publishGray(dataId, GROUP, "gray=2", tag).body.trim().equals("true"), "gray publish 2");
        rt.expect("gray=2");
        // A formal change reaches the plain client only.
        check(plain.publishConfig(dataId, GROUP, "formal=2"), "publishConfig formal 2");
        rp.expect("formal=2");
        rt.quiet();
        rp.quiet();
        // Stopping the gray moves the tagged client back to the formal version.
        Http.Answer stop = http.deleteGray(dataId, GROUP, tag);
        check(stop.status == 200 && stop.body.trim().equals("true"), "stopping the gray: " + stop);
        rt.expect("formal=2");
        checkGet(tagged, dataId, GROUP, "formal=2");
        rp.quiet();
    }

    void grayBeta() throws Exception {
        // The client sends its IP in every request's metadata (clientIp:
        // NetUtils.localIP(), named localIp() in 3.x); a beta for that IP is
        // what it sees.
        String ip = clientIp();
        String dataId = prefix + "beta.properties";
        ConfigService s = client();
        check(s.publishConfig(dataId, GROUP, "formal=1"), "publishConfig formal");
        Recorder r = new Recorder();
        checkEq(s.getConfigAndSignListener(dataId, GROUP, CALL_MS, r), "formal=1", "sign listener");
        // A beta for another IP: not this client's.
        Http.Answer other = http.publishBeta(dataId, GROUP, "beta=other", "192.0.2.1");
        check(other.status == 200 && other.body.trim().equals("true"), "beta for another IP: " + other);
        r.quiet();
        checkGet(s, dataId, GROUP, "formal=1");
        // A beta for its IP (replacing the other).
        Http.Answer mine = http.publishBeta(dataId, GROUP, "beta=1", ip);
        check(mine.status == 200 && mine.body.trim().equals("true"), "beta for " + ip + ": " + mine);
        r.expect("beta=1");
        checkGet(s, dataId, GROUP, "beta=1");
        // Stopping it moves the client back.
        Http.Answer stop = http.deleteBeta(dataId, GROUP);
        // Nacos' stopBeta answers its RestResult {"code":200,"data":true,...}.
        check(stop.status == 200 && stop.body.contains("\"data\":true"), "stopping the beta: " + stop);
        r.expect("formal=1");
        checkGet(s, dataId, GROUP, "formal=1");
        r.quiet();
    }

    /** The IP the client puts in its requests' metadata. */
    static String clientIp() throws Exception {
        Class<?> netUtils = Class.forName("com.alibaba.nacos.api.utils.NetUtils");
        for (String name : new String[] {"localIP", "localIp"}) {
            try {
                return (String) netUtils.getMethod(name).invoke(null);
            } catch (NoSuchMethodException e) {
                // the other generation's name
            }
        }
        throw new AssertionError("NetUtils has neither localIP() nor localIp()");
    }

    void encryption() throws Exception {
        // The client's ConfigEncryptionFilter encrypts the content of a
        // cipher-{algorithm}-* dataId with the EncryptionPluginService SPI
        // named {algorithm} (here the driver's own "aes", TestAesPlugin) and
        // sends the encrypted data key along; the server stores and returns
        // both, and the client decrypts on read and on change.
        ConfigService s = client();
        String dataId = "cipher-aes-" + prefix + "secret.properties";
        String plain = "db.password=s3cr3t";
        check(s.publishConfig(dataId, GROUP, plain), "publishConfig of a cipher- dataId");
        Http.Answer raw = http.getConfig(dataId, GROUP, "", null);
        checkEq(raw.status, 200, "HTTP GET status");
        check(!raw.body.contains("s3cr3t"), "the server holds the plain text: " + raw.body);
        String key = raw.header("Encrypted-Data-Key");
        check(key != null && !key.isEmpty(), "no Encrypted-Data-Key header on the HTTP answer: " + raw);
        checkEq(TestAesPlugin.decryptWith(key, raw.body), plain, "decrypting what the server holds");
        checkGet(s, dataId, GROUP, plain);
        Recorder r = new Recorder();
        checkEq(s.getConfigAndSignListener(dataId, GROUP, CALL_MS, r), plain, "getConfigAndSignListener");
        check(client().publishConfig(dataId, GROUP, "db.password=n3w"), "second publish");
        r.expect("db.password=n3w");
        String key2 = http.getConfig(dataId, GROUP, "", null).header("Encrypted-Data-Key");
        check(!key.equals(key2), "the data key did not change with the second publish");
    }

    void unicodeKeys() throws Exception {
        ConfigService s = client();
        ConfigService writer = client();
        String[][] keys = {{"订单服务配置.yaml", "支付组"}, {"é.yaml", GROUP}};
        for (String[] k : keys) {
            String dataId = k[0];
            String group = k[1];
            Recorder r = new Recorder();
            s.addListener(dataId, group, r);
            String v1 = "名称: 订单\nv: 1\n";
            check(writer.publishConfig(dataId, group, v1, "yaml"), "publishConfig " + group + "/" + dataId);
            r.expect(v1);
            checkGet(s, dataId, group, v1);
            checkEq(http.getConfig(dataId, group, "", null).body, v1, "HTTP GET " + group + "/" + dataId);
            String v2 = "名称: 订单\nv: 2\n";
            check(writer.publishConfig(dataId, group, v2, "yaml"), "publishConfig v2 " + group + "/" + dataId);
            r.expect(v2);
            r.quiet();
        }
    }

    void snapshot() throws Exception {
        // The client keeps the last content it read in its snapshot dir
        // (JM.SNAPSHOT.PATH, set by the test to a temp dir) and serves it
        // when no server answers.
        ConfigService s = client();
        String dataId = prefix + "snapshot.properties";
        check(s.publishConfig(dataId, GROUP, "kept=1"), "publishConfig");
        checkGet(s, dataId, GROUP, "kept=1");
        String never = prefix + "never-read.properties";
        check(s.publishConfig(never, GROUP, "unseen=1"), "publishConfig of a key never read");
        say("NEED stop-servers");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String reply = in.readLine();
        check("stopped".equals(reply), "the test answered " + show(reply) + " instead of \"stopped\"");
        long start = System.nanoTime();
        checkGet(s, dataId, GROUP, "kept=1");
        say("snapshot read with every server down took " + (System.nanoTime() - start) / 1_000_000 + " ms");
        // A key this client never read has no snapshot: null.
        checkGet(s, never, GROUP, null);
    }
}
