"""The asyncio/socket edge: UDP transports, channel endpoints, address and interface lookup."""
