package tacos.sdk;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.StringJoiner;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The server's HTTP API, for what the Java client cannot do itself (create
 * a namespace, publish a gray by tag) and to check what the server holds.
 * Logs in with POST /nacos/v1/auth/login and sends the accessToken.
 */
final class Http {

    /** A status, body and headers. */
    static final class Answer {
        final int status;
        final String body;
        final HttpResponse<String> response;

        Answer(HttpResponse<String> response) {
            this.status = response.statusCode();
            this.body = response.body();
            this.response = response;
        }

        String header(String name) {
            return response.headers().firstValue(name).orElse(null);
        }

        @Override
        public String toString() {
            return status + " " + body;
        }
    }

    private final String base;
    private final String user;
    private final String password;
    // HTTP/1.1: Java's default (HTTP/2) asks for an h2c upgrade, and Tacos
    // (actix-web) answers such a request with "connection: upgrade" and
    // closes the connection, so the next request on it fails.
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).proxy(HttpClient.Builder.NO_PROXY).build();
    private String token;

    Http(String server, String user, String password) {
        this.base = "http://" + server;
        this.user = user;
        this.password = password;
    }

    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    static String form(Map<String, String> params) {
        StringJoiner j = new StringJoiner("&");
        params.forEach((k, v) -> j.add(enc(k) + "=" + enc(v)));
        return j.toString();
    }

    synchronized String token() throws Exception {
        if (token == null) {
            HttpRequest login = HttpRequest.newBuilder(URI.create(base + "/nacos/v1/auth/login"))
                    .timeout(Duration.ofSeconds(10))
                    .header("Content-Type", "application/x-www-form-urlencoded")
                    .POST(HttpRequest.BodyPublishers.ofString(form(Map.of("username", user, "password", password))))
                    .build();
            HttpResponse<String> r = client.send(login, HttpResponse.BodyHandlers.ofString());
            Matcher m = Pattern.compile("\"accessToken\"\\s*:\\s*\"([^\"]+)\"").matcher(r.body());
            if (r.statusCode() != 200 || !m.find()) {
                throw new AssertionError("login as " + user + " failed: " + r.statusCode() + " " + r.body());
            }
            token = m.group(1);
        }
        return token;
    }

    private String withToken(String pathAndQuery) throws Exception {
        return base + pathAndQuery + (pathAndQuery.contains("?") ? "&" : "?") + "accessToken=" + enc(token());
    }

    private Answer send(HttpRequest.Builder b) throws Exception {
        return new Answer(client.send(b.timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8)));
    }

    Answer get(String pathAndQuery) throws Exception {
        return send(HttpRequest.newBuilder(URI.create(withToken(pathAndQuery))).GET());
    }

    Answer post(String path, Map<String, String> params) throws Exception {
        return send(HttpRequest.newBuilder(URI.create(withToken(path)))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form(params))));
    }

    Answer delete(String pathAndQuery) throws Exception {
        return send(HttpRequest.newBuilder(URI.create(withToken(pathAndQuery))).DELETE());
    }

    /** GET /nacos/v1/cs/configs (with a tag parameter when given). */
    Answer getConfig(String dataId, String group, String tenant, String tag) throws Exception {
        Map<String, String> q = new LinkedHashMap<>();
        q.put("dataId", dataId);
        q.put("group", group);
        q.put("tenant", tenant);
        if (tag != null) {
            q.put("tag", tag);
        }
        return get("/nacos/v1/cs/configs?" + form(q));
    }

    /** POST /nacos/v1/cs/configs with tag: the gray tag_{tag}. */
    Answer publishGray(String dataId, String group, String content, String tag) throws Exception {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("dataId", dataId);
        f.put("group", group);
        f.put("content", content);
        f.put("tag", tag);
        return post("/nacos/v1/cs/configs", f);
    }

    /** POST /nacos/v1/cs/configs with the betaIps header: the beta for those IPs. */
    Answer publishBeta(String dataId, String group, String content, String betaIps) throws Exception {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("dataId", dataId);
        f.put("group", group);
        f.put("content", content);
        return send(HttpRequest.newBuilder(URI.create(withToken("/nacos/v1/cs/configs")))
                .header("Content-Type", "application/x-www-form-urlencoded").header("betaIps", betaIps)
                .POST(HttpRequest.BodyPublishers.ofString(form(f))));
    }

    /** DELETE /nacos/v1/cs/configs?beta=true: stops the beta. */
    Answer deleteBeta(String dataId, String group) throws Exception {
        return delete("/nacos/v1/cs/configs?" + form(Map.of("dataId", dataId, "group", group, "beta", "true")));
    }

    /** DELETE /nacos/v1/cs/configs?tag=: stops the gray tag_{tag}. */
    Answer deleteGray(String dataId, String group, String tag) throws Exception {
        return delete("/nacos/v1/cs/configs?" + form(Map.of("dataId", dataId, "group", group, "tag", tag)));
    }

    /** POST /nacos/v1/console/namespaces. */
    Answer createNamespace(String id, String name) throws Exception {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("customNamespaceId", id);
        f.put("namespaceName", name);
        f.put("namespaceDesc", "created by the Java SDK test");
        return post("/nacos/v1/console/namespaces", f);
    }
}
