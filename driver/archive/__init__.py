"""The archive: records streams to segment files and replays them (docs/archive.md).

Layering: this package may import driver.client, driver.concurrent, driver.protocol and driver.util, never the
driver's agents, driver.media or driver._native. ``driver.archive.codecs`` imports only primitives, so the
archive client can use it without the server.
"""
