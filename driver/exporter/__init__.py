"""Prometheus exporter over a read-only cnc.dat mapping (``mediadriver exporter``, ``run --metrics-port``)."""

from driver.exporter.collector import DEFAULT_PORT, CncCollector, snapshot_metrics, system_metric_name
from driver.exporter.server import MetricsServer

__all__ = ["DEFAULT_PORT", "CncCollector", "MetricsServer", "snapshot_metrics", "system_metric_name"]
