"""A real HTTP file server for remote-read tests: Range and If-Match support, request and byte
counts, and the misbehaviours remote reads must type (no Range support, a file replaced
between requests, responses cut short, no answer at all)."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Served:
    """What the server holds and how it behaves; ``requests`` and ``bytes`` count every GET and
    HEAD and the body bytes sent."""

    files: dict[str, bytes] = field(default_factory=dict)
    ranges: bool = True  # False: answer a ranged GET with 200 and the whole body
    replace_after: int | None = None  # replace every file (new bytes, new ETag) after this many GETs
    cut_after: int | None = None  # from this many GETs on, send half the body and close
    delay: float = 0.0  # seconds each response waits (network latency, for measurements)
    stall: bool = False  # accept requests and answer none until the server closes
    required: dict[str, str] = field(default_factory=dict)  # headers every request must carry, else 403
    requests: int = 0
    bytes: int = 0
    log: list[tuple[str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)

    def reset(self) -> None:
        with self.lock:
            self.requests, self.bytes, self.log = 0, 0, []


def _etag(data: bytes) -> str:
    return '"' + hashlib.sha1(data).hexdigest() + '"'


def make_handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms stall

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def do_GET(self) -> None:
            self._serve(body=True)

        def _serve(self, body: bool) -> None:
            time.sleep(served.delay)
            with served.lock:
                served.requests += 1
                served.log.append((self.command, self.headers.get("Range")))
                gets = sum(1 for c, _ in served.log if c == "GET")
                if body and served.replace_after is not None and gets > served.replace_after:
                    served.files = {k: bytes(255 - b for b in v[:64]) + v[64:] for k, v in served.files.items()}
                    served.replace_after = None
                data = served.files.get(self.path.partition("?")[0])  # a query (a signed URL) names no file
                cut = body and served.cut_after is not None and gets > served.cut_after
            if served.stall:
                served.closing.wait()
                self.close_connection = True
                return
            if any(self.headers.get(k) != v for k, v in served.required.items()):
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            etag = _etag(data)
            match = self.headers.get("If-Match")
            if match is not None and match != etag:
                self.send_response(412)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end, status = 0, len(data), 200
            spec = self.headers.get("Range")
            if spec and served.ranges and body:
                first, _, last = spec.removeprefix("bytes=").partition("-")
                start, end, status = int(first), min(len(data), int(last) + 1), 206
            self.send_response(status)
            self.send_header("Content-Length", str(end - start))
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "bytes" if served.ranges else "none")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            self.end_headers()
            if not body:
                return
            chunk = data[start:end]
            if cut:
                chunk = chunk[: len(chunk) // 2]
                self.close_connection = True
            with served.lock:  # counted before the client can see the bytes
                served.bytes += len(chunk)
            self.wfile.write(chunk)

    return Handler


class FileServer:
    """``Served`` on a free localhost port, on a daemon thread, until ``close``."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(served))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def close(self) -> None:
        self.served.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()
