package dev.tacos.spring;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

/**
 * A Spring Boot 3 app that takes its settings from Tacos through Spring Cloud
 * Alibaba's Nacos config starter ({@code spring.config.import=nacos:...}, see
 * application.yaml) and shows them at {@code GET /values}.
 */
@SpringBootApplication
@EnableConfigurationProperties(OrdersProperties.class)
public class TacosSpringApp {
    public static void main(String[] args) {
        SpringApplication.run(TacosSpringApp.class, args);
    }
}
