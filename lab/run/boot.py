"""Boot one variant in a local QEMU and run one guest plan in it.

Everything lands in a run folder as lab/run/runfolder.py describes it: the
plan, the console log, what the guest wrote, and run.json with its
provenance and verdict.  A hang is cut by a watchdog, console kept.
"""
from pathlib import Path

from ..build import guestbuild
from . import qemu, runfolder
from ..base import arches, store
from ..build.built import Built
from ..base.log import LabError


def judge(outcome: qemu.Outcome, run_dir: Path, timeout: float) -> str:
    """'' if the plan ran to its end and succeeded, else why not."""
    console = outcome.console.read_text(errors="replace") \
        if outcome.console.is_file() else ""
    trouble = runfolder.trouble_lines(console)[:1]
    hung = (f"guest hung: killed by the watchdog after {timeout:.0f} s; "
            + "".join(f"the kernel reported: {t}; " for t in trouble)
            + (f"{outcome.cpus}; " if outcome.cpus else "")
            + f"last console lines:\n{outcome.tail()}"
            if outcome.status == "timeout" else "")
    return runfolder.verdict(
        console, run_dir, hung,
        f"guest stopped (QEMU exit {outcome.exit_code}) before the plan "
        f"finished; last console lines:\n{outcome.tail()}")


def run_plan(built: Built, plan: Path, run_dir: Path, accel: qemu.Accel,
             timeout: float = 120, cpus: int = qemu.GUEST_CPUS,
             memory_mb: int = qemu.GUEST_MEMORY_MB, extra_args=(),
             initrd: Path = None, env: dict = None, context: dict = None,
             append: str = "", capacities: tuple = ()) -> dict:
    """Boot `built` with `plan`; return run.json's content (also saved).

    `env` becomes shell variables at the top of the guest's plan.sh;
    `capacities`, each vCPU's (lab/run/capacities.py), for CPUs of
    different sizes.
    """
    if not plan.is_file():
        raise LabError(f"plan {plan} not found")
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("plan-exit", "plan.log", "run.json", "phases",
                  "timerlat.txt", "hang-cpus.txt"):
        (run_dir / stale).unlink(missing_ok=True)
    store.write_text(run_dir / "plan.sh", runfolder.plan_script(plan, env))
    machine = qemu.Machine(kernel=built.image,
                           initrd=initrd or guestbuild.bare_initrd(built),
                           share=run_dir, accel=accel, cpus=cpus,
                           memory_mb=memory_mb, append=append,
                           extra=list(extra_args),
                           arch=arches.get(built.arch),
                           capacities=tuple(capacities))
    record = runfolder.provenance(built, plan, env, cpus,
                                  qemu.describe(machine), context,
                                  memory_mb=memory_mb)
    store.write_json(run_dir / "run.json", record)
    outcome = qemu.run(machine, run_dir / "console.log", timeout)
    reason = judge(outcome, run_dir, timeout)
    return runfolder.finish(record, run_dir, reason, outcome.seconds,
                            qemu_exit=outcome.exit_code,
                            watchdog_fired=outcome.status == "timeout")


