"""kproxy: a Kafka protocol-aware proxy."""

__version__ = "0.1.0"
