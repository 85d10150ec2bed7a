#!/usr/bin/env python3
"""Signs one event for a webhook listener with HMAC and sends it: Python 3.8 or later, the standard
library only.

  LISTENER_URL=<the listener's url> WEBHOOK_SECRET=<its webhook secret> python3 sign_and_send.py < event.json
  WEBHOOK_SECRET=<secret> python3 sign_and_send.py --sign-only <timestamp> <event id> < event.json

The body is read from standard input and signed and sent byte for byte. The signature is
base64url (no padding) of HMAC-SHA256, keyed by the secret string's UTF-8 bytes, over
"{timestamp}.{event id}.{body}"; the event is sent with the current Unix time and a fresh UUID v4.
Prints the request's headers, "=> <status>" and the answer; exits 0 on a 2xx answer, 1 on another,
2 on a usage error. --sign-only prints the signature for the given timestamp and event id and
sends nothing: compare it with the published test vectors (test/fixtures/webhook-hmac.json).
"""
import base64
import hashlib
import hmac
import os
import sys
import time
import urllib.error
import urllib.request
import uuid


def sign(secret: str, timestamp: str, event_id: str, body: bytes) -> str:
    message = f"{timestamp}.{event_id}.".encode("utf-8") + body
    digest = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def send(url: str, secret: str, body: bytes) -> bool:
    """Sends `body` signed now under a fresh event id; answers whether the listener answered 2xx."""
    timestamp = str(int(time.time()))
    event_id = str(uuid.uuid4())
    signed = {
        "Webhook-Timestamp": timestamp,
        "Webhook-Event-Id": event_id,
        "Webhook-Signature": sign(secret, timestamp, event_id, body),
    }
    print(f"POST {url}")
    for name, value in signed.items():
        print(f"{name}: {value}")
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json", **signed})
    try:
        with urllib.request.urlopen(request) as answer:
            status, text = answer.status, answer.read()
    except urllib.error.HTTPError as refusal:  # any answer but a 2xx
        status, text = refusal.code, refusal.read()
    print(f"=> {status}", flush=True)
    sys.stdout.buffer.write(text + b"\n")
    return 200 <= status < 300


def usage() -> None:
    for line in __doc__.split("\n\n")[1].splitlines():  # the usage lines at the top
        print(line.strip(), file=sys.stderr)
    sys.exit(2)


def main() -> None:
    secret = os.environ.get("WEBHOOK_SECRET")
    url = os.environ.get("LISTENER_URL")
    args = sys.argv[1:]
    if not secret:
        usage()
    body = sys.stdin.buffer.read()
    if args[:1] == ["--sign-only"]:
        if len(args) != 3:
            usage()
        print(sign(secret, args[1], args[2], body))
    else:
        if args or not url:
            usage()
        sys.exit(0 if send(url, secret, body) else 1)


if __name__ == "__main__":
    main()
