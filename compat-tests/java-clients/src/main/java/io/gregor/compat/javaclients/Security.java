package io.gregor.compat.javaclients;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The client security of a secure lab run (compat-tests/run.sh --security),
 * read from the COMPAT_* environment: nothing when COMPAT_SECURITY is unset,
 * SASL_SSL with SCRAM for sasl_ssl, SSL with a client certificate for mtls.
 * The CA and the client's key and certificate are PEM files, which the
 * client's PEM stores read as they are.
 */
final class Security {
    /** The scenarios a secure run covers: produce, consume and groups. */
    static final Pattern SECURE_SCENARIOS = Pattern.compile(
            "produce-consume-.*|idempotent-producer|consume-from-offset|group-commit-resume|group-rebalance");

    private Security() {
    }

    /** The run's security, "" for none. */
    static String mode() {
        return System.getenv().getOrDefault("COMPAT_SECURITY", "");
    }

    /** Whether a scenario runs under the run's security. */
    static boolean covers(String scenario) {
        return mode().isEmpty() || SECURE_SCENARIOS.matcher(scenario).matches();
    }

    /** Adds the security configs of the run to a client's config. */
    static void apply(Map<String, Object> conf) {
        switch (mode()) {
            case "" -> {
            }
            case "sasl_ssl" -> {
                conf.put("security.protocol", "SASL_SSL");
                trustCA(conf);
                conf.put("sasl.mechanism", env("COMPAT_SASL_MECHANISM"));
                conf.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
                        + " username=\"" + env("COMPAT_SASL_USER") + "\" password=\"" + env("COMPAT_SASL_PASSWORD") + "\";");
            }
            case "mtls" -> {
                conf.put("security.protocol", "SSL");
                trustCA(conf);
                conf.put("ssl.keystore.type", "PEM");
                conf.put("ssl.keystore.key", read(env("COMPAT_CLIENT_KEY")));
                conf.put("ssl.keystore.certificate.chain", read(env("COMPAT_CLIENT_CERT")));
            }
            default -> throw new IllegalStateException("COMPAT_SECURITY " + mode() + " is not sasl_ssl or mtls");
        }
    }

    private static void trustCA(Map<String, Object> conf) {
        conf.put("ssl.truststore.type", "PEM");
        conf.put("ssl.truststore.location", env("COMPAT_CA"));
    }

    private static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException(name + " is not set for COMPAT_SECURITY " + mode());
        }
        return v;
    }

    private static String read(String path) {
        try {
            return Files.readString(Path.of(path));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
