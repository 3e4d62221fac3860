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
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ..build import kernel, guestbuild
from ..base import arches, paths
from . import accelerator, qemu, runfolder
from ..base.log import LabError, info
from .runners import local

BOOT_OVERHEAD_S = 8           # boot and shutdown, measured: 15-25 s a run


def results_root(runner: str = "local", medium: str = "") -> Path:
    """Each runner's runs go to their own folder, and each medium's: a
    results folder never mixes runners (LAVA's QEMU has a few devices
    more, lab/docs/lava.md) or media (lab/base/medium.py)."""
    return paths.BUILD_DIR / "-".join(
        ["results"] + [w for w in (runner != "local" and runner, medium)
                       if w])


# The first boot of a cell also explains: its trace, rtla and probe
# phases show why the worst cases happen and where the probe's RT task
# ran.  The verdicts use every boot's untraced measurement; the phases
# in every boot doubled the run time for no finding.
EXPLAINED_BOOTS = 1
# A trace phase under a flood can outlast its cyclictest many times over:
# trace-cmd's stop and extract wait for RCU, which a kernel that starves
# RCU_SOFTIRQ holds up (zijlstra-6.12's nic-rx trace phase: 147-182 s of
# guest time against mainline's 27 s; the boot took 82-145 s of host
# time against a watchdog of 144 s).
TRACE_ROOM_S = 300


@dataclass
class Cell:
    variant: object       # variants.Variant
    scenario: object      # scenario.Scenario
    boot: int
    # Drawn anew for every run (a redone run too), recorded in run.json.
    seed: int = field(default_factory=lambda: secrets.randbits(32))
    # the boots of a group-sequential plan's looks (stats.Looks), () for
    # a fixed number of boots; recorded in run.json
    looks: tuple = ()

    @property
    def explained(self) -> bool:
        return self.boot <= EXPLAINED_BOOTS and self.variant.explains

    @property
    def traced(self) -> bool:
        return bool(self.scenario.trace) and self.explained

    @property
    def append(self) -> str:
        """Kernel parameters: the variant's, then the scenario's."""
        return " ".join(w for w in (self.variant.append,
                                    self.scenario.append) if w)

    def plan_env(self) -> dict:
        env = self.scenario.plan_env(self.seed, self.explained)
        for key in ("MODULE_ARGS", "PROBE_MODULE_ARGS"):
            env[key] = self.variant.module_args(env[key])
        return {**env, **self.variant.plan_env()}

    def expected_seconds(self) -> float:
        """Guest seconds the plan takes: a trace phase runs cyclictest a
        second time, and rtla timerlat a third where the scenario asks."""
        probe = 8 if self.scenario.probe and self.explained else 0
        phases = 1 + (self.explained and bool(self.scenario.timerlat))
        trace = self.scenario.trace_seconds if self.traced else 0
        return self.scenario.duration * phases + trace + \
            BOOT_OVERHEAD_S + probe

    def watchdog_seconds(self) -> float:
        """Host seconds before the guest counts as hung: three times the
        plan's expected time and a minute, and TRACE_ROOM_S more in a
        traced boot."""
        return 3 * self.expected_seconds() + 60 + \
            (self.traced and TRACE_ROOM_S)

    def folder(self, root: Path) -> Path:
        return root / self.variant.name / self.scenario.name / \
            f"boot-{self.boot}"


def check_arches(variants: list, scenarios: list) -> None:
    """Refuse, before any build, variants of two architectures (a
    matrix's accelerator names one QEMU build), and a scenario whose
    guest a variant's architecture cannot be (CPUs of different sizes
    are arm64's)."""
    found = {v.kernel_variant().arch.name: v for v in variants}
    if len(found) > 1:
        raise LabError(f"variants {' and '.join(v.name for v in found.values())}"
                       f" boot on {' and '.join(found)}: a matrix runs "
                       f"guests of one architecture; run each apart")
    for s in scenarios:
        wrong = [v for v in variants
                 if s.arch and v.kernel_variant().arch.name != s.arch]
        if wrong:
            raise LabError(f"{s.path}: capacities: CPUs of different sizes "
                           f"run on {s.arch} variants, and "
                           f"{wrong[0].name} is "
                           f"{wrong[0].kernel_variant().arch.name} (its "
                           f"variant.conf arch)")


def tcg_for(variants: list):
    """TCG for a matrix of guests of an architecture not the host's (KVM
    runs only the host's), else None: the runner chooses
    (check_arches: a matrix holds one architecture)."""
    arch = variants[0].kernel_variant().arch if variants else arches.X86_64
    if arch is arches.X86_64:
        return None
    return accelerator.tcg(f"{variants[0].name} is an {arch.name} guest: "
                           f"KVM runs only the host's architecture",
                           arch=arch)


def plan(variants: list, scenarios: list, boots: int,
         looks: tuple = ()) -> list:
    """The matrix's runs in the order they run: boot-major, so that
    every cell gets its first boot before any gets a second and a
    stopped matrix is still a usable comparison; a scenario that
    declares more boots than `boots` gets its extra ones last."""
    most = max([boots] + [s.boots for s in scenarios])
    return [Cell(v, s, k, looks=looks) for k in range(1, most + 1)
            for s in scenarios if k <= max(boots, s.boots)
            for v in variants]


def run(variants: list, scenarios: list, boots: int,
        root: Path = None, accel: qemu.Accel = None, runner=None,
        looks: tuple = (), unsettled=None) -> list:
    """Run every cell not yet finished, `boots` times or as often as its
    scenario asks if more (`boots`); return all cells' run folders.

    `accel` overrides the runner's choice (the fidelity study's
    settings).  `runner` (lab/run/runners/) boots the guests; by default
    QEMU here, one guest at a time.  With `looks` (the boots of a
    group-sequential plan, stats.Looks), `boots` is the first look's,
    and `unsettled(root)` names the cells ({(variant, scenario)}) the
    first look left undecided: they get the second look's boots.  A
    stopped run resumes at either look: the cells to extend follow from
    the first look's results.
    """
    check_arches(variants, scenarios)
    runner = runner or local.Local()
    root = root or results_root(runner.name)
    root.mkdir(parents=True, exist_ok=True)
    initrds = {}

    def make_initrd(variant, built_variant):
        initrds[variant.name] = guestbuild.initrd(variant, built_variant)
    built = kernel.build_all(variants, then=make_initrd)
    accel = accel or tcg_for(variants) or \
        runner.accel(built[variants[0].name].image)
    info(f"accelerator: {accel.summary()}")

    def not_done(cells):
        todo = [c for c in cells if not runfolder.finished(
            c.folder(root), built[c.variant.name].meta["hash"],
            c.scenario.digest, accel, runner.name,
            runfolder.plan_digest(runfolder.PLAN), c.variant.described())]
        if len(todo) < len(cells):
            info(f"{len(cells) - len(todo)} of {len(cells)} runs already "
                 f"done; resuming")
        return todo

    cells = plan(variants, scenarios, boots, looks)
    runner.run(not_done(cells), built, initrds, accel, root)
    if looks:
        extend = unsettled(root)
        more = [Cell(v, s, k, looks=looks)
                for k in range(boots + 1, looks[-1] + 1)
                for s in scenarios for v in variants
                if (v.name, s.name) in extend and k > s.boots]
        info(f"second look: {len(extend)} cells undecided at {boots} "
             f"boots get {looks[-1]}, {len(more)} runs")
        runner.run(not_done(more), built, initrds, accel, root)
        cells += more
    return [c.folder(root) for c in cells]
