"""Kconfig fragments: parsing, and checking that .config honoured them.

olddefconfig silently drops an option whose dependencies are unmet, so a
fragment that asks for CONFIG_FOO=y can produce a kernel without it.  The
build compares every request with the final .config and fails naming the
option and the fragment line that asked for it.
"""
import re
from dataclasses import dataclass
from pathlib import Path

from .log import LabError

SET_RE = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
# What `lab variant add` writes for an option a series adds: the user
# decides, and no build starts until they have.
UNDECIDED = "decide"
UNSET_RE = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


@dataclass(frozen=True)
class Request:
    option: str
    value: str        # "n" for "is not set"
    where: str        # file:line


def parse_fragment(path: Path) -> list:
    requests, seen = [], {}
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        where = f"{path}:{lineno}"
        m = UNSET_RE.match(line)
        if m:
            opt, val = m.group(1), "n"
        elif not line or line.startswith("#"):
            continue
        else:
            m = SET_RE.match(line)
            if not m:
                raise LabError(f"{where}: not a Kconfig line: {raw!r} "
                               f"(want CONFIG_FOO=value or "
                               f"'# CONFIG_FOO is not set')")
            opt, val = m.group(1), m.group(2)
            if val == "":
                raise LabError(f"{where}: {opt} has no value")
            if val == UNDECIDED:
                raise LabError(f"{where}: {opt}={UNDECIDED}: the series "
                               f"adds this option; set it to y, n or a "
                               f"value")
        if opt in seen:
            raise LabError(f"{where}: {opt} already set on line {seen[opt]}")
        seen[opt] = lineno
        requests.append(Request(opt, val, where))
    return requests


def read_config(path: Path) -> dict:
    """Option -> value of a .config; unset options are absent."""
    values = {}
    for line in path.read_text().splitlines():
        m = SET_RE.match(line)
        if m:
            values[m.group(1)] = m.group(2)
    return values


def merged_requests(fragments: list) -> list:
    """Requests of several fragments; a later fragment overrides."""
    by_opt = {}
    for frag in fragments:
        for r in parse_fragment(frag):
            by_opt[r.option] = r
    return list(by_opt.values())


def mismatches(config: dict, requests: list) -> list:
    """Human-readable lines for each request the .config did not honour."""
    bad = []
    for r in requests:
        got = config.get(r.option, "n")
        if got != r.value:
            shown = "not set" if got == "n" else got
            bad.append(f"{r.where}: {r.option}={r.value} requested, "
                       f"but the kernel config has it {shown} "
                       f"(unmet dependency?)")
    return bad


def write_fragment(requests: list, dest: Path) -> None:
    lines = [f"# {r.option} is not set" if r.value == "n"
             else f"{r.option}={r.value}" for r in requests]
    dest.write_text("\n".join(lines) + "\n")


def changes(before: dict, after: dict) -> list:
    """'CONFIG_FOO: y -> n' for each option whose value differs between
    two read_config() results (an absent option counts as n)."""
    return [f"{opt}: {before.get(opt, 'n')} -> {after.get(opt, 'n')}"
            for opt in sorted(before.keys() | after.keys())
            if before.get(opt, "n") != after.get(opt, "n")]
