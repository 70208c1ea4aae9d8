"""Secrets: login tokens, session cookies and CSRF tokens.

Every secret is 32 random bytes from :mod:`secrets` (URL-safe text). The store keeps only
the SHA-256 of login tokens and session cookies, so a copy of the database lets nobody log
in; a lost token is replaced by issuing a new one (``campaign add-assessor`` again). A
slow password hash is not needed: these are random, not chosen by people.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_secret() -> str:
    """A fresh random secret (43 URL-safe characters)."""
    return secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """The hex SHA-256 of a secret, as the store keeps it."""
    return hashlib.sha256(secret.encode("utf-8", errors="replace")).hexdigest()


def same(a: str | None, b: str | None) -> bool:
    """Constant-time equality of two secrets (False when either is missing)."""
    if not a or not b:
        return False
    return hmac.compare_digest(a.encode("utf-8", errors="replace"),
                               b.encode("utf-8", errors="replace"))
