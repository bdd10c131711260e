"""kproxy's configuration: YAML in, typed, validated, frozen settings out.

`settings` holds the top-level model and `load_config`; each section has a module of
its own (`tls`, `sasl`, `events`, `policy`, `quorum`), on the strict value types of
`types`. `reload_table` says which keys a SIGHUP may change live.
"""
