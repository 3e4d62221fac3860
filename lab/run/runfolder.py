"""The run folder: the contract every runner keeps.

A run is one (variant, scenario, boot) in its own folder,
<results>/<variant>/<scenario>/boot-<k>/.  Whatever boots the guest (a
local QEMU, a LAVA job, ...), the folder ends up the same: plan.sh (the
plan with its parameters), console.log, the files the guest wrote, and
run.json.  run.json is written "running" with the run's provenance
before the guest starts (provenance()), and once more with the single
verdict, "ok" or "failed" with a reason quoting the console, when it
ends (verdict(), finish()).  finished() is the resume rule: which
folders a re-run keeps.
"""
import errno
import hashlib
import re
import shutil
import subprocess
import time
from pathlib import Path

from ..base import paths, store, variants
from . import qemu
from ..build.built import Built
from ..base.log import LabError

# The plan every matrix run boots (the health check and tests use others).
PLAN = paths.GUEST_DIR / "plans" / "scenario.sh"
# What the host's NIC sender sent into a nic scenario's guest (lab/run/nicload.py)
NIC_SENT = "nic-sent.json"
# Free space a run needs besides its scratch disk: a run folder is
# 0.2-0.3 MB (measured), console and traces can be a few MB.
RUN_FREE_MB = 32

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


def trouble_lines(console: str) -> list:
    """The console's TROUBLE lines, stripped."""
    return [line.strip() for line in console.splitlines()
            if TROUBLE.search(line)]


def kernel_trouble(console: str) -> str:
    """The console's TROUBLE lines (at most five), or ''."""
    lines = trouble_lines(console)
    if not lines:
        return ""
    more = f"\n(and {len(lines) - 5} more)" if len(lines) > 5 else ""
    return "kernel reported trouble:\n" + "\n".join(lines[:5]) + more


def verdict(console: str, run_dir: Path, failed: str = "",
            unfinished: str = "") -> str:
    """'' if the plan ran to its end and succeeded, else why not: a
    kernel panic, then what the runner saw go wrong (`failed`: a hang, a
    job LAVA ended), then the kernel's own trouble reports, then the
    plan's exit (`unfinished` when the guest never wrote one)."""
    panic = panic_lines(console)
    if panic:
        return f"guest kernel panic:\n{panic}"
    if failed:
        return failed
    trouble = kernel_trouble(console)
    if trouble:
        return trouble
    return plan_failure(run_dir, unfinished)


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


def plan_digest(plan: Path) -> str:
    """A run made by another version of its plan is another run."""
    return hashlib.sha256(plan.read_bytes()).hexdigest()


def lab_commit() -> str:
    """The lab's commit, "-dirty" with uncommitted changes to its code
    (reports/ and build/ aside), "" outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "-C", str(paths.REPO), "rev-parse", "--short=12",
             "HEAD"], capture_output=True, text=True, check=True).stdout
        dirty = subprocess.run(
            ["git", "-C", str(paths.REPO), "status", "--porcelain",
             "--untracked-files=no", "--", ".", ":!reports"],
            capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head.strip() + ("-dirty" if dirty.strip() else "")


def provenance(built: Built, plan: Path, env: dict, cpus: int,
               machine: dict, context: dict = None, runner: str = "local",
               memory_mb: int = qemu.GUEST_MEMORY_MB) -> dict:
    """run.json of a run about to start: what runs, where and how."""
    return {
        "runner": runner,
        "variant": built.variant,
        "kernel": {k: built.meta[k] for k in
                   ("release", "hash", "patches", "config_sha256",
                    "kernel_version", "source_tarball_sha256", "package",
                    "package_version") if k in built.meta},
        "lab_commit": lab_commit(),
        "plan": plan.name,
        "plan_sha256": plan_digest(plan),
        "plan_env": dict(env or {}),
        "cpus": cpus,
        "memory_mb": memory_mb,
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


def emulation(accel: qemu.Accel) -> list:
    """What makes two runs' emulation the same: QEMU's accelerator
    options, the guest parameters the setting adds, and which QEMU build
    (the lab's, by its hash, or Debian's)."""
    return [accel.args, accel.append, accel.emulator.get("build", "")]


def misplaced(record: dict, run_dir: Path) -> str:
    """Why run.json does not belong in its folder, <variant>/<scenario>/
    boot-<k> (a record edited, or a folder renamed, by hand), or ""."""
    where = (run_dir.parent.parent.name, run_dir.parent.name, run_dir.name)
    says = (record.get("variant"),
            (record.get("scenario") or {}).get("name"),
            f"boot-{record.get('boot')}")
    if says == where:
        return ""
    return (f"{run_dir}/run.json says {says[0]}/{says[1]}/{says[2]}, not "
            f"the folder it sits in")


def finished(run_dir: Path, kernel_hash: str, scenario_digest: str,
             accel: qemu.Accel = None, runner: str = "local",
             plan_sha: str = None, variant_conf: dict = None) -> bool:
    """Whether a re-run keeps this folder: it ended ("ok" or "failed")
    from the same kernel, scenario file, plan, emulation, runner and
    variant.conf."""
    try:
        record = store.read_json(run_dir / "run.json")
    except (OSError, ValueError):
        return False
    if misplaced(record, run_dir):
        return False
    # A key missing from the record (folders from before run.json had
    # variant.conf, or before that key existed) had its default value.
    ran_as = {**variants.CONF_DEFAULTS, "name": record.get("variant"),
              **record.get("variant_conf", {})}
    if variant_conf is not None and \
            ran_as != {**variants.CONF_DEFAULTS, **variant_conf}:
        return False
    if accel is not None:
        ran = record.get("qemu", {}).get("accel", {})
        if [ran.get("args"), ran.get("append", ""),
                ran.get("emulator", {}).get("build", "")] != emulation(accel):
            return False
    # folders from before run.json named its runner: LAVA's had "lava"
    ran_by = record.get("runner", "lava" if "lava" in record else "local")
    if ran_by != runner:
        return False
    if plan_sha is not None and record.get("plan_sha256") != plan_sha:
        return False
    return (record.get("status") in ("ok", "failed")
            and record.get("kernel", {}).get("hash") == kernel_hash
            and record.get("scenario", {}).get("digest") == scenario_digest)


def cell_context(c) -> dict:
    """What run.json says about a matrix cell (matrix.Cell), besides the
    kernel and QEMU: the scenario, the boot, and the variant's
    variant.conf (source, boot parameters, role)."""
    return {"scenario": {"name": c.scenario.name,
                         "digest": c.scenario.digest,
                         "text": c.scenario.path.read_text(),
                         "cpus": c.scenario.cpus,
                         "sweep_of": c.scenario.sweep_of,
                         "nic": c.scenario.nic},
            "variant_conf": c.variant.described(),
            "boot": c.boot,
            **({"looks": list(c.looks)} if c.looks else {})}


def check_space(root: Path, scenario) -> None:
    """Refuse to start a run the disk cannot hold (the scratch disk is
    sparse: the guest's writes land on the host's disk)."""
    free = shutil.disk_usage(root).free >> 20
    need = RUN_FREE_MB + scenario.disk
    if free < need:
        raise LabError(f"disk full: {free} MB free in {root}, a "
                       f"{scenario.name} run needs {need} MB; finished runs "
                       f"are kept, free some space and run again to resume")


def disk_full(e: OSError, doing: str, kept: str) -> LabError:
    """The error a full disk raises in any runner: what it was doing,
    what is kept, and that a re-run resumes.  Other OS errors are raised
    as they are."""
    if e.errno != errno.ENOSPC:
        raise e
    return LabError(f"disk full while {doing}: {e}; {kept}: free some "
                    f"space and run again")
