package dev.tacos.spring;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.springframework.cloud.context.environment.EnvironmentChangeEvent;
import org.springframework.context.event.EventListener;
import org.springframework.core.env.Environment;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code GET /values}: what the app sees now, as JSON. */
@RestController
public class ValuesController {
    private final Greeting greeting;
    private final OrdersProperties orders;
    private final Environment environment;
    private final AtomicLong environmentChanges = new AtomicLong();
    private volatile List<String> lastChangedKeys = List.of();

    public ValuesController(Greeting greeting, OrdersProperties orders, Environment environment) {
        this.greeting = greeting;
        this.orders = orders;
        this.environment = environment;
    }

    /** Spring Cloud's refresh publishes the keys that changed. */
    @EventListener
    public void onEnvironmentChange(EnvironmentChangeEvent event) {
        environmentChanges.incrementAndGet();
        lastChangedKeys = new ArrayList<>(event.getKeys());
    }

    @GetMapping("/values")
    public Map<String, Object> values() {
        Map<String, Object> values = new LinkedHashMap<>();
        values.put("greeting", greeting.getGreeting());
        values.put("region", greeting.getRegion());
        values.put("layer", greeting.getLayer());
        values.put("greetingBuiltAtMillis", greeting.getBuiltAtMillis());
        values.put("ordersCurrency", orders.getCurrency());
        values.put("ordersLimit", orders.getLimit());
        values.put("ordersChannels", orders.getChannels());
        // Straight from the environment: the shared config's second key.
        values.put("sharedTimeoutMs", environment.getProperty("shared.timeout-ms"));
        values.put("environmentChanges", environmentChanges.get());
        values.put("lastChangedKeys", lastChangedKeys);
        return values;
    }
}
