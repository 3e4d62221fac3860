"""The medium a run's numbers come from: how its virtual time relates to
a machine's.

Two things decide it (lab/docs/medium.md): whether busy vCPUs share one
clock (under plain -icount each of N busy vCPUs runs at 1/N of the
speed) or run side by side in parallel virtual time (the lab's QEMU,
common/qemu/0005), and how long an instruction takes.  Runs of two media
measure different machines: they never meet in one comparison, pool or
replicate.  The medium is read from what run.json records of the
accelerator, so runs made before it was named have theirs too.
"""


def _option(args: list, flag: str) -> str:
    return next((args[i + 1] for i, a in enumerate(args[:-1]) if a == flag),
                "")


def _suboptions(text: str) -> dict:
    return dict(w.partition("=")[::2] for w in text.split(",") if w)


def insn_ns(accel: dict) -> float:
    """Nanoseconds of virtual time an instruction of a full-speed vCPU
    takes (0: not counted, the host's time)."""
    icount = _suboptions(_option(accel.get("args", []), "-icount"))
    if "shift" not in icount:
        return 0.0
    return 2 ** int(icount["shift"]) / accel.get("speedup", 1)


def parallel(accel: dict) -> bool:
    tcg = _suboptions(_option(accel.get("args", []), "-accel"))
    return tcg.get("icount-parallel") == "on"


def of(accel: dict) -> str:
    """The medium in a few words, from run.json's qemu.accel."""
    if accel.get("name") == "kvm":
        return "hardware (KVM)"
    ns = insn_ns(accel)
    if not ns:
        return "TCG in host time"
    clock = "parallel time" if parallel(accel) else "shared clock"
    return f"{clock}, {ns:g} ns an instruction"
