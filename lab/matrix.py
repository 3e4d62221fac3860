"""The comparison matrix: variants x scenarios x boots, resumable.

Each run has its own folder, results/<variant>/<scenario>/boot-<k>/, and
is finished once its run.json says "ok" or "failed" (written atomically
after the guest ends).  A re-run skips finished runs whose kernel and
scenario are unchanged, redoes runs that were cut off ("running"), and
redoes runs made from another kernel or scenario file.  A failed run is
recorded with its reason and the matrix goes on.  A run made under
another emulation setting (accelerator options) is redone too, so one
results folder never mixes settings.
"""
import errno
import secrets
import threading
import shutil
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from . import boot, build, guestbuild, paths, qemu, qemubuild, store
from .log import LabError, fmt_seconds, info

PLAN = paths.GUEST_DIR / "plans" / "scenario.sh"
BOOT_OVERHEAD_S = 8           # boot and shutdown, measured: 15-25 s a run
# Free space a run needs besides its scratch disk: a run folder is
# 0.2-0.3 MB (measured), console and traces can be a few MB.
RUN_FREE_MB = 32


def results_root(runner: str = "local") -> Path:
    """Runs through LAVA go to their own folder: a results folder never
    mixes runners (LAVA's QEMU has a few devices more, README.md)."""
    return paths.BUILD_DIR / ("results" if runner == "local"
                              else f"results-{runner}")


# The report explains worst cases from the first boot's trace phase; a
# trace phase in every boot doubled the run time for no finding.
TRACED_BOOTS = 1


@dataclass
class Cell:
    variant: object       # variants.Variant
    scenario: object      # scenario.Scenario
    boot: int
    # Drawn anew for every run (a redone run too), recorded in run.json.
    seed: int = field(default_factory=lambda: secrets.randbits(32))

    @property
    def traced(self) -> bool:
        return bool(self.scenario.trace) and self.boot <= TRACED_BOOTS

    def plan_env(self) -> dict:
        return self.scenario.plan_env(self.seed, self.traced)

    def expected_seconds(self) -> float:
        """Guest seconds the plan takes: a trace phase runs cyclictest a
        second time, and rtla timerlat a third where the scenario asks."""
        probe = 8 if self.scenario.probe else 0
        phases = 1 + (self.traced and 1) + \
            (self.traced and bool(self.scenario.timerlat))
        return self.scenario.duration * phases + BOOT_OVERHEAD_S + probe

    def folder(self, root: Path) -> Path:
        return root / self.variant.name / self.scenario.name / \
            f"boot-{self.boot}"


def emulation(accel: qemu.Accel) -> list:
    """What makes two runs' emulation the same: QEMU's accelerator
    options, the guest parameters the setting adds, and which QEMU build
    (the lab's, by its hash, or Debian's)."""
    return [accel.args, accel.append, accel.emulator.get("build", "")]


def finished(run_dir: Path, kernel_hash: str, scenario_digest: str,
             accel: qemu.Accel = None, runner: str = "local",
             plan_sha: str = None) -> bool:
    try:
        record = store.read_json(run_dir / "run.json")
    except (OSError, ValueError):
        return False
    if accel is not None:
        ran = record.get("qemu", {}).get("accel", {})
        if [ran.get("args"), ran.get("append", ""),
                ran.get("emulator", {}).get("build", "")] != emulation(accel):
            return False
    if ("lava" in record) != (runner == "lava"):
        return False
    if plan_sha is not None and record.get("plan_sha256") != plan_sha:
        return False
    return (record.get("status") in ("ok", "failed")
            and record.get("kernel", {}).get("hash") == kernel_hash
            and record.get("scenario", {}).get("digest") == scenario_digest)


def disk_device(image) -> list:
    """QEMU options for a scratch disk with one queue: only then do its
    completions go through BLOCK_SOFTIRQ (blk-mq completes locally when a
    hardware queue maps one CPU; QEMU 7.2 gives virtio-blk one queue per
    vCPU)."""
    return ["-drive", f"file={image},if=none,id=scratch,format=raw",
            "-device", "virtio-blk-pci,drive=scratch,num-queues=1"]


def disk_args(run_dir: Path, size_mb: int) -> list:
    """A sparse scratch disk in the run folder, and its QEMU options."""
    image = run_dir / "scratch.img"
    with open(image, "wb") as f:
        f.truncate(size_mb << 20)
    return disk_device(image)


def check_space(root: Path, scenario) -> None:
    """Refuse to start a run the disk cannot hold (the scratch disk is
    sparse: the guest's writes land on the host's disk)."""
    free = shutil.disk_usage(root).free >> 20
    need = RUN_FREE_MB + scenario.disk
    if free < need:
        raise LabError(f"disk full: {free} MB free in {root}, a "
                       f"{scenario.name} run needs {need} MB; finished runs "
                       f"are kept, free some space and run again to resume")


def run(variants: list, scenarios: list, boots: int,
        root: Path = None, accel: qemu.Accel = None, lava=None,
        jobs: int = 1) -> list:
    """Run every cell not yet finished; return all cells' run folders.

    `accel` overrides the lab's choice (the fidelity study's settings).
    `lava` (lab.lava.runner.Options) runs the cells as LAVA jobs.
    `jobs`: guests run at once on this machine.
    """
    root = root or results_root()
    root.mkdir(parents=True, exist_ok=True)
    initrds = {}

    def make_initrd(variant, built_variant):
        initrds[variant.name] = guestbuild.initrd(variant, built_variant)
    built = build.build_all(variants, then=make_initrd)
    if accel is None and lava is not None:
        accel = lava.accel()
    accel = accel or qemu.choose_accel(built[variants[0].name].image)
    info(f"accelerator: {accel.summary()}")
    if accel.emulator and lava is None:
        qemubuild.ensure()      # built now, not by the first guest

    # Boot-major order: every cell gets its first boot before any gets a
    # second, so a stopped matrix is still a usable comparison.
    cells = [Cell(v, s, k) for k in range(1, boots + 1)
             for s in scenarios for v in variants]
    todo = [c for c in cells if not finished(
        c.folder(root), built[c.variant.name].meta["hash"],
        c.scenario.digest, accel, "local" if lava is None else "lava",
        boot.plan_digest(PLAN))]
    if len(todo) < len(cells):
        info(f"{len(cells) - len(todo)} of {len(cells)} runs already done; "
             f"resuming")
    if lava is not None:
        from .lava import runner      # only LAVA users need lavacli, yaml
        runner.run(todo, built, initrds, accel, root, lava)
        return [c.folder(root) for c in cells]
    _run_local(todo, built, initrds, accel, root, boots, jobs,
               already=len(cells) - len(todo))
    return [c.folder(root) for c in cells]


def _run_local(todo: list, built: dict, initrds: dict, accel, root: Path,
               boots: int, jobs: int, already: int) -> None:
    """Run the cells, `jobs` guests at a time, in the order given.

    A guest is a QEMU process; the threads here only wait for them.  On a
    stop (Ctrl-C, SIGTERM) or a full disk every running guest is killed
    and its run stays "running", to be redone; finished runs are kept.
    """
    left = sum(c.expected_seconds() for c in todo)
    state = {"spent": 0.0, "done": 0, "left": left}
    lock = threading.Lock()
    numbered = list(enumerate(todo, 1))

    def one(i: int, c: Cell) -> dict:
        with lock:
            done = state["done"]
            eta = state["left"] * (state["spent"] / done if done else 1) \
                / jobs
            info(f"run {i}/{len(todo)}: {c.variant.name} {c.scenario.name} "
                 f"boot {c.boot}/{boots}, about {fmt_seconds(eta)} left")
        started = time.monotonic()
        check_space(root, c.scenario)
        record = run_cell(c, built[c.variant.name], initrds[c.variant.name],
                          accel, root)
        with lock:
            state["spent"] += (time.monotonic() - started) / \
                c.expected_seconds()
            state["done"] += 1
            state["left"] -= c.expected_seconds()
        if record["status"] != "ok":
            info(f"  failed: {c.variant.name} {c.scenario.name} boot "
                 f"{c.boot}: {record['reason'].splitlines()[0]}")
        return record

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    futures = {pool.submit(one, i, c): (i, c) for i, c in numbered}
    try:
        for fut in as_completed(futures):
            i, c = futures[fut]
            try:
                fut.result()
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                raise LabError(
                    f"disk full while running {c.folder(root)}: {e}; the "
                    f"{already + state['done']} finished runs are intact, "
                    f"the unfinished ones will be redone: free some space "
                    f"and run again") from None
    except BaseException as e:
        pool.shutdown(wait=False, cancel_futures=True)
        try:
            qemu.stop_all()
            pool.shutdown(wait=True)
        finally:
            qemu.stopped()
        if isinstance(e, KeyboardInterrupt):
            info(f"stopped after {state['done']} of {len(todo)} runs; run "
                 f"again to resume (runs cut off are redone)")
        raise
    pool.shutdown()


def cell_context(c: Cell) -> dict:
    """What run.json says about the cell, besides the kernel and QEMU."""
    return {"scenario": {"name": c.scenario.name,
                         "digest": c.scenario.digest,
                         "text": c.scenario.path.read_text()},
            "boot": c.boot}


def run_cell(c: Cell, built_kernel, initrd: Path, accel, root: Path) -> dict:
    run_dir = c.folder(root)
    run_dir.mkdir(parents=True, exist_ok=True)
    extra = disk_args(run_dir, c.scenario.disk) if c.scenario.disk else []
    timeout = 3 * c.expected_seconds() + 60
    try:
        return boot.run_plan(
            built_kernel, PLAN, run_dir, accel, timeout=timeout,
            initrd=initrd, extra_args=extra, env=c.plan_env(),
            append=c.scenario.append, context=cell_context(c))
    finally:
        (run_dir / "scratch.img").unlink(missing_ok=True)
