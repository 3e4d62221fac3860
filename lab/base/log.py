"""Short, plain output for people, and one error type for the lab.

LabError carries a message that names what is at fault (file and line,
variant, patch); the command line prints it and exits 2, as rtla does for
errors, keeping exit 1 for "measured and failed".
"""
import sys
import time


class LabError(Exception):
    """A failure with a message fit for the user; no traceback needed."""


_START = time.monotonic()


def fmt_seconds(seconds: float) -> str:
    """m:ss, the form every progress line uses."""
    s = int(seconds)
    return f"{s // 60}:{s % 60:02d}"


def elapsed() -> str:
    return fmt_seconds(time.monotonic() - _START)


def info(msg: str) -> None:
    print(f"[{elapsed()}] {msg}", flush=True)


def warn(msg: str) -> None:
    print(f"[{elapsed()}] warning: {msg}", file=sys.stderr, flush=True)
