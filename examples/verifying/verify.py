#!/usr/bin/env python3
"""Verifies one notification of a notify step (Standard Webhooks): Python 3, standard library only.

  NOTIFICATION_SECRET=whsec_... WEBHOOK_ID=<webhook-id> WEBHOOK_TIMESTAMP=<webhook-timestamp> \\
    WEBHOOK_SIGNATURE=<webhook-signature> python3 verify.py < body.json

Prints "verified" and exits 0, or "refused: <why>" and exits 1. In a server, call `verify` with the
request's headers and its raw body, before parsing it.
"""
import base64
import hashlib
import hmac
import os
import re
import sys
import time

TOLERANCE_SECONDS = 300


def verify(secret: str, msg_id: str, timestamp: str, signatures: str, body: bytes) -> None:
    """Raises ValueError when the notification is not one of `secret`'s, sent within TOLERANCE_SECONDS of now."""
    if not re.fullmatch(r"[0-9]{1,15}", timestamp) or abs(int(time.time()) - int(timestamp)) > TOLERANCE_SECONDS:
        raise ValueError("webhook-timestamp is not within 5 minutes of now")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()).decode()
    # One "v1,<base64>" per secret the sender signs with; entries of other versions are ignored.
    for entry in signatures.split(" "):
        version, _, given = entry.partition(",")
        if version == "v1" and hmac.compare_digest(given, expected):
            return
    raise ValueError("no v1 signature matches")


if __name__ == "__main__":
    env = os.environ
    try:
        verify(env.get("NOTIFICATION_SECRET", ""), env.get("WEBHOOK_ID", ""), env.get("WEBHOOK_TIMESTAMP", ""), env.get("WEBHOOK_SIGNATURE", ""), sys.stdin.buffer.read())
        print("verified")
    except ValueError as e:
        print(f"refused: {e}")
        sys.exit(1)
