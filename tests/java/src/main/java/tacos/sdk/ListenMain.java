package tacos.sdk;

import com.alibaba.nacos.api.NacosFactory;
import com.alibaba.nacos.api.PropertyKeyConst;
import com.alibaba.nacos.api.config.ConfigService;
import com.alibaba.nacos.api.config.listener.AbstractListener;
import com.alibaba.nacos.common.remote.client.Connection;
import com.alibaba.nacos.common.remote.client.ConnectionEventListener;
import com.alibaba.nacos.common.remote.client.RpcClient;
import com.alibaba.nacos.common.remote.client.RpcClientFactory;

import java.io.File;
import java.io.InputStream;
import java.time.Instant;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * A long-running listener of the official Java client, for tests that
 * fail nodes under it (tests/sdk_java.rs, tests/failover.rs):
 *
 * <pre>
 * listen SERVERS KEY WORKDIR [--user U --password P] [--group G]
 * </pre>
 *
 * SERVERS is a comma-separated list of host:HTTP-port (gRPC on HTTP port +
 * 1000). The client listens on KEY (DEFAULT_GROUP unless --group) and prints
 * one line per event on stdout, flushed at once (the lines of
 * tests/sdk/python_grpc_listener.py, plus the connection's):
 *
 * <pre>
 * CONNECTED host:port     the client's gRPC connection is up to this server
 *                         (HTTP address as listed; also printed once for the
 *                         server it is on when READY is printed)
 * DISCONNECTED host:port  that connection is gone
 * READY                   the listener is added and the client connected
 *                         (or 30 s passed without a connection)
 * FIRED content           the listener fired with this content (a null
 *                         content, a delete, as FIRED with nothing after it)
 * </pre>
 *
 * stderr gets each of these lines too, prefixed by an ISO-8601 timestamp
 * (the client's own log lines go there as well). It runs until its stdin
 * closes. The client's snapshot dir is WORKDIR (unless JM.SNAPSHOT.PATH is
 * set).
 */
public final class ListenMain {

    private static final Set<RpcClient> WATCHED = Collections.newSetFromMap(new IdentityHashMap<>());

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
        System.err.println(Instant.now() + " " + line);
        System.err.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            Driver.usage();
        }
        String servers = args[1];
        String key = args[2];
        String workdir = args[3];
        Map<String, String> o = Driver.options(args, 4);
        if (System.getProperty("JM.SNAPSHOT.PATH") == null) {
            System.setProperty("JM.SNAPSHOT.PATH", new File(workdir).getAbsolutePath());
        }
        Properties p = new Properties();
        p.setProperty(PropertyKeyConst.SERVER_ADDR, servers);
        if (o.containsKey("user")) {
            p.setProperty(PropertyKeyConst.USERNAME, o.get("user"));
            p.setProperty(PropertyKeyConst.PASSWORD, o.getOrDefault("password", ""));
        }
        String group = o.getOrDefault("group", Driver.GROUP);
        ConfigService service = NacosFactory.createConfigService(p);
        service.addListener(key, group, new AbstractListener() {
            @Override
            public void receiveConfigInfo(String content) {
                say("FIRED " + (content == null ? "" : content));
            }
        });
        // The config client's gRPC connection(s), made when it starts or on
        // its first listen.
        long deadline = System.currentTimeMillis() + 30_000;
        while (watchClients() == 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        // READY once connected (or after the bound: the servers may be down).
        while (!anyRunning() && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        say("READY");
        Thread watcher = new Thread(() -> {
            // Clients made later (more than 3,000 keys per connection) are not
            // this tool's case, but pick them up anyway.
            while (true) {
                watchClients();
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        watcher.setDaemon(true);
        watcher.start();
        InputStream in = System.in;
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
            // until stdin closes
        }
        try {
            service.shutDown();
        } catch (Throwable ignored) {
            // leaving anyway
        }
        System.exit(0);
    }

    /** Registers a connection listener on every RPC client not yet watched; returns how many are watched. */
    static int watchClients() {
        for (Map.Entry<String, RpcClient> e : RpcClientFactory.getAllClientEntries()) {
            RpcClient client = e.getValue();
            synchronized (WATCHED) {
                if (!WATCHED.add(client)) {
                    continue;
                }
            }
            client.registerConnectionListener(new ConnectionEventListener() {
                @Override
                public void onConnected(Connection connection) {
                    say("CONNECTED " + addressOf(connection));
                }

                @Override
                public void onDisConnect(Connection connection) {
                    say("DISCONNECTED " + addressOf(connection));
                }
            });
            if (client.isRunning() && client.getCurrentServer() != null) {
                say("CONNECTED " + client.getCurrentServer().getAddress());
            }
        }
        synchronized (WATCHED) {
            return WATCHED.size();
        }
    }

    static boolean anyRunning() {
        synchronized (WATCHED) {
            return WATCHED.stream().anyMatch(RpcClient::isRunning);
        }
    }

    static String addressOf(Connection connection) {
        try {
            java.lang.reflect.Field f = Connection.class.getDeclaredField("serverInfo");
            f.setAccessible(true);
            Object info = f.get(connection);
            return info instanceof RpcClient.ServerInfo ? ((RpcClient.ServerInfo) info).getAddress() : "?";
        } catch (ReflectiveOperationException e) {
            return "?";
        }
    }
}
