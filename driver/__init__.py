"""aio-media-driver: an Aeron 1.15.1 compatible media driver on asyncio/uvloop."""

from driver.util.version import VERSION as __version__

__all__ = ["__version__"]
