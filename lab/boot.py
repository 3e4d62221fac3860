"""Boot one variant, run one guest plan, keep everything in a run folder.

A run folder holds the plan, the console log, what the guest wrote, and
run.json: provenance (variant, patch and config hashes, QEMU command line,
accelerator, host CPU) and the outcome.  A run ends "ok" or "failed" with a
reason that quotes the console (panic lines, last lines before a hang).
"""
import hashlib
import re
import time
from pathlib import Path

from . import initramfs, qemu, store
from .build import Built
from .log import LabError

PANIC_MARK = "Kernel panic"
# What the kernel reports when something is wrong that a latency number
# would hide: a CPU that went idle with softirqs pending (what deferring
# them can cause), an RCU stall, a warning or BUG, a lockdep report, a
# hung task.  A run that shows one fails with the lines: a result.
TROUBLE = re.compile(r"NOHZ tick-stop error|rcu: INFO: .*detected stall|"
                     r"WARNING: CPU: |BUG: |blocked for more than \d+ "
                     r"seconds|possible recursive locking|inconsistent "
                     r"lock state|possible circular locking|"
                     r"huh, entered softirq")


def panic_lines(console: str) -> str:
    lines = console.splitlines()
    for i, line in enumerate(lines):
        if PANIC_MARK in line:
            return "\n".join(lines[max(0, i - 8):i + 2])
    return ""


def kernel_trouble(console: str) -> str:
    """The console's TROUBLE lines (at most five), or ''."""
    lines = [line.strip() for line in console.splitlines()
             if TROUBLE.search(line)]
    if not lines:
        return ""
    more = f"\n(and {len(lines) - 5} more)" if len(lines) > 5 else ""
    return "kernel reported trouble:\n" + "\n".join(lines[:5]) + more


def judge(outcome: qemu.Outcome, run_dir: Path, timeout: float) -> str:
    """'' if the plan ran to its end and succeeded, else why not."""
    console = outcome.console.read_text(errors="replace") \
        if outcome.console.is_file() else ""
    panic = panic_lines(console)
    if panic:
        return f"guest kernel panic:\n{panic}"
    if outcome.status == "timeout":
        return (f"guest hung: killed by the watchdog after {timeout:.0f} s; "
                f"last console lines:\n{outcome.tail()}")
    trouble = kernel_trouble(console)
    if trouble:
        return trouble
    return plan_failure(run_dir, f"guest stopped (QEMU exit "
                        f"{outcome.exit_code}) before the plan finished; "
                        f"last console lines:\n{outcome.tail()}")


def plan_failure(run_dir: Path, unfinished: str) -> str:
    """'' if the guest's plan exited 0, else why not (`unfinished` if it
    never got to its end)."""
    exit_file = run_dir / "plan-exit"
    if not exit_file.is_file():
        return unfinished
    code = exit_file.read_text().strip()
    if code != "0":
        log = run_dir / "plan.log"
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:]) \
            if log.is_file() else ""
        return f"plan failed with exit {code}; plan.log ends:\n{tail}"
    return ""


def plan_script(plan: Path, env: dict) -> str:
    """The plan as the guest runs it: its parameters, then its body."""
    lines = [f"# {plan.name}, as handed to the guest"]
    for key, value in (env or {}).items():
        if not key.isidentifier():
            raise LabError(f"plan {plan.name}: bad parameter name {key!r}")
        quoted = str(value).replace("'", "'\\''")
        lines.append(f"{key}='{quoted}'")
    return "\n".join(lines) + "\n" + plan.read_text()


def run_plan(built: Built, plan: Path, run_dir: Path, accel: qemu.Accel,
             timeout: float = 120, cpus: int = 2, extra_args=(),
             initrd: Path = None, env: dict = None,
             context: dict = None, append: str = "") -> dict:
    """Boot `built` with `plan`; return run.json's content (also saved).

    `env` becomes shell variables at the top of the guest's plan.sh.
    """
    if not plan.is_file():
        raise LabError(f"plan {plan} not found")
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("plan-exit", "plan.log", "run.json", "phases",
                  "timerlat.txt"):
        (run_dir / stale).unlink(missing_ok=True)
    store.write_text(run_dir / "plan.sh", plan_script(plan, env))
    machine = qemu.Machine(kernel=built.image,
                           initrd=initrd or initramfs.build(),
                           share=run_dir, accel=accel, cpus=cpus,
                           append=append, extra=list(extra_args))
    record = provenance(built, plan, env, cpus, qemu.describe(machine),
                        context)
    store.write_json(run_dir / "run.json", record)
    outcome = qemu.run(machine, run_dir / "console.log", timeout)
    reason = judge(outcome, run_dir, timeout)
    return finish(record, run_dir, reason, outcome.seconds,
                  qemu_exit=outcome.exit_code,
                  watchdog_fired=outcome.status == "timeout")


def plan_digest(plan: Path) -> str:
    """A run made by another version of its plan is another run."""
    return hashlib.sha256(plan.read_bytes()).hexdigest()


def provenance(built: Built, plan: Path, env: dict, cpus: int,
               machine: dict, context: dict = None) -> dict:
    """run.json of a run about to start: what runs, where and how."""
    return {
        "variant": built.variant,
        "kernel": {k: built.meta[k] for k in
                   ("release", "hash", "patches", "config_sha256",
                    "kernel_version", "source_tarball_sha256")},
        "plan": plan.name,
        "plan_sha256": plan_digest(plan),
        "plan_env": dict(env or {}),
        "cpus": cpus,
        "qemu": machine,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "status": "running",
        **(context or {}),
    }


def finish(record: dict, run_dir: Path, reason: str, seconds: float,
           **outcome) -> dict:
    """Close a run: its verdict, then run.json written once more."""
    record.update(status="failed" if reason else "ok", reason=reason,
                  seconds=seconds, **outcome)
    try:    # written by the guest: may be missing or cut short
        record["boot_to_init_s"] = float(
            (run_dir / "init-uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        pass
    record["phases_s"] = phases(run_dir, record.get("boot_to_init_s", 0.0))
    store.write_json(run_dir / "run.json", record)
    return record


def phases(run_dir: Path, start: float) -> dict:
    """Guest seconds per plan phase, from the plan's `phases` marks ("name
    uptime" when a phase ends; guest/plans/scenario.sh): where a run's
    time goes.  Under icount these are the guest's virtual seconds."""
    out = {}
    try:
        lines = (run_dir / "phases").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            name, up = line.split()
            out[name] = round(float(up) - start, 2)
            start = float(up)
        except ValueError:
            continue            # cut short by a stop: the rest is kept
    return out
