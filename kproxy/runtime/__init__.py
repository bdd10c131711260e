"""The asyncio runtime: sockets, listeners and timers around the sans-IO session.

One client connection is a pair of `asyncio.Protocol`s (`client`, `upstream`) that
feed bytes to its `kproxy.session.ProxySession` and carry out the steps it returns.
Beside them: the listeners and the node address mapping, discovery, kproxy's own
connections to the cluster (TLS, SASL), and the SIGHUP reloader.
"""
