package dev.tacos.spring;

import java.util.ArrayList;
import java.util.List;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Bound from the extension config 订单服务配置.yaml in group 支付组 and
 * rebound by Spring Cloud when it changes.
 */
@ConfigurationProperties(prefix = "orders")
public class OrdersProperties {
    private String currency;
    private int limit;
    private List<String> channels = new ArrayList<>();

    public String getCurrency() {
        return currency;
    }

    public void setCurrency(String currency) {
        this.currency = currency;
    }

    public int getLimit() {
        return limit;
    }

    public void setLimit(int limit) {
        this.limit = limit;
    }

    public List<String> getChannels() {
        return channels;
    }

    public void setChannels(List<String> channels) {
        this.channels = channels;
    }
}
