"""What kproxy reports: metrics, the event log and its sinks, the leadership table.

`observability.Observability` is the runtime's observer (`kproxy.runtime.observer`):
the runtime hands it what each session step found, and it feeds the metrics, the
leader table and the events. Nothing here delays a frame.
"""
