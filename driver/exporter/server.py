"""The HTTP side: serve a CncCollector on /metrics from a prometheus_client server thread."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.process_collector import ProcessCollector

from driver.exporter.collector import DEFAULT_STALE_AFTER_S, CncCollector


class MetricsServer:
    """``/metrics`` for one aeron dir on ``host:port`` (port 0 picks a free one); ``close()`` stops it."""

    def __init__(
        self,
        aeron_dir: str | Path,
        port: int,
        host: str = "127.0.0.1",
        stale_after_s: float = DEFAULT_STALE_AFTER_S,
        process_metrics: bool = False,
    ) -> None:
        self.collector = CncCollector(aeron_dir, stale_after_s)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        if process_metrics:
            # Only from inside the driver process: then this process *is* the driver.
            ProcessCollector(namespace="aeron_driver", registry=self.registry)
        try:
            self._httpd, self._thread = start_http_server(port, host, self.registry)
        except BaseException:
            self.collector.close()
            raise
        self.host = host
        self.port: int = self._httpd.server_address[1]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving (waits for the server thread), then unmap cnc.dat."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
        self._httpd = None  # type: ignore[assignment]
        self.collector.close()

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
