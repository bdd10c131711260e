"""``python -m kproxy``: the same as the ``kproxy`` console script."""

from kproxy.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
