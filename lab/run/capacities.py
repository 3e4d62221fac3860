"""CPUs of different sizes in the arm64 guest (a scenario's
`capacities`): the device tree that declares them to the kernel, and
the speeds the lab's QEMU runs them at, so that a little CPU is little
in virtual time too (common/qemu/0004).

The device tree is QEMU's own for the guest's board, CPU count and
memory (`-machine virt,dumpdtb=`), with `capacity-dmips-mhz` set on each
CPU node by Debian's fdtput.  The kernel scales those values so that
the largest is 1024 (drivers/base/arch_topology.c); QEMU runs each vCPU
at its scaled capacity in 1/1024 of the full speed.
"""
import hashlib
import subprocess
from pathlib import Path

from ..base import paths
from ..base.log import LabError


def scaled(capacities) -> list:
    """Each CPU's capacity as the kernel computes it from the declared
    ones (drivers/base/arch_topology.c): the largest is 1024."""
    top = max(capacities)
    return [c * 1024 // top for c in capacities]


def speeds(capacities, speedup: int = 1) -> str:
    """The lab's QEMU's -accel tcg,icount-speeds= value: a vCPU's speed in
    1/1024 of one instruction per 2^shift ns, times `speedup` where the
    medium's instructions are faster than the shift allows."""
    return ":".join(str(c * speedup) for c in scaled(capacities))


def device_tree(qemu: str, machine: tuple, cpus: int, memory_mb: int,
                capacities) -> Path:
    """QEMU's device tree for this guest, with each CPU's capacity;
    made once per QEMU binary, board, size and capacities."""
    if len(capacities) != cpus:
        raise LabError(f"capacities: {len(capacities)} values for {cpus} "
                       f"CPUs")
    binary = Path(qemu).resolve()
    made = binary.stat()
    key = hashlib.sha256(repr((str(binary), made.st_size, made.st_mtime,
                               machine, cpus, memory_mb, tuple(capacities)))
                         .encode()).hexdigest()[:16]
    out = paths.cache_dir() / "dtb" / f"{key}.dtb"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{key}.{id(out)}.tmp")
    args = list(machine)
    at = args.index("-machine") + 1
    args[at] += f",dumpdtb={tmp}"
    _run([qemu, *args, "-smp", str(cpus), "-m", str(memory_mb),
          "-nodefaults", "-display", "none"], "dumping QEMU's device tree")
    nodes = cpu_nodes(tmp)
    if len(nodes) != cpus:
        raise LabError(f"QEMU's device tree has {len(nodes)} CPU nodes for "
                       f"{cpus} CPUs")
    for node, capacity in zip(nodes, capacities):
        _run(["fdtput", "-t", "u", str(tmp), node, "capacity-dmips-mhz",
              str(capacity)], f"fdtput {node} capacity-dmips-mhz")
    tmp.rename(out)
    return out


def cpu_nodes(dtb: Path) -> list:
    """The device tree's CPU nodes in vCPU order: by their `reg`, the
    MPIDR affinity QEMU gives vCPU 0, 1, ... in increasing order."""
    names = _run(["fdtget", "-l", str(dtb), "/cpus"],
                 "listing the device tree's CPUs").split()
    nodes = [f"/cpus/{n}" for n in names if n.startswith("cpu@")]
    reg = {n: int(_run(["fdtget", "-t", "x", str(dtb), n, "reg"],
                       f"reading {n}'s reg").split()[-1], 16)
           for n in nodes}
    return sorted(nodes, key=reg.get)


def _run(cmd: list, what: str) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LabError(f"{what}: {e} (fdtput and fdtget are Debian's "
                       f"device-tree-compiler: `make deps`)") from None
    if r.returncode != 0:
        raise LabError(f"{what} failed: {(r.stderr or r.stdout).strip()}")
    return r.stdout
