"""aio-media-driver: an Aeron 1.15.1 compatible media driver on asyncio/uvloop."""

__version__ = "0.1.0"
