"""Guests in QEMU on this machine, JOBS at a time.

A guest is a QEMU process; the threads here only wait for them.  On a
stop (Ctrl-C, SIGTERM) or a full disk every running guest is killed and
its run stays "running", to be redone; finished runs are kept.
"""
import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .. import accelerator, boot, nicload, qemu, runfolder
from ...base import arches
from ...base.log import fmt_seconds, info

HELP = "boot guests in QEMU here (default)"


def make(args) -> "Local":
    return Local(getattr(args, "jobs", 1) or 1)


class Local:
    name = "local"

    def __init__(self, jobs: int = 1):
        self.jobs = max(1, jobs)

    def accel(self, kernel: Path) -> qemu.Accel:
        return accelerator.choose(kernel)

    def run(self, todo: list, built: dict, initrds: dict, accel,
            root: Path) -> None:
        if accel.emulator:              # built now, not by the first guest
            for arch in sorted({b.arch for b in built.values()}):
                qemu.qemu_binary(accel, arches.get(arch))
        run_all(todo, built, initrds, accel, root, self.jobs)


class Turns:
    """Guests side by side, except a scenario that must run alone
    (Scenario.alone): it waits for the running guests to end, and none
    starts while it waits or runs."""

    def __init__(self):
        self.cond = threading.Condition()
        self.running = 0
        self.alone = False          # a lone run is waiting or running

    @contextlib.contextmanager
    def turn(self, alone: bool):
        with self.cond:
            self.cond.wait_for(lambda: not self.alone)
            if alone:
                self.alone = True
                self.cond.wait_for(lambda: self.running == 0)
            self.running += 1
        try:
            yield
        finally:
            with self.cond:
                self.running -= 1
                if alone:
                    self.alone = False
                self.cond.notify_all()


def run_all(todo: list, built: dict, initrds: dict, accel, root: Path,
            jobs: int) -> None:
    """Run the cells, `jobs` guests at a time, in the order given."""
    def wall(c) -> float:
        """Expected host seconds the cell adds: a lone cell has the host
        to itself, the others share it `jobs` ways."""
        return c.expected_seconds() / (1 if c.scenario.alone else jobs)

    state = {"spent": 0.0, "done": 0, "left": sum(wall(c) for c in todo)}
    lock = threading.Lock()
    turns = Turns()

    def one(i: int, c) -> dict:
        with turns.turn(c.scenario.alone):
            with lock:
                done = state["done"]
                eta = state["left"] * (state["spent"] / done if done else 1)
                info(f"run {i}/{len(todo)}: {c.variant.name} "
                     f"{c.scenario.name} boot {c.boot}, about "
                     f"{fmt_seconds(eta)} left")
            started = time.monotonic()
            runfolder.check_space(root, c.scenario)
            record = run_cell(c, built[c.variant.name],
                              initrds[c.variant.name], accel, root)
        with lock:
            state["spent"] += (time.monotonic() - started) / \
                c.expected_seconds()
            state["done"] += 1
            state["left"] -= wall(c)
        if record["status"] != "ok":
            info(f"  failed: {c.variant.name} {c.scenario.name} boot "
                 f"{c.boot}: {record['reason'].splitlines()[0]}")
        return record

    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = {pool.submit(one, i, c): c for i, c in enumerate(todo, 1)}
    try:
        for fut in as_completed(futures):
            try:
                fut.result()
            except OSError as e:
                raise runfolder.disk_full(
                    e, f"running {futures[fut].folder(root)}",
                    "the finished runs are intact, the unfinished ones "
                    "will be redone") from None
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


def disk_args(run_dir: Path, size_mb: int) -> list:
    """A sparse scratch disk in the run folder, and its QEMU options."""
    image = run_dir / "scratch.img"
    with open(image, "wb") as f:
        f.truncate(size_mb << 20)
    return qemu.scratch_disk(image)


def run_cell(c, built_kernel, initrd: Path, accel, root: Path) -> dict:
    run_dir = c.folder(root)
    run_dir.mkdir(parents=True, exist_ok=True)
    extra = disk_args(run_dir, c.scenario.disk) if c.scenario.disk else []
    timeout = c.watchdog_seconds()
    nic = contextlib.nullcontext()
    if c.scenario.nic is not None:
        nic = nicload.Sender(c.scenario.nic, run_dir / runfolder.NIC_SENT)
        extra += nic.qemu_args()
    try:
        with nic:
            return boot.run_plan(
                built_kernel, runfolder.PLAN, run_dir, accel,
                timeout=timeout, cpus=c.scenario.cpus,
                memory_mb=c.scenario.memory, initrd=initrd, extra_args=extra,
                env=c.plan_env(), append=c.append,
                context=runfolder.cell_context(c),
                capacities=c.scenario.capacities)
    finally:
        (run_dir / "scratch.img").unlink(missing_ok=True)
