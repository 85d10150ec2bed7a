// Verifies one notification of a notify step (Standard Webhooks): Java 11 or later, the JDK only,
// run from source as one file.
//
//   NOTIFICATION_SECRET=whsec_... WEBHOOK_ID=<webhook-id> WEBHOOK_TIMESTAMP=<webhook-timestamp> \
//     WEBHOOK_SIGNATURE=<webhook-signature> java Verify.java < body.json
//
// Prints "verified" and exits 0, or "refused: <why>" and exits 1. In a server, call `verify` with
// the request's headers and its raw body, before parsing it.
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class Verify {
  static final long TOLERANCE_SECONDS = 300;

  /** Throws when the notification is not one of {@code secret}'s, sent within TOLERANCE_SECONDS of now. */
  static void verify(String secret, String id, String timestamp, String signatures, byte[] body) throws Exception {
    if (!timestamp.matches("[0-9]{1,15}") || Math.abs(System.currentTimeMillis() / 1000 - Long.parseLong(timestamp)) > TOLERANCE_SECONDS) {
      throw new IllegalArgumentException("webhook-timestamp is not within 5 minutes of now");
    }
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.replaceFirst("^whsec_", "")), "HmacSHA256"));
    mac.update((id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
    byte[] expected = mac.doFinal(body);
    // One "v1,<base64>" per secret the sender signs with; entries of other versions are ignored.
    for (String entry : signatures.split(" ")) {
      if (!entry.startsWith("v1,")) continue;
      byte[] given;
      try {
        given = Base64.getDecoder().decode(entry.substring(3));
      } catch (IllegalArgumentException notBase64) {
        continue;
      }
      if (MessageDigest.isEqual(given, expected)) return;
    }
    throw new IllegalArgumentException("no v1 signature matches");
  }

  public static void main(String[] args) throws Exception {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    System.in.transferTo(body);
    try {
      verify(env("NOTIFICATION_SECRET"), env("WEBHOOK_ID"), env("WEBHOOK_TIMESTAMP"), env("WEBHOOK_SIGNATURE"), body.toByteArray());
      System.out.println("verified");
    } catch (IllegalArgumentException e) {
      System.out.println("refused: " + e.getMessage());
      System.exit(1);
    }
  }

  static String env(String name) {
    String value = System.getenv(name);
    return value == null ? "" : value;
  }
}
