"""Boot each variant and prove it is the variant it claims to be.

The guest reports `uname -r`, the CPUs it sees and its own .config (from
/proc/config.gz); the host checks the release names the variant, the CPU
count is what QEMU was given, and the booted config is the one the build
produced, so each variant's own switches are on in it and nowhere else.
A packaged Debian kernel has no config.gz: its release and the package
version in /proc/version prove it.  A variant with a setup.sh runs it,
and it must end well.
"""
from pathlib import Path

from ..base import kconfig, paths
from ..build.built import Built

PLAN = paths.GUEST_DIR / "plans" / "health.sh"


def check(built: Built, run_dir: Path, record: dict, cpus: int,
          variant) -> list:
    """Problems found in a finished health run; [] if it is healthy.
    `variant` must have booted with its own kernel parameters and, where
    it has a setup.sh, run it to its end."""
    if record["status"] != "ok":
        return [record["reason"]]
    problems = []
    append = variant.append
    if variant.setup:
        log = run_dir / "setup.log"
        said = log.read_text().splitlines() if log.is_file() else []
        if not said or said[-1] != "setup-exit 0":
            problems.append(f"{variant.name}'s setup.sh did not end well: "
                            f"{' | '.join(said[-5:]) or 'no setup.log'}")
    cmdline = (run_dir / "cmdline").read_text().split()
    missing = [w for w in append.split() if w not in cmdline]
    if missing:
        problems.append(f"booted without {' '.join(missing)}: /proc/cmdline "
                        f"is {' '.join(cmdline)!r}")
    release = (run_dir / "kernel-release").read_text().strip()
    own = built.meta["variant"]     # another's, for a boot-only variant
    seen = int((run_dir / "nproc").read_text())
    if seen != cpus:
        problems.append(f"guest sees {seen} CPU(s), QEMU gave it {cpus}")
    if built.packaged:
        return problems + packaged_identity(built, run_dir, release)
    if not release.endswith(f"-{own}"):
        problems.append(f"uname -r is {release!r}, expected it to end "
                        f"with -{own}")
    booted = kconfig.read_config(run_dir / "booted-config")
    expected = kconfig.read_config(built.folder / "config")
    if booted != expected:
        diff = sorted(k for k in set(booted) | set(expected)
                      if booted.get(k) != expected.get(k))
        problems.append("booted kernel's config differs from the built "
                        f"one in {', '.join(diff[:5])}")
    return problems


def packaged_identity(built: Built, run_dir: Path, release: str) -> list:
    """A Debian image has no /proc/config.gz: it proves itself by its
    release and the package version its banner carries ("... Debian
    6.1.192-3 (date)")."""
    problems = []
    if release != built.meta["release"]:
        problems.append(f"uname -r is {release!r}, expected "
                        f"{built.meta['release']!r} ({built.meta['package']})")
    version = (run_dir / "version").read_text()
    if f" Debian {built.meta['package_version']} " not in version:
        problems.append(f"/proc/version does not name Debian "
                        f"{built.meta['package_version']}: {version.strip()!r}")
    return problems


def line(built: Built, record: dict, problems: list) -> str:
    state = "ok" if not problems else "FAILED"
    init = record.get("boot_to_init_s")
    init_s = f"init at {init:.1f}s" if init is not None else "no init"
    return (f"{built.variant:<12} {built.meta['release']:<22} "
            f"{record['qemu']['accel']['name']} {record['cpus']} vCPU "
            f"{init_s}, run {record.get('seconds', 0):.0f}s  {state}")
