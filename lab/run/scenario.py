"""Scenarios: one small text file per load, under common/scenarios/.

    # comment
    description = what the load is, in one line
    duration    = 20                      (seconds of measurement)
    cyclictest  = -t 1 -p 99 -i 1000      (options; the lab adds the rest)
    module      = vector=block spin_us=5000 period_us=20000 cpu=0
    background  = stress-ng --cpu 2       (may repeat; runs through every
                                           phase and is stopped when they
                                           end; $DURATION only bounds it)
    disk        = 256                     (MB scratch disk, one queue)
    probe       = -n 300 -c 0 -W 1        (softirq_probe, after cyclictest,
                                           in the first boot)
    probe_module = vector=block spin_us=5000 cpu=0
    append      = idle=poll               (guest kernel command line)
    trace       = 100                     (trace phase; counts wake-ups
                                           over this many us)
    trace_duration = 10                   (seconds of the trace phase;
                                           the measurement's if not set)
    timerlat    = 1000                    (rtla timerlat phase, stopped and
                                           auto-analysed at this many us)
    softirq_rates = 1                     (each CPU's softirqs per second
                                           of every vector, sampled every
                                           this many seconds through the
                                           measurement: mpstat -I SCPU;
                                           every boot, failed ones too)
    nic         = 20000                   (a virtio NIC the host sends UDP
                                           frames into, packets per second
                                           of host time, or flood:
                                           lab/run/nicload.py; several rates,
                                           `nic = 10000 40000 flood`, make
                                           a sweep: one scenario per rate,
                                           named <name>-10k, <name>-40k,
                                           <name>-flood, and an overload
                                           curve in the report)
    default     = no                      (not in the default matrix:
                                           SCENARIOS=name or all runs it)
    cpus        = 4                       (the guest's vCPUs, 1 to 8;
                                           2 if not set; background
                                           commands see it as $CPUS)
    memory      = 2048                    (the guest's memory in MB;
                                           1024 if not set)
    lead        = max                     (the latency metric the report
                                           leads with; p99 if not set:
                                           max where the claim under test
                                           is a worst case)
    tail        = p99_over_200us          (per-boot metrics judged beside
                                           the lead, every report: where a
                                           kernel may remove a tail's high
                                           mode rather than move it)
    boots       = 10                      (the fewest boots its cells get;
                                           `--boots` gives the others and
                                           more: where one odd boot in 5
                                           decides a comparison, measured
                                           with `python3 -m lab power`)
    capacities  = 512 512 1024 1024       (each vCPU's capacity, 1 to
                                           1024, one per CPU of `cpus`:
                                           CPUs of different sizes, in
                                           the device tree and in virtual
                                           time; arm64 variants only,
                                           lab/docs/arm64.md)
    sysctl      = kernel.sched_util_clamp_min_rt_default=0
                                          (may repeat: set in the guest
                                           before any load starts)

A scenario is data: adding one is adding a file.  Every mistake is
reported with the file and line at fault, before anything starts.
"""
import dataclasses
import hashlib
import random
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..base import metrics, paths, textfile
from . import capacities, qemu
from ..base.log import LabError
from ..base.variants import names_in, pick

SCENARIO_DIR = paths.REPO / "common" / "scenarios"
SUFFIX = ".scenario"
KEYS = {"description", "duration", "cyclictest", "module", "background",
        "disk", "probe", "probe_module", "append", "trace", "pin",
        "both_busy", "timerlat", "nic", "default", "trace_duration",
        "cpus", "memory", "lead", "boots", "tail", "softirq_rates",
        "capacities", "sysctl"}
REPEATABLE = {"background", "sysctl"}
# a sysctl line: a name under /proc/sys (dots or slashes) and a value
SYSCTL_RE = re.compile(r"^[a-z0-9_]+([./][a-z0-9_]+)*=[A-Za-z0-9_.:-]+$")
# cyclictest options the lab sets itself: duration, output, and never -h
# (a histogram gives every thread the same interval, ignoring -d) nor
# -a (pinned threads hide the placement effect under test).
LAB_OWNED = {"-a", "--affinity", "-D", "--duration", "-h", "--histogram",
             "-H", "--histofall", "--histfile", "--json", "-q", "--quiet",
             "-m", "--mlockall", "-S", "--smp", "-v", "--verbose", "-u",
             "--unbuffered", "-o", "--oscope", "-N", "--nsecs"}
# Every option of the guest's cyclictest (Debian 12's rt-tests 2.4,
# `cyclictest --help`), so a mistyped one fails here, not in the guest.
CYCLICTEST_OPTIONS = set("-a -A -b -c -d -D -F -h -H -i -l -m -M -N -o -p -q "
                         "-r -R -s -S -t -u -v -x".split()) | {
    "--affinity", "--aligned", "--breaktrace", "--clock", "--default-system",
    "--distance", "--duration", "--fifo", "--histogram", "--histofall",
    "--histfile", "--interval", "--json", "--laptop", "--latency", "--loops",
    "--mainaffinity", "--mlockall", "--refresh_on_max", "--nsecs",
    "--oscope", "--priority", "--policy", "--priospread", "--quiet",
    "--relative", "--resolution", "--secaligned", "--system", "--smp",
    "--spike", "--spike-nodes", "--smi", "--threads", "--tracemark",
    "--unbuffered", "--verbose", "--dbg_cyclictest", "--posix_timers"}
# cyclictest's short options that take the rest of their word as a value
# (getopt: "-d0", "-h100"; a, A and t optionally): any other letter in a
# word is an option of its own ("-Ma" is -M -a, "-rh100" is -r -h 100)
SHORT_WITH_VALUE = set("bcdDFhHilopaAt")
# common/kernel.config's CONFIG_NR_CPUS, and the plan's affinity mask (ff)
MAX_CPUS = 8
# Kernel parameters the lab sets itself (lab/run/qemu.py).
LAB_OWNED_CMDLINE = {"console", "panic"}
# Whole-number keys and their ranges (pin: checked against cpus below).
NUMBERS = {"duration": (1, 3600), "disk": (16, 65536), "trace": (50, 100000),
           "pin": (0, MAX_CPUS - 1), "timerlat": (50, 100000),
           "trace_duration": (1, 3600), "cpus": (1, MAX_CPUS),
           "memory": (256, 8192), "boots": (1, 100),
           "softirq_rates": (1, 60)}
MODULE_PARAMS = {"vector", "spin_us", "storm_spin_us", "period_us", "cpu",
                 "burst", "napis", "irq"}


@dataclass
class Scenario:
    name: str
    path: Path
    description: str
    duration: int
    cyclictest: str = "-t 1 -p 99 -i 1000"
    module: str = ""
    background: list = field(default_factory=list)
    disk: int = 0
    probe: str = ""
    probe_module: str = ""
    append: str = ""
    trace: int = 0
    # seconds of the trace phase, 0: the measurement's duration.  A long
    # measurement's events would overrun the ring buffer.
    trace_duration: int = 0
    # a phase of rtla timerlat with auto-analysis at this threshold (us),
    # in traced boots only
    timerlat: int = 0
    # seconds between samples of each CPU's softirq rates (mpstat), 0: none.
    # Every boot, not only explained ones: a stall can come in any, and the
    # counts are what shows which vector stopped running where.
    softirq_rates: int = 0
    # cyclictest's threads pinned to this CPU (controls, and the case
    # placement cannot help); None: free to move, the lab's default.
    pin: int = None
    # Both vCPUs busy: under icount one waits while the other runs; the
    # null control null-hog measures what that costs (lab/docs/fidelity.md).
    both_busy: bool = False
    # a NIC fed by the host (lab/run/nicload.py): packets per second, 0 to
    # flood; None: no NIC
    nic: int = None
    # a sweep's rates (nic = r1 r2 ...): the file is the sweep, each rate
    # one scenario of it (expand())
    sweep: list = field(default_factory=list)
    # the sweep this scenario is one rate of
    sweep_of: str = ""
    # in the default matrix (`make lab` without SCENARIOS)
    default: bool = True
    # the guest's size: under icount every vCPU's instructions advance
    # the one virtual clock, so each busy vCPU slows the others
    # (common/scenarios/README.md, "Guest size")
    cpus: int = qemu.GUEST_CPUS
    memory: int = qemu.GUEST_MEMORY_MB
    # the per-boot latency metric the report leads with
    lead: str = "p99"
    # the fewest boots of each cell, whatever --boots asks (0: --boots)
    boots: int = 0
    # per-boot metrics judged beside the lead: a tail with two modes
    # (lab/docs/statistics.md, "Tails with two modes")
    tail: tuple = ()
    # each vCPU's capacity: CPUs of different sizes, on arm64 guests
    # (lab/run/capacities.py); (): all the same
    capacities: tuple = ()
    # name=value settings written under /proc/sys before any load
    sysctl: list = field(default_factory=list)

    @property
    def arch(self) -> str:
        """The guest architecture it needs, or "" for any: a device tree
        declares the capacities (lab/base/arches.py)."""
        return "arm64" if self.capacities else ""

    @property
    def alone(self) -> bool:
        """Run with no other guest beside it (JOBS): a NIC fed from this
        host shares the host's cores between the sender, QEMU's I/O
        thread and the guest, so a second guest would change the packet
        rate this one sees."""
        return self.nic is not None

    @property
    def trace_seconds(self) -> int:
        return self.trace_duration or self.duration

    @property
    def digest(self) -> str:
        h = hashlib.sha256(self.path.read_bytes())
        if self.sweep_of:           # one rate of the file's sweep
            h.update(b"\0" + self.name.encode())
        return h.hexdigest()

    def plan_env(self, seed: int = None, explained: bool = True) -> dict:
        """The guest plan's parameters (guest/plans/scenario.sh); the
        trace, rtla and probe phases only where `explained`.

        With a seed, the plan waits a random part of the module's period
        (20 ms if none) after loading the module and again after starting
        the background load, so that each boot samples another phase
        between the periodic loads and cyclictest's interval instead of
        repeating one (under -icount a boot is otherwise deterministic).
        """
        env = {"DURATION": self.duration, "CYCLICTEST": self.cyclictest,
               "MODULE_ARGS": self.module, "DISK": self.disk,
               "PROBE_ARGS": self.probe if explained else "",
               "PROBE_MODULE_ARGS": self.probe_module if explained else "",
               "NBACKGROUND": len(self.background),
               "TRACE": (self.trace or "") if explained else "",
               "TRACE_DURATION": self.trace_seconds,
               "TIMERLAT": (self.timerlat or "") if explained else "",
               "PIN": "" if self.pin is None else self.pin}
        for i, cmd in enumerate(self.background):
            env[f"BACKGROUND_{i}"] = cmd
        # only where asked: the plans of the runs already made stay theirs
        if self.softirq_rates:
            env["SOFTIRQ_RATES"] = self.softirq_rates
        if self.capacities:         # what the guest checks it has
            env["CAPACITIES"] = " ".join(
                str(c) for c in capacities.scaled(self.capacities))
        if self.sysctl:
            env["SYSCTL"] = " ".join(self.sysctl)
        if seed is not None:
            rng = random.Random(seed)
            period = int(dict(w.split("=", 1) for w in self.module.split())
                         .get("period_us") or 20000)
            env.update(PHASE_SEED=seed, PHASE_US=rng.randrange(period),
                       BG_PHASE_US=rng.randrange(period))
        return env


def _check_module_args(value: str, where: str, key: str) -> None:
    for word in value.split():
        name = word.split("=", 1)[0]
        if "=" not in word or name not in MODULE_PARAMS:
            raise LabError(f"{where}: {key}: {word!r} is not a softirq_load "
                           f"parameter (name=value; known: "
                           f"{', '.join(sorted(MODULE_PARAMS))})")


def _check_cyclictest(value: str, where: str) -> None:
    if not value.isascii():
        # a "²" passes str.isdigit and then stops the analysis at int()
        odd = next(c for c in value if not c.isascii())
        raise LabError(f"{where}: cyclictest: {odd!r} is not ASCII; its "
                       f"options and numbers are")
    try:
        words = shlex.split(value)
    except ValueError as e:
        raise LabError(f"{where}: cyclictest: {e}") from None
    for opt in (o for w in words for o in _options(w)):
        if opt not in CYCLICTEST_OPTIONS:
            raise LabError(f"{where}: cyclictest: {opt} is not an option "
                           f"of the guest's cyclictest (rt-tests 2.4)")
        if opt in LAB_OWNED:
            raise LabError(f"{where}: cyclictest: {opt} is set by the lab "
                           f"(threads are free to move unless the scenario "
                           f"says 'pin = CPU'; duration, histogram and "
                           f"JSON output come from the scenario)")


def _options(word: str) -> list:
    """The options one word of a cyclictest line gives, as getopt reads
    it: "--interval=1000" one, "-Ma" two (-M, -a), "-p99" one; a value
    ("99", "-5") none."""
    if word.startswith("--"):
        return [word.split("=", 1)[0]]
    return [opt for opt, _ in short_options(word)]


def short_options(word: str) -> list:
    """[(option, the value attached to it)] of one word of short options,
    as getopt reads it: "-rh100" is [("-r", ""), ("-h", "100")], "-Ma"
    [("-M", ""), ("-a", "")]; a value ("99", "-5") or a long option
    gives none."""
    if word.startswith("--") or not word.startswith("-") or \
            word[1:].isdigit() or word == "-":
        return []
    out = []
    for k, letter in enumerate(word[1:], 1):
        if letter in SHORT_WITH_VALUE:
            return out + [(f"-{letter}", word[k + 1:])]
        out.append((f"-{letter}", ""))
    return out


def _check_append(value: str, where: str) -> None:
    for word in value.split():
        if word.split("=", 1)[0] in LAB_OWNED_CMDLINE or "'" in word \
                or '"' in word:
            raise LabError(f"{where}: append: {word!r} is set by the lab "
                           f"or quoted; give plain kernel parameters")


def _digits(value: str) -> bool:
    """A whole number written in 0-9: str.isdigit alone takes a "²",
    which int() then refuses with a ValueError and no line."""
    return value.isascii() and value.isdigit()


def parse(path: Path) -> Scenario:
    name = path.name[:-len(SUFFIX)] if path.name.endswith(SUFFIX) \
        else path.name
    if not re.match(r"^[a-z0-9][a-z0-9-]*$", name):
        raise LabError(f"{path}: scenario name {name!r}: use lower case, "
                       f"digits and '-'")
    values, lines = {"background": [], "sysctl": []}, {}
    text = textfile.read(path, "a scenario")
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        where = f"{path}:{lineno}"
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise LabError(f"{where}: expected 'key = value', got {raw!r}")
        key, value = (p.strip() for p in line.split("=", 1))
        if key not in KEYS:
            raise LabError(f"{where}: unknown key {key!r}; known: "
                           f"{', '.join(sorted(KEYS))}")
        if not value:
            raise LabError(f"{where}: {key} has no value")
        if key == "sysctl" and not SYSCTL_RE.match(value):
            raise LabError(f"{where}: sysctl: {value!r} is not name=value "
                           f"(a /proc/sys name, as kernel.foo_bar=1)")
        if key in REPEATABLE:
            values[key].append(value)
            continue
        if key in lines:
            raise LabError(f"{where}: {key} already set on line "
                           f"{lines[key]}")
        lines[key] = lineno
        if key in NUMBERS:
            lo, hi = NUMBERS[key]
            if not _digits(value) or not lo <= int(value) <= hi:
                raise LabError(f"{where}: {key} must be a whole number "
                               f"from {lo} to {hi}, got {value!r}")
            value = int(value)
        elif key in ("module", "probe_module"):
            _check_module_args(value, where, key)
        elif key == "cyclictest":
            _check_cyclictest(value, where)
        elif key == "append":
            _check_append(value, where)
        elif key == "lead":
            known = [m.name for m in metrics.LATENCY
                     if m.of_samples and m.unit == "us"]
            if value not in known:
                raise LabError(f"{where}: lead must be a latency metric "
                               f"of lab/base/metrics.py ({', '.join(known)}), "
                               f"got {value!r}")
        elif key == "tail":
            known = [m.name for m in metrics.LATENCY
                     if m.of_samples or m.of_boot]
            value = tuple(names_in(value, "tail metric"))
            wrong = [m for m in value if m not in known]
            if wrong:
                raise LabError(f"{where}: tail names {wrong[0]!r}, not a "
                               f"per-boot metric of lab/base/metrics.py "
                               f"({', '.join(known)})")
        elif key == "nic":
            rates = []
            for word in re.split(r"[,\s]+", value):
                if word != "flood" and not (_digits(word) and
                                            1 <= int(word) <= 10000000):
                    raise LabError(f"{where}: nic must be packets per "
                                   f"second (1 to 10000000) or flood, or "
                                   f"several of them, got {word!r}")
                rates.append(0 if word == "flood" else int(word))
            if len(set(rates)) < len(rates):
                raise LabError(f"{where}: nic names a rate twice: {value}")
            if len(rates) > 1:
                values["sweep"] = rates
            value = rates[0]
        elif key == "capacities":
            words = value.split()
            for word in words:
                if not _digits(word) or not 1 <= int(word) <= 1024:
                    raise LabError(f"{where}: capacities: {word!r} is not a "
                                   f"CPU capacity from 1 to 1024")
            value = tuple(int(w) for w in words)
        elif key in ("both_busy", "default"):
            if value not in ("yes", "no"):
                raise LabError(f"{where}: {key} must be yes or no, got "
                               f"{value!r}")
            value = value == "yes"
        values[key] = value
    for required in ("description", "duration"):
        if required not in values:
            raise LabError(f"{path}: missing '{required} = ...'")
    if values.get("pin", 0) >= values.get("cpus", qemu.GUEST_CPUS):
        raise LabError(f"{path}:{lines['pin']}: pin = {values['pin']}, but "
                       f"the guest has {values.get('cpus', qemu.GUEST_CPUS)}"
                       f" CPUs (cpus = N sets how many)")
    cpus = values.get("cpus", qemu.GUEST_CPUS)
    if "capacities" in values and len(values["capacities"]) != cpus:
        raise LabError(f"{path}:{lines['capacities']}: capacities lists "
                       f"{len(values['capacities'])} CPUs, but the guest has "
                       f"{cpus} (cpus = N): one capacity per CPU")
    if "trace_duration" in values and "trace" not in values:
        raise LabError(f"{path}:{lines['trace_duration']}: trace_duration "
                       f"without trace (the trace phase's threshold)")
    if bool(values.get("probe")) != bool(values.get("probe_module")):
        raise LabError(f"{path}: probe and probe_module go together "
                       f"(the probe needs the module loaded on demand)")
    return Scenario(name=name, path=path, **values)


def rate_label(rate: int) -> str:
    """A sweep rate in a scenario name: 40k, 2500, flood."""
    if not rate:
        return "flood"
    return f"{rate // 1000}k" if rate % 1000 == 0 else str(rate)


def expand(s: Scenario) -> list:
    """A sweep file's scenarios, one per rate; any other, itself."""
    if not s.sweep:
        return [s]
    return [dataclasses.replace(s, name=f"{s.name}-{rate_label(r)}", nic=r,
                                sweep=[], sweep_of=s.name)
            for r in s.sweep]


def discover(root: Path = None) -> list:
    root = root or SCENARIO_DIR
    return [x for p in sorted(root.glob("*" + SUFFIX))
            for x in expand(parse(p))]


def select(names: str = "", root: Path = None) -> list:
    """Scenarios named in a comma/space separated list; none named, the
    default matrix's (`default = no` leaves one out); "all", every one.

    A name ending in .scenario is a file anywhere, so a user can try a
    load of their own without adding it to common/scenarios.
    """
    if not names.strip():
        return [s for s in discover(root) if s.default]
    if names.strip() == "all":
        return discover(root)
    every, chosen = None, []
    # a file named whole keeps the blanks in its path; the rest is a
    # comma/space separated list
    pieces = [p.strip() for p in names.split(",")]
    words = [p for p in pieces if p.endswith(SUFFIX) and Path(p).is_file()]
    rest = ",".join(p for p in pieces if p not in words)
    words += names_in(rest, "scenario") if rest.strip(", ") or not words \
        else []
    for word in words:
        if word.endswith(SUFFIX):
            if not Path(word).is_file():
                raise LabError(f"scenario file {word} not found")
            chosen += expand(parse(Path(word)))
            continue
        every = every if every is not None else discover(root)
        rates = [s for s in every if s.sweep_of == word]
        chosen += rates or pick(every, word, "scenario")
    # a sweep and one of its rates, both named: that rate once
    return list({s.name: s for s in chosen}.values())
