"""Who may talk to the AG-UI server: token, trusted hosts, origins, JSON only.

The checks Jupyter's own server makes, as small pure functions and one
:func:`admit` that applies them to a request in this order, before any body
is read or any agent built:

1. ``Host:`` must name an allowed host (DNS rebinding: a page on
   ``evil.example`` that resolves to 127.0.0.1 sends ``Host: evil.example``);
2. a browser's ``Origin:`` must be the server's own origin or an allowed one;
3. the caller must authenticate: ``Authorization: Bearer <token>`` (or
   ``token <token>``) compared in constant time, or the server's auth hook;
4. the body must be ``Content-Type: application/json`` (a cross-origin
   ``text/plain`` POST is a "simple request" browsers send without asking).
A refusal is a :class:`Denied` (HTTP status, code, message).
"""

from __future__ import annotations

import hmac
import inspect
import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "LOCAL_HOSTS",
    "Access",
    "AuthHook",
    "Denied",
    "admit",
    "host_allowed",
    "host_name",
    "is_json",
    "origin_allowed",
    "token_of",
]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""Host names a loopback server answers to by default (as Jupyter's ``local_hostnames``)."""

AuthHook = Callable[[Any], "str | None | Awaitable[str | None]"]
"""``(starlette.requests.Request) -> principal | None`` (sync or async);
``None`` refuses the request with 401."""


class Denied(Exception):
    """A request refused before the agent runs.

    Attributes:
        status: the HTTP status (401, 403, 413, 415...).
        code: a short machine-readable reason (``bad_host``, ``bad_origin``...).
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class Access:
    """The server's access rules.

    Attributes:
        token: the shared secret (``None``: no token; then ``auth`` decides,
            or, with neither, every caller is the principal ``"anonymous"``).
        auth: a hook naming the principal of a request (replaces the token).
        allowed_hosts: host names accepted in ``Host:`` (``"*"``: any).
        allowed_origins: browser origins accepted besides the server's own
            (``"https://app.example:8443"``; ``"*"``: any).
    """

    token: str | None = None
    auth: AuthHook | None = None
    allowed_hosts: frozenset[str] = LOCAL_HOSTS
    allowed_origins: frozenset[str] = field(default_factory=frozenset)

    @staticmethod
    def hosts(extra: Iterable[str] | None) -> frozenset[str]:
        """:data:`LOCAL_HOSTS` plus ``extra`` (lower-cased)."""
        return LOCAL_HOSTS | {h.lower().strip("[]") for h in (extra or ())}


def host_name(host_header: str) -> str:
    """The host part of a ``Host:`` value, lower-case, without port or IPv6 brackets."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def host_allowed(host_header: str | None, allowed: frozenset[str]) -> bool:
    """Whether ``Host:`` names an allowed host (a missing header is refused)."""
    if not host_header:
        return False
    if "*" in allowed:
        return True
    name = host_name(host_header)
    if name in allowed:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback and "127.0.0.1" in allowed
    except ValueError:
        return False


def origin_allowed(origin: str | None, host_header: str | None, scheme: str, allowed: frozenset[str]) -> bool:
    """Whether a request's ``Origin:`` may call: none (not a browser), the
    server's own origin (``scheme://<Host:>``), or one of ``allowed``."""
    if origin is None:
        return True
    origin = origin.strip().lower()
    if "*" in allowed or origin in {o.lower().rstrip("/") for o in allowed}:
        return True
    if origin == "null" or not host_header:
        return False
    parts = urlsplit(origin)
    return parts.scheme == scheme and parts.netloc == host_header.strip().lower()


def token_of(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <t>`` or ``token <t>`` (Jupyter's form)."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        return value.strip()
    return None


def is_json(content_type: str | None) -> bool:
    """Whether ``Content-Type:`` is ``application/json`` (parameters allowed)."""
    return bool(content_type) and content_type.split(";", 1)[0].strip().lower() == "application/json"  # type: ignore[union-attr]


async def admit(request: Any, access: Access, *, needs_json: bool = True) -> str:
    """Apply the access rules to a request (see the module docstring).

    Args:
        request: a ``starlette.requests.Request``.
        access: the rules.
        needs_json: check ``Content-Type`` (requests with a body).

    Returns:
        the principal: the auth hook's answer, ``"token"`` for the token
        holder, ``"anonymous"`` when neither is configured.

    Raises:
        Denied: 403 ``bad_host`` / ``bad_origin``, 401 ``unauthorized``,
            415 ``not_json``.
    """
    headers = request.headers
    host = headers.get("host")
    if not host_allowed(host, access.allowed_hosts):
        raise Denied(403, "bad_host", f"Host {str(host)[:100]!r} is not served here.")
    if not origin_allowed(headers.get("origin"), host, request.url.scheme, access.allowed_origins):
        raise Denied(403, "bad_origin", f"Origin {headers.get('origin', '')[:100]!r} may not call this server.")
    principal: str | None
    if access.auth is not None:
        answer = access.auth(request)
        principal = await answer if inspect.isawaitable(answer) else answer
        if not principal:
            raise Denied(401, "unauthorized", "The request is not authenticated.")
    elif access.token is not None:
        given = token_of(headers.get("authorization"))
        if given is None or not hmac.compare_digest(given.encode(), access.token.encode()):
            raise Denied(401, "unauthorized", "A valid token is required (Authorization: Bearer <token>).")
        principal = "token"
    else:
        principal = "anonymous"
    if needs_json and not is_json(headers.get("content-type")):
        raise Denied(415, "not_json", "The body must be sent as Content-Type: application/json.")
    return str(principal)
