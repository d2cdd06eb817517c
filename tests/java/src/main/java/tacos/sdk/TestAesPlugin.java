package tacos.sdk;

import com.alibaba.nacos.plugin.encryption.spi.EncryptionPluginService;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * A config encryption plugin (Nacos' EncryptionPluginService SPI, loaded
 * through META-INF/services) for dataIds cipher-aes-*: AES-GCM with a fresh
 * data key per publish; the data key travels encrypted with a fixed master
 * key (a test key, not a secret). No implementation of this SPI is on Maven
 * Central (nacos-group/nacos-plugin's nacos-aes-encryption-plugin is not
 * published), so the test brings its own; what is tested is the client's
 * filter chain and the server keeping encryptedDataKey with the content.
 */
public final class TestAesPlugin implements EncryptionPluginService {

    private static final byte[] MASTER = "tacos-java-test-master-key-32by!".getBytes(StandardCharsets.UTF_8);
    private static final SecureRandom RANDOM = new SecureRandom();

    static String seal(byte[] key, byte[] plain) {
        try {
            byte[] iv = new byte[12];
            RANDOM.nextBytes(iv);
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, iv));
            byte[] sealed = c.doFinal(plain);
            return Base64.getEncoder().encodeToString(ByteBuffer.allocate(12 + sealed.length).put(iv).put(sealed)
                    .array());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static byte[] open(byte[] key, String sealed) {
        try {
            byte[] all = Base64.getDecoder().decode(sealed);
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, all, 0, 12));
            return c.doFinal(all, 12, all.length - 12);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Decrypts content stored on the server with its encrypted data key. */
    static String decryptWith(String encryptedDataKey, String content) {
        byte[] dataKey = Base64.getDecoder().decode(new String(open(MASTER, encryptedDataKey),
                StandardCharsets.UTF_8));
        return new String(open(dataKey, content), StandardCharsets.UTF_8);
    }

    @Override
    public String encrypt(String secretKey, String content) {
        return seal(Base64.getDecoder().decode(secretKey), content.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String decrypt(String secretKey, String content) {
        return new String(open(Base64.getDecoder().decode(secretKey), content), StandardCharsets.UTF_8);
    }

    @Override
    public String generateSecretKey() {
        byte[] key = new byte[16];
        RANDOM.nextBytes(key);
        return Base64.getEncoder().encodeToString(key);
    }

    @Override
    public String algorithmName() {
        return "aes";
    }

    @Override
    public String encryptSecretKey(String secretKey) {
        return seal(MASTER, secretKey.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String decryptSecretKey(String secretKey) {
        return new String(open(MASTER, secretKey), StandardCharsets.UTF_8);
    }
}
