"""Sans-IO protocol logic: bytes and ints in, decisions and bytes out. No asyncio, sockets or clocks."""
