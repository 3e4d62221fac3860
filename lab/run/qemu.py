"""Launch a guest in QEMU: command line, watchdog, the KVM probe boot.

Which accelerator a run uses is decided in lab/run/accelerator.py.

QEMU keeps the host's normal scheduling priority: a QEMU under host
SCHED_FIFO starved a 2-core machine for ten minutes.
"""
import ctypes
import os
import shlex
import signal
import threading
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import capacities as sizes, hangdump
from ..build import qemubuild, qemudeb
from ..base import arches, medium
from ..base.log import LabError

PR_SET_PDEATHSIG = 1
KVM_PROBE_SECONDS = float(os.environ.get("LAB_KVM_PROBE_SECONDS", "6"))


def qemu_binary(accel: "Accel" = None, arch=arches.X86_64) -> str:
    """For an x86 guest LAB_QEMU if set; else the lab's QEMU build for the
    guest's architecture when the setting needs it
    (lab/build/qemubuild.py), else Debian's (for x86 lab/build/qemudeb.py:
    a copy where the lab's package replaced the system's)."""
    if os.environ.get("LAB_QEMU") and arch is arches.X86_64:
        return os.environ["LAB_QEMU"]
    if accel is not None and accel.emulator:
        return str(qemubuild.ensure(len(accel.emulator["patches"]), arch))
    if arch is arches.X86_64:
        return qemudeb.debian_binary()
    return f"/usr/bin/{arch.qemu_binary}"


def kvm_device() -> Path:
    return Path(os.environ.get("LAB_KVM_DEVICE", "/dev/kvm"))


@dataclass
class Accel:
    """How guests are emulated: accelerator, its options, and the rest of
    a fidelity setting (lab/run/settings.py)."""
    name: str          # "kvm" or "tcg"
    reason: str        # why this one
    args: list = field(default_factory=list)
    setting: str = ""  # a lab/run/settings.py name, "" for the lab's choice
    append: str = ""   # guest kernel parameters the setting adds
    pin: bool = False  # pin vCPU thread i to host core i
    # the lab's QEMU build (lab/build/qemubuild.py, provenance()), {} for Debian's
    emulator: dict = field(default_factory=dict)
    # a hard irq longer than this is a vCPU the emulator did not run, not
    # the kernel (lab/analyse/trace.py); None: this emulation does not stall one
    stall_us: float = None
    # a full-speed vCPU's instructions in 2^shift ns (lab/run/settings.py)
    speedup: int = 1

    def summary(self) -> str:
        """One line for people: what runs the guest, and why."""
        how = " ".join(self.args) + (f", guest {self.append}"
                                     if self.append else "")
        setting = f", setting {self.setting}" if self.setting else ""
        qemu = (f", the lab's QEMU {self.emulator['build']}"
                if self.emulator else "")
        return f"{self.name}{setting}{qemu} ({how}): {self.reason}"

    def as_dict(self) -> dict:
        return {"name": self.name, "reason": self.reason,
                "args": self.args, "setting": self.setting,
                "append": self.append, "pin": self.pin,
                "emulator": self.emulator, "stall_us": self.stall_us,
                "speedup": self.speedup,
                "medium": medium.of({"name": self.name, "args": self.args,
                                     "speedup": self.speedup})}


def host_cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def qemu_version(accel: Accel = None, arch=arches.X86_64) -> str:
    try:
        r = subprocess.run([qemu_binary(accel, arch), "--version"],
                           capture_output=True,
                           text=True, timeout=10)
        return r.stdout.splitlines()[0] if r.stdout else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def probe_kvm(kernel: Path, timeout: float = None) -> tuple:
    """Boot `kernel` under KVM with no root: (works, what happened).

    A working KVM guest prints its banner and panics at root mount within
    a second or two; panic=-1 with -no-reboot ends QEMU.  Silence until
    the timeout is the hang we know.
    """
    timeout = timeout or KVM_PROBE_SECONDS
    cmd = [qemu_binary(), "-accel", "kvm", "-m", "256", "-smp", "1",
           "-nodefaults", "-no-reboot", "-display", "none",
           "-serial", "stdio", "-kernel", str(kernel),
           "-append", "console=ttyS0 panic=-1"]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
    except OSError as e:
        return False, f"cannot start {cmd[0]}: {e}"
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, _ = proc.communicate()
        if b"Linux version" in out:
            return False, f"guest started but did not finish in {timeout:.0f} s"
        return False, f"no console output in {timeout:.0f} s (guest hangs)"
    if b"Linux version" in out:
        return True, "probe boot reached the kernel banner and exited"
    text = out.decode(errors="replace").strip().splitlines()
    return False, f"QEMU exited {proc.returncode}: " + \
        (text[-1] if text else "no output")


# Looked up here, in the parent: a dlopen in a child forked from a
# threaded program (guests run side by side) can deadlock.
_prctl = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent() -> None:
    """In the child before exec: take QEMU down if the lab is killed
    (even by SIGKILL), so no orphan guest writes into a run folder that
    a resumed lab is redoing."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a process started with start_new_session, and its children."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


# The guest every runner boots (LAVA's jobs too): its memory and CPUs.
GUEST_MEMORY_MB = 1024
GUEST_CPUS = 2


def guest_options(accel: Accel, cpus: int = GUEST_CPUS) -> list:
    """QEMU options every runner gives a lab guest (LAVA's too)."""
    # debug-threads names vCPU threads "CPU n/TCG", for pinning
    return [*accel.args, "-name", "lab,debug-threads=on",
            "-smp", str(cpus), "-no-reboot"]


def kernel_cmdline(accel: Accel, append: str = "",
                   console: str = arches.X86_64.console) -> str:
    """The guest kernel's parameters: console, the setting's, then the
    scenario's or the runner's."""
    return " ".join(w for w in (f"console={console},115200 panic=-1",
                                accel.append, append) if w)


def with_speeds(args: list, capacities, speedup: int = 1) -> list:
    """The accelerator's options with each vCPU's speed from its capacity
    (the lab's QEMU, common/qemu/0004), times the setting's speedup."""
    at = args.index("-accel") + 1
    if not args[at].startswith("tcg") or "-icount" not in args:
        raise LabError("CPU capacities run in TCG with -icount (the "
                       "lab's settings): the speeds are in virtual time")
    return [*args[:at], f"{args[at]},icount-speeds="
            f"{sizes.speeds(capacities, speedup)}", *args[at + 1:]]


def scratch_disk(image) -> list:
    """QEMU options for a scratch disk with one queue: only then do its
    completions go through BLOCK_SOFTIRQ (blk-mq completes locally when a
    hardware queue maps one CPU; QEMU 7.2 gives virtio-blk one queue per
    vCPU)."""
    return ["-drive", f"file={image},if=none,id=scratch,format=raw",
            "-device", "virtio-blk-pci,drive=scratch,num-queues=1"]


@dataclass
class Machine:
    kernel: Path
    initrd: Path
    share: Path                 # 9p folder: plan in, results out
    accel: Accel
    cpus: int = GUEST_CPUS
    memory_mb: int = GUEST_MEMORY_MB
    append: str = ""
    extra: list = field(default_factory=list)
    arch: arches.Arch = arches.X86_64
    # each vCPU's capacity (lab/run/capacities.py); (): all the same
    capacities: tuple = ()

    def command(self) -> list:
        binary = qemu_binary(self.accel, self.arch)
        board = list(self.arch.machine)
        options = guest_options(self.accel, self.cpus)
        if self.capacities:
            if not self.accel.emulator:
                raise LabError("CPU capacities need the lab's QEMU (its "
                               "per-vCPU speeds): a setting with lab_qemu")
            options = with_speeds(options, self.capacities,
                                  self.accel.speedup)
            board += ["-dtb", str(sizes.device_tree(
                binary, self.arch.machine, self.cpus, self.memory_mb,
                self.capacities))]
        elif self.accel.speedup != 1:
            options = with_speeds(options, (1024,) * self.cpus,
                                  self.accel.speedup)
        return [binary, *options, *board,
                "-m", str(self.memory_mb),
                "-nodefaults", "-display", "none", "-serial", "stdio",
                "-kernel", str(self.kernel), "-initrd", str(self.initrd),
                "-append", kernel_cmdline(self.accel, self.append,
                                          self.arch.console),
                "-fsdev", f"local,id=lab,path={self.share},"
                          f"security_model=none",
                "-device", "virtio-9p-pci,fsdev=lab,mount_tag=lab",
                *self.extra]


@dataclass
class Outcome:
    status: str        # "exited", "timeout"
    exit_code: int
    seconds: float
    console: Path
    cpus: str = ""     # a hang: what the vCPUs were doing (lab/run/hangdump.py)

    def tail(self, n: int = 15) -> str:
        try:
            lines = self.console.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])


# Guests running now, for stop_all (guests run side by side, JOBS).
_running = set()
_running_lock = threading.Lock()
_stopping = threading.Event()


def stop_all() -> None:
    """Kill every running guest; their run() calls raise KeyboardInterrupt
    so that no cut-off run is judged and recorded as finished.  Guests
    can start again after stopped()."""
    with _running_lock:
        _stopping.set()
        for proc in list(_running):
            kill_group(proc)


def stopped() -> None:
    """Every run() that stop_all() cut off has returned."""
    _stopping.clear()


def run(machine: Machine, console: Path, timeout: float) -> Outcome:
    """Run the guest to its end, or kill it after `timeout` seconds.

    The console goes straight to a file, so it survives whatever happens to
    the guest or to this process.
    """
    if _stopping.is_set():
        raise KeyboardInterrupt
    started = time.monotonic()
    cpus = ""
    with open(console, "wb") as out, \
            tempfile.TemporaryDirectory(prefix="lab-qmp-") as qmp_dir:
        qmp = Path(qmp_dir) / "qmp.sock"
        try:
            proc = subprocess.Popen(machine.command() + [
                                        "-qmp", f"unix:{qmp},server=on,"
                                                "wait=off"],
                                    stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT,
                                    start_new_session=True,
                                    preexec_fn=_die_with_parent)
        except OSError as e:
            raise LabError(f"cannot start QEMU "
                           f"({qemu_binary(machine.accel, machine.arch)}): "
                           f"{e}; install {machine.arch.qemu_package} "
                           f"(`make deps`)") from e
        with _running_lock:
            _running.add(proc)
            if _stopping.is_set():      # stop_all ran while it started
                kill_group(proc)
        try:
            if machine.accel.pin:
                pin_vcpus(proc.pid, machine.cpus)
            code = proc.wait(timeout=timeout)
            status = "exited"
        except subprocess.TimeoutExpired:
            cpus = hangdump.capture(
                qmp, console.with_name("hang-cpus.txt"),
                Path(machine.kernel).with_name("System.map"))
            kill_group(proc)
            code = proc.wait()
            status = "timeout"
        except BaseException:
            kill_group(proc)       # never leave a guest behind
            raise
        finally:
            with _running_lock:
                _running.discard(proc)
        if _stopping.is_set():
            raise KeyboardInterrupt
    return Outcome(status, code, round(time.monotonic() - started, 2),
                   console, cpus)


def vcpu_threads(pid: int) -> dict:
    """{vCPU index: host thread id} of a running QEMU (debug-threads)."""
    threads = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            comm = (task / "comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith("CPU ") and "/" in comm:
            threads[int(comm[4:comm.index("/")])] = int(task.name)
    return threads


def pin_vcpus(pid: int, cpus: int, wait: float = 10) -> None:
    """Pin vCPU i's thread to host core i (mod the host's cores)."""
    cores = sorted(os.sched_getaffinity(0))
    end = time.monotonic() + wait
    threads = {}
    while len(threads) < cpus and time.monotonic() < end:
        threads = vcpu_threads(pid)
        time.sleep(0.05)
    if len(threads) < cpus:
        raise LabError(f"pinning: found {len(threads)} of {cpus} vCPU "
                       f"threads of QEMU {pid} in {wait:.0f} s")
    for i, tid in sorted(threads.items()):
        os.sched_setaffinity(tid, {cores[i % len(cores)]})


def describe(machine: Machine) -> dict:
    return {"command": shlex.join(machine.command()),
            "accel": machine.accel.as_dict(),
            "qemu_version": qemu_version(machine.accel, machine.arch),
            "host_cpu": host_cpu(),
            "host_boot_id": boot_id()}
