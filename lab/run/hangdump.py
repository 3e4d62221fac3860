"""What a hung guest's vCPUs were doing when the watchdog fired.

A hang leaves a console that just stops; the guests have no magic SysRq,
and a hung guest cannot be asked.  QEMU can: through its QMP socket the
watchdog stops the guest a number of times, reads every vCPU's registers
(halted, user mode, or where in the kernel) and, for a vCPU in the
kernel, the words above its stack pointer that are kernel text addresses
(the callers, as the kernel's own "?" backtrace lines).  Addresses are
named from the kernel's System.map when its build kept one.
"""
import bisect
import json
import re
import socket
import time
from collections import Counter
from pathlib import Path

from ..base import store

SAMPLES = 20
INTERVAL_S = 0.05
STACK_WORDS = 64
_CPU = re.compile(r"^CPU#(\d+)$", re.M)
_RIP = re.compile(r"RIP=([0-9a-f]+) .*CPL=(\d) .*HLT=(\d)")
_RSP = re.compile(r"RSP=([0-9a-f]+)")
# an arm64 vCPU's (QEMU prints no halted flag there: a vCPU in WFI is
# in the kernel's idle code, which its symbol names)
_PC = re.compile(r"\bPC=([0-9a-f]+)")
_SP = re.compile(r"\bSP=([0-9a-f]+)")
_EL = re.compile(r"PSTATE=[0-9a-f]+ .*?EL(\d)")
_HEX = re.compile(r"^(0x)?[0-9a-f]+$")


class Monitor:
    """A QMP connection: commands in, their "return" out (events are
    skipped)."""

    def __init__(self, path: Path, timeout: float = 5):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buf = b""
        self._reply()                       # the greeting
        self.execute("qmp_capabilities")

    def _reply(self) -> dict:
        while True:
            while b"\n" not in self.buf:
                data = self.sock.recv(65536)
                if not data:
                    raise OSError("QEMU closed its monitor")
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def execute(self, command: str, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        reply = self._reply()
        if "error" in reply:
            raise OSError(f"QMP {command}: {reply['error'].get('desc')}")
        return reply.get("return")

    def hmp(self, line: str, cpu: int = None) -> str:
        args = {"command-line": line}
        if cpu is not None:
            args["cpu-index"] = cpu
        # the monitor's text has terminal line ends
        return self.execute("human-monitor-command",
                            **args).replace("\r\n", "\n")

    def close(self) -> None:
        self.sock.close()


def parse_registers(text: str) -> dict:
    """`info registers -a` -> {cpu: {"rip", "rsp", "cpl", "halted"}}:
    an x86 vCPU's, or an arm64 one's (PC, SP, its exception level as the
    privilege: EL0 is user mode)."""
    out = {}
    parts = _CPU.split(text)
    for cpu, block in zip(parts[1::2], parts[2::2]):
        rip, rsp = _RIP.search(block), _RSP.search(block)
        pc, sp, el = _PC.search(block), _SP.search(block), _EL.search(block)
        if rip:
            out[int(cpu)] = {"rip": int(rip.group(1), 16),
                             "rsp": int(rsp.group(1), 16) if rsp else 0,
                             "cpl": int(rip.group(2)),
                             "halted": rip.group(3) == "1"}
        elif pc and el:
            out[int(cpu)] = {"rip": int(pc.group(1), 16),
                             "rsp": int(sp.group(1), 16) if sp else 0,
                             "cpl": 3 if el.group(1) == "0" else 0,
                             "halted": False}
    return out


def parse_words(text: str) -> list:
    """`x /Ngx addr` -> the N values; none from a line that says the
    memory cannot be read ("Cannot access memory at address ...")."""
    rows = [line.split(":", 1)[1].split() for line in text.splitlines()
            if ":" in line]
    return [int(w, 16) for words in rows
            if all(_HEX.match(w) for w in words) for w in words]


class Symbols:
    """Kernel text symbols from a System.map; empty without one."""

    def __init__(self, system_map: Path = None):
        pairs = []
        if system_map is not None and system_map.is_file():
            for line in system_map.read_text().splitlines():
                f = line.split()
                if len(f) == 3 and f[1] in "tTwW":
                    pairs.append((int(f[0], 16), f[2]))
        pairs.sort()
        self.addrs = [a for a, _ in pairs]
        self.names = [n for _, n in pairs]

    def is_text(self, addr: int) -> bool:
        return bool(self.addrs) and self.addrs[0] <= addr <= self.addrs[-1]

    def name(self, addr: int, offset: bool = True) -> str:
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0 or not self.is_text(addr):
            return f"{addr:x}"
        return (f"{self.names[i]}+0x{addr - self.addrs[i]:x}" if offset
                else self.names[i])


def where(state: dict, symbols: Symbols) -> str:
    """One sample of one vCPU in a word or two."""
    if state["halted"]:
        return "halted (idle)"
    if state["cpl"] == 3:
        return "user mode"
    # without symbols every address would count apart
    return ("kernel " + symbols.name(state["rip"], offset=False)
            if symbols.addrs else "kernel")


def capture(qmp: Path, out: Path, system_map: Path = None,
            samples: int = SAMPLES) -> str:
    """Sample the stuck guest through `qmp`, write the details to `out`,
    return a short summary (one line per vCPU) for the run's reason."""
    symbols = Symbols(system_map)
    try:
        mon = Monitor(qmp)
    except (OSError, ValueError) as e:
        return f"vCPU state not read: {e}"
    seen, last, stacks = {}, {}, {}
    try:
        for i in range(samples):
            mon.execute("stop")
            registers = mon.hmp("info registers -a")
            last = parse_registers(registers)
            for cpu, state in last.items():
                seen.setdefault(cpu, Counter())[where(state, symbols)] += 1
            if i == samples - 1:
                for cpu, state in last.items():
                    if state["cpl"] == 0 and not state["halted"]:
                        stacks[cpu] = parse_words(mon.hmp(
                            f"x /{STACK_WORDS}gx 0x{state['rsp']:x}", cpu))
            else:
                mon.execute("cont")
                time.sleep(INTERVAL_S)
    except (OSError, ValueError) as e:
        return f"vCPU state not read: {e}"
    finally:
        mon.close()
    def tally(top=None):
        return [f"{cpu}: " + ", ".join(f"{what} {n}/{samples}"
                                       for what, n in c.most_common(top))
                + (", ..." if top and len(c) > top else "")
                for cpu, c in sorted(seen.items())]
    lines = tally()
    summary = "vCPUs when the watchdog fired: " + "; ".join(tally(2))
    text = [f"What each vCPU was doing when the watchdog fired: {samples} "
            f"samples {INTERVAL_S * 1000:.0f} ms of host time apart, the "
            f"guest stopped for each (QEMU's monitor).",
            "symbols: " + (str(system_map) if symbols.addrs else
                           "none (no System.map kept with this kernel)"),
            ""] + [f"vCPU {line}" for line in lines]
    for cpu, words in sorted(stacks.items()):
        text += ["", f"vCPU {cpu} at the last sample: "
                 f"{symbols.name(last[cpu]['rip'])}; kernel text among the "
                 f"{STACK_WORDS} words above RSP {last[cpu]['rsp']:x} "
                 f"(callers, and stale words):"]
        text += [f"  ? {symbols.name(w)}" for w in words
                 if symbols.is_text(w)] or ["  (none, or no symbols)"]
    keep = [ln for ln in registers.splitlines()
            if not re.match(r"(FPR|XMM|YMM|ZMM|DR|FCW)", ln)]
    text += ["", "Registers at the last sample:"] + keep
    store.write_text(out, "\n".join(text) + "\n")
    return summary
