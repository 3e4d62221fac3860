"""A finished LAVA job's log, unpacked into a run folder.

The guest's console is in the job log (level "target", and "feedback"
after the test ends).  guest/init wrote the result files into it as one
base64 gzip tar between "lab-files: begin <bytes> bytes sha256 <hash>"
and "lab-files: end"; this takes them out again, checks length and hash,
and leaves the rest as console.log, so the run folder holds what a
local run's does.
"""
import base64
import hashlib
import io
import re
import tarfile
import zlib
from pathlib import Path

from ....build import qemudeb
from ....base import store
from .jobs import SUITE

BEGIN = re.compile(r"lab-files: begin (\d+) bytes sha256 ([0-9a-f]{64})")
END = "lab-files: end"
# printk's emergency messages reach the console even inside the block
# (reboot's "Restarting system" while the tty still drains it)
KERNEL_MESSAGE = re.compile(r"\[ *\d+\.\d+\] .*")
QEMU_COMMAND = "Boot command: "
QEMU_VERSION = re.compile(r"qemu-system-x86, installed at version: ([^\s,]+)")


def console_lines(log: list) -> list:
    return [str(e.get("msg", "")) for e in log
            if e.get("lvl") in ("target", "feedback")]


def split_files(lines: list) -> tuple:
    """(console lines without the files block, the block's bytes or None,
    what is wrong with the block or '')."""
    for i, line in enumerate(lines):
        m = BEGIN.search(line)
        if not m:
            continue
        try:
            end = lines.index(END, i + 1)
        except ValueError:
            return lines, None, "the result files were cut off (no end marker)"
        block = "".join(KERNEL_MESSAGE.sub("", x).strip()
                        for x in lines[i + 1:end])
        try:
            data = base64.b64decode(block, validate=True)
        except ValueError:
            data = b""
        size, digest = int(m.group(1)), m.group(2)
        rest = lines[:i] + lines[end + 1:]
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            return rest, None, (f"the result files arrived damaged: "
                                f"{len(data)} bytes of {size}, sha256 "
                                f"differs")
        return rest, data, ""
    return lines, None, ""


def unpack(data: bytes, run_dir: Path) -> None:
    """Extract the guest's tar into `run_dir`: flat files only, as the
    guest writes them, so nothing lands outside the run folder."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).as_posix().lstrip("./")
            if member.isfile() and name and "/" not in name:
                store.write_bytes(run_dir / name,
                                  tar.extractfile(member).read())


def qemu_facts(log: list) -> dict:
    """The QEMU command line and version LAVA logged for the job."""
    facts = {}
    for e in log:
        msg = e.get("msg")
        if not isinstance(msg, str):
            continue
        if msg.startswith(QEMU_COMMAND) and "command" not in facts:
            facts["command"] = msg[len(QEMU_COMMAND):]
        m = QEMU_VERSION.search(msg)
        if m and "qemu_version" not in facts:
            facts["qemu_version"] = "QEMU " + m.group(1)
    return facts


def wrong_qemu(qemu: dict, device: str) -> str:
    """Why a job's QEMU is not the one its setting was chosen for ('' if
    it is): the version LAVA logged names the lab's build, or none."""
    want = qemu.get("accel", {}).get("emulator", {}).get("build", "")
    logged = qemu.get("qemu_version", "")
    got = qemudeb.build_of(logged.removeprefix("QEMU "))
    if want == got:
        return ""
    where = f"LAVA device {device}" if device else "the LAVA worker"
    if not logged:
        return (f"{where}: the job log names no qemu-system-x86 version, "
                f"so the lab's QEMU build {want} cannot be shown to have "
                f"run it")
    if want:
        return (f"{where} ran {logged}, not the lab's QEMU build {want}: "
                f"install the package `make qemu-deb` makes on the worker "
                f"with dpkg -i, or run with LAVA_QEMU=debian")
    return (f"{where} ran the lab's QEMU ({logged}) in a setting for "
            f"Debian's: run with LAVA_QEMU=lab")


def test_cases(results: list) -> list:
    """The lab's test cases of a job: name, result, measurement, unit."""
    cases = []
    for r in results:
        if not str(r.get("suite", "")).endswith(SUITE):
            continue
        value = r.get("measurement")
        cases.append({"name": r["name"], "result": r["result"],
                      "measurement": None if value in (None, "None", "")
                      else float(value), "unit": r.get("unit", "")})
    return cases


def failure(job: dict, log: list) -> str:
    """LAVA's own account of why a job did not complete."""
    errors = [e["msg"].get("error_msg") for e in log
              if e.get("lvl") == "results" and isinstance(e.get("msg"), dict)
              and e["msg"].get("error_msg")]
    why = job.get("failure_comment") or (errors[-1] if errors else "")
    return f"LAVA job {job['id']} {job['health'].lower()}" + \
        (f": {why}" if why else "")


def into_run_folder(log: list, run_dir: Path) -> tuple:
    """Write console.log and the result files; return the console and
    what went wrong with the files ('' if nothing)."""
    lines, data, problem = split_files(console_lines(log))
    console = "\n".join(lines) + "\n"
    store.write_text(run_dir / "console.log", console)
    if data is not None:
        try:
            unpack(data, run_dir)
        except (tarfile.TarError, EOFError, zlib.error) as e:
            problem = f"the result files are not a readable tar: {e}"
    return console, problem
