"""Emulation settings the lab can run under, for the fidelity study.

The effects under test are milliseconds, and so is an emulator's noise;
whether the placement effect shows at all depends on how QEMU runs the
vCPUs (lab/docs/fidelity.md).  `python3 -m lab fidelity` runs the same
scenarios under several of these settings and tables the noise floor of
each, so the lab's default is chosen by measurement (lab/docs/fidelity.md).
"""
import dataclasses
import os
from dataclasses import dataclass

from . import qemu
from ..base import arches, medium
from ..build import qemubuild
from ..base.log import LabError
from ..base.variants import pick

# A hard irq longer than this is a vCPU the emulator did not run, under
# Debian's QEMU: the settings that can stall declare it (stall_us), and
# runs recorded before run.json said so were all in that QEMU
# (lab/analyse/trace.py reads traces with it).
STALL_US = 500

# Under -icount the guest's TSC counts virtual nanoseconds: 1 GHz.  The
# boot CPU derives its delay loop from that, but a CPU brought online
# later recalibrates by timing a loop, which under icount fails after
# 1.6 s of guest time on 6.12 (4.4 s of host time a run; 6.1 skips it).
# lpj= gives every CPU the boot CPU's value (HZ from common/kernel.config,
# which a test keeps in step).
GUEST_HZ = 250
ICOUNT_APPEND = f"maxcpus=1 lpj={10**9 // GUEST_HZ}"


@dataclass(frozen=True)
class Setting:
    name: str
    description: str
    accel: str                  # -accel value
    icount: str = ""            # -icount value
    append: str = ""            # guest kernel parameters
    pin: bool = False           # pin vCPU thread i to host core i
    lab_qemu: bool = False      # needs the lab's QEMU (lab/build/qemubuild.py)
    qemu_patches: int = None    # how many of its patches (None: all)
    # instructions of a full-speed vCPU in 2^shift ns: above 1 where the
    # shift cannot go lower (the lab's QEMU's icount-speeds, 0004)
    speedup: int = 1

    @property
    def stall_us(self):
        """Under Debian's QEMU no real interrupt handler in these guests
        ran longer: a hard irq that did was a vCPU the emulator did not
        run (lab/docs/fidelity.md).  The lab's QEMU runs each vCPU at
        least every 20 us, and KVM runs it on a real CPU."""
        fair = self.lab_qemu and self.qemu_patches != 0
        return None if fair or self.accel == "kvm" else STALL_US

    def to_accel(self, arch=arches.X86_64) -> qemu.Accel:
        """The setting for guests of `arch` (the lab's QEMU is built for
        each architecture's target: its provenance is that build's)."""
        args = ["-accel", self.accel]
        if self.icount:
            args += ["-icount", self.icount]
        if self.accel == "kvm":
            args += ["-cpu", "host"]
        return qemu.Accel(self.accel.split(",")[0], f"setting {self.name}",
                          args, setting=self.name, append=self.append,
                          pin=self.pin, emulator=qemubuild.provenance(
                              self.qemu_patches, arch)
                          if self.lab_qemu else {},
                          stall_us=self.stall_us, speedup=self.speedup)

    @property
    def medium(self) -> str:
        args = ["-accel", self.accel] + (["-icount", self.icount]
                                         if self.icount else [])
        return medium.of({"name": self.accel.split(",")[0], "args": args,
                          "speedup": self.speedup})


SETTINGS = [
    Setting("tcg-single", "TCG, one host thread runs every vCPU in turn",
            "tcg,thread=single"),
    Setting("tcg-multi", "TCG, one host thread per vCPU",
            "tcg,thread=multi"),
    Setting("tcg-multi-pinned", "TCG, one thread per vCPU, vCPU i pinned "
            "to host core i", "tcg,thread=multi", pin=True),
    Setting("tcg-single-idle-poll", "single-threaded TCG, guest idle=poll",
            "tcg,thread=single", append="idle=poll"),
    Setting("tcg-single-nohz-off", "single-threaded TCG, guest nohz=off "
            "(the tick never stops)", "tcg,thread=single",
            append="nohz=off"),
    # The guest marks the TSC unstable (2 vCPUs of an AMD-type CPU model)
    # and picks hpet anyway: this measures that choice, asked for.
    Setting("tcg-single-hpet", "single-threaded TCG, guest clocksource "
            "hpet (its own choice)", "tcg,thread=single",
            append="clocksource=hpet"),
    Setting("tcg-single-acpi-pm", "single-threaded TCG, guest clocksource "
            "acpi_pm", "tcg,thread=single", append="clocksource=acpi_pm"),
    # Under -icount the boot CPU spins waiting for the second vCPU and
    # QEMU 7.2 never switches to it: maxcpus=1, and guest/init brings the
    # second CPU online, where the wait sleeps (and lpj=, above).
    Setting("icount-3-sleep", "instruction counting, 8 ns per "
            "instruction, sleep=on (idle takes real time)", "tcg",
            icount="shift=3,sleep=on", append=ICOUNT_APPEND),
    Setting("icount-3-nosleep", "instruction counting, 8 ns per "
            "instruction, sleep=off (virtual time jumps over idle)",
            "tcg", icount="shift=3,sleep=off", append=ICOUNT_APPEND),
    Setting("icount-5-nosleep", "instruction counting, 32 ns per "
            "instruction, sleep=off", "tcg", icount="shift=5,sleep=off",
            append=ICOUNT_APPEND),
    # The lab's build of QEMU without its patches: what the build itself
    # (its configure options, lab/build/qemubuild.py) changes.
    Setting("icount-3-labbuild", "icount-3-nosleep in the lab's build of "
            "Debian's QEMU source, none of its patches", "tcg",
            icount="shift=3,sleep=off", append=ICOUNT_APPEND, lab_qemu=True,
            qemu_patches=0),
    # The lab's QEMU (common/qemu/): each vCPU gets an equal share of the
    # instructions until the next timer, and at most 20 us of them before
    # the other vCPU's turn (lab/docs/fidelity.md).
    Setting("icount-3-fair", "icount-3-nosleep in the lab's QEMU: the "
            "round-robin shares each pass's budget between the vCPUs",
            "tcg", icount="shift=3,sleep=off", append=ICOUNT_APPEND,
            lab_qemu=True),
    Setting("icount-3-slice20", "icount-3-fair, and no vCPU runs more "
            "than 20 us before the other's turn", "tcg,icount-slice=20000",
            icount="shift=3,sleep=off", append=ICOUNT_APPEND, lab_qemu=True),
    # The lab's QEMU before 0003 (the cmpxchg flags mend): the medium of
    # every report made before reports/2026-12-05-fidelity-cmpxchg/.
    Setting("icount-3-slice20-no0003", "icount-3-slice20 in the lab's QEMU "
            "without patch 0003", "tcg,icount-slice=20000",
            icount="shift=3,sleep=off", append=ICOUNT_APPEND, lab_qemu=True,
            qemu_patches=2),
    # The null control's speed-matched twin.  Under icount every vCPU's
    # instructions advance the one virtual clock, so while CPU1 is busy
    # CPU0 runs at half speed.  At 16 ns per instruction an idle guest's
    # CPU0 runs at that same speed with no other vCPU to wait for
    # (lab/docs/fidelity.md).
    Setting("icount-4-slice20", "icount-3-slice20 at half speed (16 ns "
            "per instruction)", "tcg,icount-slice=20000",
            icount="shift=4,sleep=off", append=ICOUNT_APPEND, lab_qemu=True),
    # The same twins for bigger guests: with every one of N vCPUs busy,
    # each runs at 1/N of the default's speed
    # (common/scenarios/README.md, "Guest size").
    Setting("icount-5-slice20", "icount-3-slice20 at a quarter of its "
            "speed (32 ns per instruction): a 4-vCPU guest's CPU0 with "
            "every vCPU busy", "tcg,icount-slice=20000",
            icount="shift=5,sleep=off", append=ICOUNT_APPEND, lab_qemu=True),
    Setting("icount-6-slice20", "icount-3-slice20 at an eighth of its "
            "speed (64 ns per instruction): an 8-vCPU guest's CPU0 with "
            "every vCPU busy", "tcg,icount-slice=20000",
            icount="shift=6,sleep=off", append=ICOUNT_APPEND, lab_qemu=True),
    # Parallel virtual time (common/qemu/0005): every busy vCPU runs at
    # its full speed however many others are busy, as a machine's cores
    # do, and the instruction time a ladder from 8 ns toward a real
    # core's.  The slice bounds a whole round-robin pass, so it is how
    # far one vCPU can run ahead of another: 2500 instructions on every
    # rung, a shorter time as the instructions get faster
    # (lab/docs/medium.md).
    Setting("parallel-8ns", "parallel virtual time, 8 ns per "
            "instruction, passes of at most 20 us",
            "tcg,icount-slice=20000,icount-parallel=on",
            icount="shift=3,sleep=off", append=ICOUNT_APPEND, lab_qemu=True),
    Setting("parallel-2ns", "parallel virtual time, 2 ns per "
            "instruction, passes of at most 5 us",
            "tcg,icount-slice=5000,icount-parallel=on",
            icount="shift=1,sleep=off", append=ICOUNT_APPEND, lab_qemu=True),
    Setting("parallel-0.5ns", "parallel virtual time, 0.5 ns per "
            "instruction (1 ns a clock step, two instructions a step), "
            "passes of at most 1.25 us",
            "tcg,icount-slice=1250,icount-parallel=on",
            icount="shift=0,sleep=off", append=ICOUNT_APPEND, lab_qemu=True,
            speedup=2),
    Setting("kvm", "hardware virtualisation", "kvm"),
]


# The fidelity study's choice (lab/docs/fidelity.md): icount has the
# lowest noise floor by far (idle p99 31 us, 1 us apart over 5 boots),
# and in the lab's QEMU one busy vCPU no longer stalls the other (the
# null control's p99 49 us instead of 9-26 ms).
DEFAULT_TCG = "icount-3-slice20"
# The null control's idle twin: the default's speed while both vCPUs run.
HALF_SPEED_TCG = "icount-4-slice20"
# The best where QEMU is Debian's own, unpatched.
DEBIAN_TCG = "icount-3-nosleep"


def select(names: str) -> list:
    return pick(SETTINGS, names, "setting")


def medium_accel(name: str, arch=None) -> qemu.Accel:
    """The accelerator of the medium `name` (`--medium`, `make lab
    MEDIUM=`), for guests of `arch`: one TCG setting, in its virtual
    time.  KVM is no medium to ask for: it is used where it works."""
    by_name = {s.name: s for s in SETTINGS}
    if name not in by_name:
        raise LabError(f"unknown medium {name!r}: name one of the settings "
                       f"with virtual time: " + ", ".join(
                           s.name for s in SETTINGS if s.icount))
    chosen = by_name[name]
    if not chosen.icount:
        raise LabError(f"--medium {name}: {chosen.medium} is no medium the "
                       f"lab can state (KVM is used where it works, without "
                       f"--medium): name a setting with virtual time")
    return dataclasses.replace(chosen.to_accel(arch or arches.X86_64),
                               reason=f"medium {name} asked for "
                               f"({chosen.medium})")


def tcg(reason: str, debian_qemu: bool = False,
        arch=arches.X86_64) -> qemu.Accel:
    """The setting guests of `arch` run in when KVM is not used;
    `debian_qemu` where only Debian's QEMU runs them (LAVA workers without
    the lab's package)."""
    name = os.environ.get("LAB_TCG_SETTING", DEFAULT_TCG)
    if name.startswith("kvm"):
        raise LabError(f"LAB_TCG_SETTING={name}: name a TCG setting")
    chosen = select(name)[0]
    if name != DEFAULT_TCG:
        reason += f"; setting {name} from LAB_TCG_SETTING"
    if chosen.lab_qemu and debian_qemu:
        chosen = select(DEBIAN_TCG)[0]
        reason += (f"; {name} needs the lab's QEMU, these guests run in "
                   f"Debian's: setting {DEBIAN_TCG}")
    return dataclasses.replace(chosen.to_accel(arch), reason=reason)
