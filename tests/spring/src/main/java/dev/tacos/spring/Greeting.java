package dev.tacos.spring;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.cloud.context.config.annotation.RefreshScope;
import org.springframework.stereotype.Component;

/**
 * A refresh-scoped bean: Spring Cloud builds it anew after a refresh, so its
 * {@code @Value} fields follow the configs in Tacos.
 */
@Component
@RefreshScope
public class Greeting {
    /** From the main config (tacos-spring-app.yaml). */
    @Value("${app.greeting}")
    private String greeting;

    /** From the shared config (shared-common.properties in SHARED_GROUP). */
    @Value("${shared.region}")
    private String region;

    /** Defined by all three configs: the import declared last wins. */
    @Value("${app.layer}")
    private String layer;

    /** When this instance was built (a refresh builds a new one). */
    private final long builtAtMillis = System.currentTimeMillis();

    public String getGreeting() {
        return greeting;
    }

    public String getRegion() {
        return region;
    }

    public String getLayer() {
        return layer;
    }

    public long getBuiltAtMillis() {
        return builtAtMillis;
    }
}
