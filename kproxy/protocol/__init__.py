"""kproxy's sans-IO Kafka protocol core.

Nothing in this package imports asyncio, aiohttp or prometheus_client: it takes bytes
and returns values and bytes, so every rule can be tested byte by byte and fuzzed.
"""
