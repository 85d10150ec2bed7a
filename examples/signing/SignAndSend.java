// Signs one event for a webhook listener with HMAC and sends it: Java 11 or later, the JDK only,
// run from source as one file.
//
//   LISTENER_URL=<the listener's url> WEBHOOK_SECRET=<its webhook secret> java SignAndSend.java < event.json
//   WEBHOOK_SECRET=<secret> java SignAndSend.java --sign-only <timestamp> <event id> < event.json
//
// The body is read from standard input and signed and sent byte for byte. The signature is
// base64url (no padding) of HMAC-SHA256, keyed by the secret string's UTF-8 bytes, over
// "{timestamp}.{event id}.{body}"; the event is sent with the current Unix time and a fresh UUID v4.
// Prints the request's headers, "=> <status>" and the answer; exits 0 on a 2xx answer, 1 on another,
// 2 on a usage error. --sign-only prints the signature for the given timestamp and event id and
// sends nothing: compare it with the published test vectors (test/fixtures/webhook-hmac.json).
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class SignAndSend {
  static String sign(String secret, String timestamp, String eventId, byte[] body) throws GeneralSecurityException {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
    mac.update((timestamp + "." + eventId + ".").getBytes(StandardCharsets.UTF_8));
    return Base64.getUrlEncoder().withoutPadding().encodeToString(mac.doFinal(body));
  }

  /** Sends {@code body} signed now under a fresh event id; answers whether the listener answered 2xx. */
  static boolean send(String url, String secret, byte[] body) throws GeneralSecurityException, IOException, InterruptedException {
    String timestamp = Long.toString(System.currentTimeMillis() / 1000);
    String eventId = UUID.randomUUID().toString(); // a version 4 UUID
    Map<String, String> signed = new LinkedHashMap<>();
    signed.put("Webhook-Timestamp", timestamp);
    signed.put("Webhook-Event-Id", eventId);
    signed.put("Webhook-Signature", sign(secret, timestamp, eventId, body));
    System.out.println("POST " + url);
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).header("Content-Type", "application/json");
    for (Map.Entry<String, String> header : signed.entrySet()) {
      System.out.println(header.getKey() + ": " + header.getValue());
      request.header(header.getKey(), header.getValue());
    }
    // HTTP/1.1: over plain http, Java's HTTP/2 first asks the listener to upgrade (h2c), for nothing.
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<byte[]> answer = client.send(request.POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofByteArray());
    System.out.println("=> " + answer.statusCode());
    System.out.write(answer.body()); // as received, whatever this machine's default charset
    System.out.println();
    return answer.statusCode() >= 200 && answer.statusCode() < 300;
  }

  static void usage() {
    System.err.println("LISTENER_URL=<the listener's url> WEBHOOK_SECRET=<its webhook secret> java SignAndSend.java < event.json");
    System.err.println("WEBHOOK_SECRET=<secret> java SignAndSend.java --sign-only <timestamp> <event id> < event.json");
    System.exit(2);
  }

  public static void main(String[] args) throws Exception {
    String secret = System.getenv("WEBHOOK_SECRET");
    String url = System.getenv("LISTENER_URL");
    if (secret == null || secret.isEmpty()) usage();
    byte[] body = System.in.readAllBytes();
    if (args.length > 0 && args[0].equals("--sign-only")) {
      if (args.length != 3) usage();
      System.out.println(sign(secret, args[1], args[2], body));
    } else {
      if (args.length != 0 || url == null || url.isEmpty()) usage();
      System.exit(send(url, secret, body) ? 0 : 1);
    }
  }
}
