"""cyclictest's own samples, per thread, from the moment they could move.

The guest runs cyclictest with -v, which prints every sample as
"thread: cycle: latency" (microseconds), and, once it has widened the
threads' affinity, saves how many samples each thread had printed by
then (`<stem>-start.txt`).  Samples up to that point were taken while the
threads were still pinned and the plan still forked on the other vCPU,
so they are dropped, plus MARGIN_US more: cyclictest prints from its
main loop every 10 ms, so the count lags the samples taken.

Missed periods: cyclictest skips the periods it overslept instead of
recording them (after a wake-up it moves its next expiry past the
present), so a thread that lost 5 ms every 20 ms records about a fifth
fewer samples.  A kept sample of latency L skipped floor(L / interval)
periods; their sum, per thread, is reported beside the latencies (over
the kept samples only, like the latencies: start-up misses are not
counted).

Intervals: without -h, each thread's interval is -d (500 us unless set)
longer than the one before, as the cover letter's were; with -h
cyclictest gives every thread the same interval, so the guest plan no
longer passes -h (the histograms come from the samples).  cyclictest's
"Thread N Interval:" line is printed after it has added the distance for
the next thread, so without -h it overstates thread N's interval by the
distance; interval_shift() says by how much, from the command line its
JSON records.
"""
import re
import shlex
from pathlib import Path

import numpy as np

from ..run import scenario

SAMPLE = re.compile(r"^\s*(\d+):\s+(\d+):\s+(-?\d+)\s*$")
INTERVAL = re.compile(r"^Thread (\d+) Interval: (\d+)")
MARGIN_US = 50_000


def parse(text: str) -> tuple[dict, dict]:
    """({thread: [latency, ...] in cycle order}, {thread: interval_us})."""
    samples, intervals = {}, {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            samples.setdefault(int(m.group(1)), []).append(int(m.group(3)))
            continue
        m = INTERVAL.match(line)
        if m:
            intervals[int(m.group(1))] = int(m.group(2))
    return samples, intervals


def _number(text: str) -> bool:
    """Digits 0-9: str.isdigit alone takes a "²", which int() refuses."""
    return text.isascii() and text.isdigit()


def _option(tokens: list, short: str, long: str):
    """The value of cyclictest option -X / --long from a command line,
    in any of getopt's forms ("-d 500", "-d500", "--distance=500"), or
    True if it appears without one (a flag), or None."""
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok == long:
            return nxt if _number(nxt.lstrip("-")) else True
        if tok.startswith(long + "="):
            return tok.split("=", 1)[1]
        for opt, attached in scenario.short_options(tok):   # "-rd0"
            if opt == short:
                value = attached or nxt
                return value if _number(value.lstrip("-")) else True
    return None


def interval_shift(cmdline: str) -> int:
    """How much cyclictest's printed "Thread N Interval:" exceeds thread
    N's real interval: the distance (-d, default 500 us) when it ran
    without a histogram (-h, -H), else 0; 0 too when the command line
    is unknown."""
    if not cmdline:
        return 0
    tokens = shlex.split(cmdline)
    if any(_option(tokens, s, lg) is not None for s, lg in
           (("-h", "--histogram"), ("-H", "--histofall"))):
        return 0
    distance = _option(tokens, "-d", "--distance")
    return int(distance) if distance not in (None, True) else 500


def start_counts(path: Path) -> dict:
    """{thread: samples printed when the threads were set free}."""
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            out[int(parts[0])] = int(parts[1])
    return out


def measured(out_file: Path, start_file: Path, ct_json: dict) -> dict:
    """Every thread's samples after the start, and its missed periods.

    Returns {"latencies": sorted array of all threads' kept samples,
    "samples": every sample per thread in cycle order (parse()),
    "threads": {thread: {interval_us, expected, cycles, missed, dropped,
    kept, after_start}}}: after_start, the samples after the threads
    were set free (the ones a trace after the same marker can see);
    expected, kept plus missed (the periods due while the kept samples
    were taken); cycles, cyclictest's own count from its JSON.
    """
    samples, intervals = parse(out_file.read_text(errors="replace"))
    shift = interval_shift(ct_json.get("cmdline:", ""))
    intervals = {t: i - shift for t, i in intervals.items()}
    started = start_counts(start_file)
    kept, threads = [], {}
    for t, values in sorted(samples.items()):
        interval = intervals.get(t, 0)
        margin = MARGIN_US // interval if interval else 0
        drop = min(len(values), started.get(t, 0) + margin)
        kept.extend(values[drop:])
        cycles = int(ct_json.get("thread", {}).get(str(t), {}).get(
            "cycles", len(values)))
        missed = sum(v // interval for v in values[drop:] if v > 0) \
            if interval else 0
        threads[t] = {"interval_us": interval, "cycles": cycles,
                      "expected": len(values) - drop + missed,
                      "missed": missed, "dropped": drop,
                      "kept": len(values) - drop,
                      "after_start": len(values) - started.get(t, 0)}
    return {"latencies": np.sort(np.array(kept, dtype=float)),
            "samples": samples,
            "threads": threads}
