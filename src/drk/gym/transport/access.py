"""Who may reach `drk gym serve`, and the refusals it answers with.

It is: the start-up rule for binds (`bind_problem`), the per-request rule (`AccessPolicy`), the ASGI guard
that applies it and the body-size limit before any route runs (`Guard`), and the one place refusals are
counted and logged (`Refusals`).
It isn't: the limits on what an admitted request may ask for (`drk.gym.transport.limits`), or TLS (put a terminating
proxy in front when the traffic crosses an untrusted network).

The rules:
- On a loopback bind nothing is required: only this machine can connect.
- Any other bind needs an address allowlist (`--allow`) and/or a bearer token (`--token-env`); without
  either the server does not start, because anyone reaching the port could run code on the evaluator.
- A client whose address is on the allowlist is admitted without a token (that is how KernelGYM's
  token-less trainers connect); any other client needs the token when one is configured (401 without it)
  and is refused outright when only an allowlist is configured (403).
- The client address is the TCP peer; forwarded-for headers are never trusted.
- Tokens are compared in constant time and never logged; a refusal logs the client address and the cause,
  never the request body or headers.
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import threading
from collections import Counter

log = logging.getLogger("drk.gym.transport.server")

OPEN_PATHS = ("/health",)  # answered to anyone, but only with what is not secret (see server.health)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a hostname may resolve to anything: treat it as public


def parse_allow(spec: str | None) -> list:
    """`--allow 10.0.0.0/8,192.168.1.7` -> networks; ValueError names the bad entry."""
    nets = []
    for part in (spec or "").split(","):
        if part.strip():
            try:
                nets.append(ipaddress.ip_network(part.strip(), strict=False))
            except ValueError:
                raise ValueError(f"--allow: {part.strip()!r} is not an address or CIDR range") from None
    return nets


def bind_problem(host: str, allow: list, token: str | None) -> str | None:
    """One line saying why this bind must not start, or None."""
    if is_loopback(host) or allow or token:
        return None
    return (f"refusing to serve on {host}: a non-loopback bind needs --allow CIDR[,CIDR...] and/or "
            "--token-env NAME, since any client that reaches the port can run code on this machine")


class AccessPolicy:
    def __init__(self, allow: list | None = None, token: str | None = None) -> None:
        self.allow = list(allow or [])
        self._token = token.encode() if token else None

    @property
    def open(self) -> bool:
        return not self.allow and self._token is None

    def _allowed_address(self, client: str) -> bool:
        try:
            ip = ipaddress.ip_address(client)
        except ValueError:
            return False
        return any(ip in net for net in self.allow)

    def _token_ok(self, authorization: bytes | None) -> bool:
        if self._token is None or not authorization:
            return False
        scheme, _, given = authorization.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token)

    def check(self, client: str, authorization: bytes | None) -> tuple[int, str, str] | None:
        """None to admit, else (HTTP status, cause, reason)."""
        if self.open or self._allowed_address(client) or self._token_ok(authorization):
            return None
        if self._token is not None:
            return 401, "token", "a valid bearer token is required (Authorization: Bearer ...)"
        return 403, "address", "this client address is not allowed"


class Refusals:
    """Counts refusals by cause (for /metrics) and logs one line for each: client address and cause."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter = Counter()

    def record(self, client: str, cause: str) -> None:
        with self.lock:
            self.counts[cause] += 1
        log.warning("refused client=%s cause=%s", client, cause)

    def snapshot(self) -> dict:
        with self.lock:
            return dict(self.counts)


def client_of(scope) -> str:
    return (scope.get("client") or ("unknown", 0))[0]


async def send_json(send, status: int, body: dict) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class Guard:
    """ASGI middleware: access control, then the body-size limit, before any route runs.

    The body is read here in chunks and refused with 413 as soon as it passes the limit (or at once when
    Content-Length says it will), so no request body is ever held whole beyond the limit; the routes get
    the buffered body replayed. Whether the client passed the access check is left in
    `request.state.drk_authorized` for the open /health route."""

    def __init__(self, app, policy: AccessPolicy, refusals: Refusals, max_body_bytes: int) -> None:
        self.app, self.policy, self.refusals, self.max_body = app, policy, refusals, max_body_bytes

    async def refuse(self, send, client: str, status: int, cause: str, reason: str) -> None:
        self.refusals.record(client, cause)
        await send_json(send, status, {"detail": reason, "cause": cause})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        client = client_of(scope)
        headers = dict(scope.get("headers") or [])
        denied = self.policy.check(client, headers.get(b"authorization"))
        scope.setdefault("state", {})["drk_authorized"] = denied is None
        if denied and scope["path"] not in OPEN_PATHS:
            return await self.refuse(send, client, *denied)
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        body = await self._read_body(receive, headers.get(b"content-length"))
        if body is None:
            return await self.refuse(send, client, 413, "body_too_large",
                                     f"request body over the server's limit of {self.max_body} bytes")
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()  # after the body: disconnect notices come from the server
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    async def _read_body(self, receive, content_length: bytes | None) -> bytes | None:
        """The whole body, or None once it is known to exceed the limit."""
        try:
            if content_length is not None and int(content_length) > self.max_body:
                return None
        except ValueError:
            pass  # not a number: count the bytes as they come
        chunks, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                break
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not msg.get("more_body"):
                break
        return b"".join(chunks)
