"""One matrix cell as a LAVA job definition, with the files it deploys.

A job deploys the variant's kernel and an initramfs made for the job:
the variant's initramfs with the cell's plan appended as /lab/plan.sh
(the kernel unpacks concatenated cpio archives in order).  The kernel
parameters add lab.results=console, so the guest sends its results over
the console instead of a 9p share (guest/init).

Job definitions come from a template in lab/run/runners/lava/templates/ (or any
file): YAML with ${name} fields, which this module fills with quoted
values, so a template stays a readable LAVA job that a lab adapts.
"""
import gzip
import hashlib
import io
import json
import string
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ....build import initramfs
from ....base import paths, store
from ... import qemu, runfolder
from ....base.log import LabError

TEMPLATES = Path(__file__).resolve().parent / "templates"
SUITE = "softirq-rt-lab"
CONSOLE_TRANSPORT = "lab.results=console"
# Time a job needs besides the plan's measurement: LAVA's deploy, boot,
# results over the console (measured: 1-5 s more than a local run on
# the local LAVA; the margin is for slower workers and links).
JOB_OVERHEAD_S = 60


@dataclass
class Artifacts:
    """Where job files go, and the URL the LAVA worker fetches them by."""
    folder: Path
    url: str

    @classmethod
    def at(cls, folder: str = "", url: str = "") -> "Artifacts":
        path = Path(folder) if folder else paths.BUILD_DIR / "lava-artifacts"
        path = path.resolve()
        return cls(path, (url or path.as_uri()).rstrip("/"))

    def publish(self, name: str, make, shared: bool = False) -> str:
        """Put the bytes make() returns where the worker fetches them;
        return their URL.  A shared file is named by its content, so it
        is made once."""
        dest = self.folder / name
        if not (shared and dest.is_file()):
            self.folder.mkdir(parents=True, exist_ok=True)
            store.write_bytes(dest, make())
        return f"{self.url}/{name}"


def template_path(name: str) -> Path:
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path
    path = TEMPLATES / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in TEMPLATES.glob("*.yaml")))
        raise LabError(f"LAVA job template {name!r} not found: give a "
                       f"file or one of {known}")
    return path


def is_qemu(template: Path) -> bool:
    """Whether jobs from `template` boot in LAVA's qemu device type."""
    return "\ndevice_type: qemu\n" in template.read_text()


def plan_cpio(plan_text: str) -> bytes:
    """A cpio holding lab/plan.sh, to append to the base initramfs."""
    with tempfile.TemporaryDirectory() as stage:
        (Path(stage) / "lab").mkdir()
        (Path(stage) / "lab" / "plan.sh").write_text(plan_text)
        return initramfs.cpio(Path(stage))


def scratch_image(size_mb: int) -> bytes:
    """A gzipped zero-filled disk of `size_mb` (a few hundred KB): LAVA
    unpacks it on the worker."""
    buf = io.BytesIO()
    chunk = b"\0" * (1 << 20)
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
        for _ in range(size_mb):
            f.write(chunk)
    return buf.getvalue()


def fill(template: Path, fields: dict) -> str:
    """The template with every ${name} replaced by a quoted value."""
    quoted = {k: json.dumps(v) for k, v in fields.items()}
    try:
        return string.Template(template.read_text()).substitute(quoted)
    except KeyError as e:
        raise LabError(f"{template}: field ${{{e.args[0]}}} is not one the "
                       f"lab fills ({', '.join(sorted(fields))})") from None
    except ValueError as e:
        raise LabError(f"{template}: {e}") from None


def definition(cell, built, initrd: Path, accel: qemu.Accel,
               artifacts: Artifacts, template: Path, run_dir: Path,
               device_type: str = "x86") -> tuple:
    """Write the cell's plan.sh and job.yaml into `run_dir`, publish the
    files the job deploys; return the job definition and the name of the
    published file only this job uses (its initramfs)."""
    scen = cell.scenario
    if scen.disk and not is_qemu(template):
        raise LabError(f"scenario {scen.name} needs a scratch disk, which "
                       f"only the qemu device type provides ({template})")
    plan_text = runfolder.plan_script(runfolder.PLAN, cell.plan_env())
    key = f"{cell.variant.name}-{scen.name}-boot{cell.boot}"
    digest = hashlib.sha256(plan_text.encode()).hexdigest()[:12]
    kernel_url = artifacts.publish(f"bzImage-{built.meta['hash'][:16]}",
                                   built.image.read_bytes, shared=True)
    own = f"initrd-{key}-{digest}.cpio"
    initrd_url = artifacts.publish(
        own, lambda: initrd.read_bytes() + plan_cpio(plan_text))
    seconds = cell.watchdog_seconds()
    fields = {
        "job_name": f"softirq-rt-lab {cell.variant.name} {scen.name} "
                    f"boot {cell.boot}",
        "job_seconds": int(seconds + 2 * JOB_OVERHEAD_S + 300),
        "boot_seconds": 300,
        "test_seconds": int(seconds + JOB_OVERHEAD_S),
        "memory_mb": scen.memory,
        # LAVA's qemu type adds -nographic, -m, -monitor none, a user-mode
        # NIC the guest leaves down, and QEMU's default devices
        "qemu_options": [" ".join(qemu.guest_options(accel, scen.cpus))],
        "cmdline": qemu.kernel_cmdline(
            accel, " ".join(w for w in (cell.append, CONSOLE_TRANSPORT)
                            if w)),
        "kernel_url": kernel_url, "initrd_url": initrd_url,
        "suite": SUITE, "device_type": device_type,
        "metadata": {"lab.variant": cell.variant.name,
                     "lab.scenario": scen.name, "lab.boot": str(cell.boot),
                     "lab.kernel": built.meta["release"],
                     "lab.accel": accel.summary()},
    }
    text = fill(template, fields)
    if scen.disk:
        text = add_scratch_disk(text, artifacts.publish(
            f"scratch-{scen.disk}M.img.gz",
            lambda: scratch_image(scen.disk), shared=True))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "plan.sh").write_text(plan_text)
    (run_dir / "job.yaml").write_text(text)
    return text, own


def add_scratch_disk(text: str, url: str) -> str:
    """The qemu job with the scenario's scratch disk as a third image,
    on the same single-queue virtio-blk the local runner gives it."""
    device = " ".join(qemu.scratch_disk("{scratch}")[1::2])
    entry = ("      scratch:\n"
             f"        image_arg: {device}\n"
             f"        url: {json.dumps(url)}\n"
             "        compression: gz\n")
    marker = "    images:\n"
    if marker not in text:
        raise LabError("qemu job template has no deploy images: section "
                       "for the scratch disk")
    return text.replace(marker, marker + entry, 1)
