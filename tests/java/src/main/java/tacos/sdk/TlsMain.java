package tacos.sdk;

import com.alibaba.nacos.api.NacosFactory;
import com.alibaba.nacos.api.PropertyKeyConst;
import com.alibaba.nacos.api.config.ConfigService;

import java.util.Map;
import java.util.Properties;

/**
 * The Java client over TLS, for tests/sdk_java.rs:
 *
 * <pre>
 * tls --server HOST:PORT --ca CA [--cert CERT --key KEY] [--user U --password P]
 * </pre>
 *
 * Publishes, reads, listens (the listener must hear a change) and removes
 * over TLS; prints "ok NAME (N ms)" per step and "all ok" (exit 0), or
 * "FAIL NAME: why" (exit 1). The gRPC port is the HTTP port + 1000.
 *
 * <p>What the client (2.5.1, and 3.x alike) needs set, read in its source:
 *
 * <ul>
 * <li>gRPC: client properties {@code nacos.remote.client.rpc.tls.enable=true};
 * {@code ...tls.trustAll=false} (the default is true: no check at all) and
 * {@code ...tls.trustCollectionChainPath} (RpcClientTlsConfigFactory
 * .createSdkConfig); for mutual TLS {@code ...tls.mutualAuth=true},
 * {@code ...tls.certChainFile}, {@code ...tls.certPrivateKey}. GrpcClient
 * .buildSslContext opens these through Nacos' DefaultResourceLoader, which
 * takes a plain "/path" as a class path resource: they need "file:".</li>
 * <li>HTTP (the login, POST /nacos/v1/auth/users/login): the server address
 * must carry "https://" (HttpLoginProcessor prepends "http://" to an address
 * without a scheme), and the JVM system properties {@code tls.enable=true},
 * {@code tls.client.authServer=true} (else every certificate is trusted) and
 * {@code tls.client.trustCertPath} (TlsSystemConfig, read once; TlsHelper
 * .buildSslContext). That SSLContext gets no key manager, so the client's
 * HTTP calls cannot present a client certificate: login and mutual TLS do
 * not go together.</li>
 * </ul>
 */
public final class TlsMain {

    private TlsMain() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = Driver.options(args, 1);
        String server = Driver.required(o, "server");
        String ca = Driver.required(o, "ca");
        // Before any client class reads them (TlsSystemConfig's statics).
        System.setProperty("tls.enable", "true");
        System.setProperty("tls.client.authServer", "true");
        System.setProperty("tls.client.trustCertPath", ca);

        Properties p = new Properties();
        p.setProperty(PropertyKeyConst.SERVER_ADDR, "https://" + server);
        p.setProperty("nacos.remote.client.rpc.tls.enable", "true");
        p.setProperty("nacos.remote.client.rpc.tls.trustAll", "false");
        p.setProperty("nacos.remote.client.rpc.tls.trustCollectionChainPath", "file:" + ca);
        if (o.containsKey("cert")) {
            p.setProperty("nacos.remote.client.rpc.tls.mutualAuth", "true");
            p.setProperty("nacos.remote.client.rpc.tls.certChainFile", "file:" + o.get("cert"));
            p.setProperty("nacos.remote.client.rpc.tls.certPrivateKey", "file:" + Driver.required(o, "key"));
        }
        if (o.containsKey("user")) {
            p.setProperty(PropertyKeyConst.USERNAME, o.get("user"));
            p.setProperty(PropertyKeyConst.PASSWORD, Driver.required(o, "password"));
        }
        Driver.say("nacos-client " + Driver.clientVersion() + " over TLS against " + server);

        String dataId = "java" + Driver.generation() + "-tls.properties";
        String group = Driver.GROUP;
        ConfigService[] clients = new ConfigService[2];
        Driver.Recorder recorder = new Driver.Recorder();
        boolean ok = step("connect", () -> {
            clients[0] = NacosFactory.createConfigService(p);
            clients[1] = NacosFactory.createConfigService(p);
            Driver.checkEq(clients[0].getServerStatus(), "UP", "server status");
        })
                && step("publish_get", () -> {
                    Driver.check(clients[0].publishConfig(dataId, group, "tls=1"), "publishConfig returned false");
                    Driver.checkGet(clients[0], dataId, group, "tls=1");
                })
                && step("listen", () -> {
                    clients[1].addListener(dataId, group, recorder);
                    Driver.check(clients[0].publishConfig(dataId, group, "tls=2"), "publishConfig returned false");
                    // The listener may first hear the value it started from.
                    String got = recorder.next("tls=2");
                    if ("tls=1".equals(got)) {
                        got = recorder.next("tls=2");
                    }
                    Driver.checkEq(got, "tls=2", "listener content");
                })
                && step("remove", () -> {
                    Driver.check(clients[0].removeConfig(dataId, group), "removeConfig returned false");
                    Driver.checkGet(clients[0], dataId, group, null);
                });
        for (ConfigService c : clients) {
            if (c != null) {
                try {
                    c.shutDown();
                } catch (Throwable ignored) {
                    // exiting anyway
                }
            }
        }
        Driver.say(ok ? "all ok" : "1 failed");
        System.exit(ok ? 0 : 1);
    }

    private static boolean step(String name, Driver.Case c) {
        long start = System.nanoTime();
        try {
            c.run();
            Driver.say("ok " + name + " (" + (System.nanoTime() - start) / 1_000_000 + " ms)");
            return true;
        } catch (Throwable t) {
            Driver.say("FAIL " + name + ": " + t);
            t.printStackTrace();
            return false;
        }
    }
}
