"""A local S3 API for remote-read tests: moto's server on a free port, counting what it sends,
and stalling on demand."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from werkzeug.serving import make_server


@dataclass
class S3Counts:
    """GETs of objects (ranged or whole) and the body bytes they sent."""

    gets: int = 0
    bytes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.gets, self.bytes = 0, 0


class S3Server:
    """moto's S3 API (its server mode) on a free localhost port, on a daemon thread, until ``close``."""

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app

        self.counts = S3Counts()
        self.stall = False  # True: GETs of objects get no answer until ``close``
        self.closing = threading.Event()

        class Quiet(MotoRequestHandler):
            def log_request(self, *args: object) -> None:
                pass

        app = DomainDispatcherApplication(create_backend_app)
        self.httpd = make_server("127.0.0.1", 0, self._counting(app), threaded=True, request_handler=Quiet)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_port}"
        self.options: dict[str, Any] = {
            "key": "x", "secret": "y", "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "eu-west-1"},
        }
        self.fs = self._filesystem()

    def _counting(self, app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
        """``app`` counting each GET of an object key and the bytes of its body."""
        counts = self.counts

        def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if self.stall and environ["REQUEST_METHOD"] == "GET":
                self.closing.wait()
            body = b"".join(app(environ, start_response))
            if environ["REQUEST_METHOD"] == "GET" and environ["PATH_INFO"].count("/") >= 2:
                with counts.lock:
                    counts.gets += 1
                    counts.bytes += len(body)
            return [body]

        return wsgi

    def _filesystem(self) -> Any:
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, **self.options)

    def put(self, bucket: str, key: str, data: bytes) -> str:
        """Store ``data`` at ``s3://bucket/key`` (making the bucket) and return that URL."""
        if not self.fs.exists(bucket):
            self.fs.mkdir(bucket)
        self.fs.pipe(f"{bucket}/{key}", data)
        self.fs.invalidate_cache()
        return f"s3://{bucket}/{key}"

    def close(self) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()
