"""The Connect protocol's JSON encoding over http.client: unary calls and server streams."""
from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
import urllib.parse
from typing import Any, Callable, Dict, Iterator, Optional

from .errors import ERROR_KIND_HEADER, StintError, UnavailableError, new_error

_HTTP_CODES = {400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied", 404: "unimplemented",
               408: "deadline_exceeded", 409: "aborted", 429: "unavailable", 502: "unavailable",
               503: "unavailable", 504: "unavailable"}


def duration(seconds: Optional[float]) -> Optional[str]:
    """A duration in seconds as the API's JSON writes it ("1.5s"); None stays None."""
    if seconds is None:
        return None
    text = f"{seconds:.9f}".rstrip("0").rstrip(".")
    return (text or "0") + "s"


class Transport:
    """Calls a stint server. One keep-alive connection per thread; safe for concurrent use."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 75.0) -> None:
        parsed = urllib.parse.urlsplit(url or "")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"stint: url {url!r}: expected http://HOST:PORT or https://HOST:PORT")
        self._https = parsed.scheme == "https"
        self._host = parsed.netloc
        self._prefix = parsed.path.rstrip("/")
        self._timeout = timeout
        self._headers = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._local = threading.local()
        self._url, self._token = url, token
        self._all: "list[http.client.HTTPConnection]" = []
        self._all_lock = threading.Lock()
        self._interrupted = False

    def clone(self) -> "Transport":
        """A transport to the same server with connections of its own (so interrupt() ends only its calls)."""
        return Transport(self._url, self._token, self._timeout)

    def interrupt(self) -> None:
        """Ends the calls in flight on this transport's connections (they fail with UnavailableError)."""
        self._interrupted = True
        with self._all_lock:
            conns = list(self._all)
        for c in conns:
            if c.sock is not None:
                try:
                    c.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, timeout=timeout)

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect(self._timeout)
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            with self._all_lock:
                if conn in self._all:
                    self._all.remove(conn)

    def call(self, method: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """Calls stint.v1.<method> ("JobService/GetJob") with a JSON body; returns the JSON reply."""
        data = json.dumps(body, separators=(",", ":")).encode()
        path = f"{self._prefix}/stint.v1.{method}"
        for tries in (1, 2):
            reused = getattr(self._local, "conn", None) is not None
            conn = self._conn()
            try:
                conn.request("POST", path, body=data, headers=self._headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self._drop()
                if reused and tries == 1 and not self._interrupted:
                    continue  # a kept-alive connection the server had closed: nothing was sent
                raise UnavailableError(f"{method}: {e}", "unavailable") from e
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                raise UnavailableError(f"{method}: {e}", "unavailable") from e
            if resp.status == 200:
                return json.loads(raw) if raw else {}
            raise _error_of(resp.status, resp.getheader(ERROR_KIND_HEADER, ""), raw)
        raise AssertionError("unreachable")

    def stream(self, method: str, body: Dict[str, Any], on_connect: Optional[Callable[[http.client.HTTPConnection], None]] = None) -> Iterator[Dict[str, Any]]:
        """Calls a server-streaming method and yields its messages until the stream ends.

        The connection blocks without a timeout; on_connect receives it, so
        another thread can end the stream with close().
        """
        payload = json.dumps(body).encode()
        headers = dict(self._headers, **{"Content-Type": "application/connect+json"})
        conn = self._connect(None)  # type: ignore[arg-type]
        if on_connect:
            on_connect(conn)
        try:
            conn.request("POST", f"{self._prefix}/stint.v1.{method}", body=struct.pack(">BI", 0, len(payload)) + payload, headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                raise _error_of(resp.status, resp.getheader(ERROR_KIND_HEADER, ""), resp.read())
            while True:
                head = resp.read(5)
                if len(head) < 5:
                    raise UnavailableError(f"{method}: the stream ended without its end message", "unavailable")
                flags, size = struct.unpack(">BI", head)
                msg = json.loads(resp.read(size) or b"{}")
                if flags & 0x02:
                    err = msg.get("error")
                    if err:
                        kind = ((msg.get("metadata") or {}).get(ERROR_KIND_HEADER) or [""])[0]
                        raise new_error(err.get("message", ""), err.get("code", "unknown"), kind)
                    return
                yield msg
        except (OSError, http.client.HTTPException) as e:
            raise UnavailableError(f"{method}: {e}", "unavailable") from e
        finally:
            conn.close()

    def close(self) -> None:
        """Closes every connection of this transport (a call in flight on one fails)."""
        with self._all_lock:
            conns, self._all = self._all, []
        for c in conns:
            c.close()
        self._local = threading.local()


def _error_of(status: int, kind: str, raw: bytes) -> StintError:
    try:
        body = json.loads(raw)
        return new_error(body.get("message", ""), body.get("code") or _HTTP_CODES.get(status, "unknown"), kind)
    except (ValueError, AttributeError):
        return new_error(raw.decode(errors="replace")[:500] or f"HTTP {status}", _HTTP_CODES.get(status, "unknown"), kind)


__all__ = ["Transport", "duration"]
