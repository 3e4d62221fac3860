"""A kernel as Debian ships it: the variant kind `package = linux-image-...`.

Nothing is built and nothing is installed on the host.  `apt-get
download` fetches the image package at the version variant.conf names
(package_version) and the headers external modules build against (the
flavour's package, and the common headers and kbuild tools it depends
on, at the versions it names), or takes them from the variant's
package_debs folder; `dpkg-deb -x` unpacks them into
cache/packaged/<package>_<version>/, so a new version is a new folder.  The guest gets the
image, and the drivers the lab's guest needs that Debian builds as
modules (virtio, 9p, ext4), loaded by /init before it mounts anything
(guest/init).
"""
import json
import lzma
import re
import shutil
import tempfile
from functools import partial
from pathlib import Path

from ..base import paths, store
from ..base.log import LabError, info
from ..base.variants import CONF, Variant
from .built import Built
from . import step

RECIPE = "apt-get-download+dpkg-deb-x/v2"
# What the lab's guest needs that the lab's own kernels build in: the
# PCI transport and the block, net and 9p devices on it, the 9p file
# system the run folder is shared with, ext4 for the scratch disk and the
# crc32c ext4 asks the crypto API for at mount time.
DRIVERS = ("virtio_pci", "virtio_blk", "virtio_net", "9pnet_virtio", "9p",
           "crc32c_generic", "ext4")


_run = partial(step.run, lines=6)


def download(names: list, work: Path, variant: Variant) -> list:
    """The .deb files of `names` ("pkg=version"), in order: from the
    variant's package_debs folder if it names one, else from Debian's
    archive."""
    if variant.package_debs:
        return [local_deb(n, variant) for n in names]
    try:
        _run(["apt-get", "download", *names], work,
             f"variant {variant.name}: apt-get download {' '.join(names)}")
    except LabError as e:
        # apt names the one it lacks: "E: Version 'v' for 'pkg' was not found"
        m = re.search(r"Version '([^']+)' for '([^']+)' was not found",
                      str(e))
        missing = f"{m.group(2)}={m.group(1)}" if m else names[0]
        raise LabError(f"{e}\n{not_in_archive(missing, variant)}") from None
    return [only(work, n, f"variant {variant.name}: apt-get download left")
            for n in names]


def not_in_archive(name: str, variant: Variant) -> str:
    pkg, _, version = name.partition("=")
    return (f"variant {variant.name}: {pkg} {version} is not in the "
            f"archive apt reads (`apt-cache policy {pkg}`; run `apt-get "
            f"update` once); if Debian no longer has it, put that "
            f"version's .deb files (the image, its headers and what they "
            f"depend on) in a folder and name it in "
            f"{variant.folder / CONF} as `package_debs = <folder>`")


def only(folder: Path, name: str, what: str) -> Path:
    """The one .deb of "pkg=version" in `folder`."""
    pkg, _, version = name.partition("=")
    # dpkg's file names leave the epoch out ("1:2.3-4" is pkg_2.3-4_...)
    found = sorted(folder.glob(f"{pkg}_{version.split(':')[-1]}_*.deb"))
    if len(found) != 1:
        raise LabError(f"{what} {len(found)} file(s) "
                       f"{pkg}_{version}_*.deb in {folder}, not one")
    return found[0]


def local_deb(name: str, variant: Variant) -> Path:
    folder = variant.package_debs
    if not folder.is_dir():
        raise LabError(f"{variant.folder / CONF}: package_debs = {folder}: "
                       f"no such folder")
    return only(folder, name, f"{variant.folder / CONF}: package_debs has")


def field(deb: Path, name: str) -> str:
    return _run(["dpkg-deb", "-f", str(deb), name], deb.parent,
                f"dpkg-deb -f {deb.name}").strip()


def depends(deb: Path) -> list:
    """The headers and kbuild packages a headers package needs, each
    pinned to the version it names, or to its own where it names none
    (one source package builds them all): 'linux-headers-6.1.0-57-common-rt
    (= 6.1.192-3), linux-kbuild-6.12.118+deb12, ...'.  Not the image or
    linux-base it may also name: a module builds without them."""
    own = field(deb, "Version")
    out = []
    for dep in field(deb, "Depends").split(","):
        m = re.match(r"\s*(linux-(?:headers|kbuild)-[\w.+-]+)\s*"
                     r"(?:\((?:=|>=)\s*([^)\s]+)\))?\s*$", dep)
        if m:
            out.append(f"{m.group(1)}={m.group(2) or own}")
    return out


def module_name(path: str) -> str:
    """kernel/fs/9p/9p.ko.xz -> 9p; crc32c-generic.ko -> crc32c_generic"""
    return Path(path).name.split(".ko")[0].replace("-", "_")


def load_order(modules_dep: Path, wanted: tuple) -> list:
    """The module files (relative to the modules folder) to load for
    `wanted`, each after what it depends on, each once, from depmod's
    modules.dep ('path: dep dep ...'); one built into the kernel
    (modules.builtin beside it: Debian's 6.12 builds virtio_pci in) is
    left out."""
    deps, by_name = {}, {}
    builtin = modules_dep.with_name("modules.builtin")
    inside = {module_name(p) for p in builtin.read_text().split()} \
        if builtin.is_file() else set()
    for line in modules_dep.read_text().splitlines():
        path, _, rest = line.partition(":")
        deps[path] = rest.split()
        by_name[module_name(path)] = path
    order = []

    def visit(path):
        if path in order:
            return
        for d in deps.get(path, ()):
            visit(d)
        order.append(path)

    for name in wanted:
        if name in inside:
            continue
        if name not in by_name:
            raise LabError(f"{modules_dep}: no module {name}: the guest "
                           f"cannot reach its devices with this kernel")
        visit(by_name[name])
    return order


def fetch(variant: Variant, index: int = 1, total: int = 1) -> Built:
    """The packaged kernel of `variant`, fetched and unpacked once."""
    package, version = variant.package, variant.package_version
    label = f"variant {index}/{total} {variant.name}"
    top = paths.cache_dir() / "packaged"
    folder = top / f"{package}_{version}"
    meta_file = folder / "build.json"
    if meta_file.is_file():
        meta = json.loads(meta_file.read_text())
        if meta.get("recipe") == RECIPE:
            info(f"{label}: up to date ({package} {version}, unpacked)")
            return Built(variant.name, folder, dict(meta,
                                                    variant=variant.name))
        shutil.rmtree(folder)   # unpacked by an older recipe
    where = variant.package_debs or "Debian's archive"
    info(f"{label}: fetching {package} {version} and its headers from "
         f"{where}")
    top.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=top, prefix=".fetch.") as work:
        work = Path(work)
        (image_deb,) = download([f"{package}={version}"], work, variant)
        if field(image_deb, "Version") != version:
            raise LabError(f"variant {variant.name}: {image_deb} is "
                           f"version {field(image_deb, 'Version')}, not "
                           f"{version} as {CONF} says")
        release = package.removeprefix("linux-image-")
        headers = f"linux-headers-{release}"
        (headers_deb,) = download([f"{headers}={version}"], work, variant)
        extra = download(depends(headers_deb), work, variant)
        stage = work / "stage"
        for deb in (image_deb, headers_deb, *extra):
            dest = stage / ("root" if deb is image_deb else "headers")
            dest.mkdir(parents=True, exist_ok=True)
            _run(["dpkg-deb", "-x", str(deb), str(dest)], work,
                 f"dpkg-deb -x {deb.name}")
        root = stage / "root"
        _run(["depmod", "-b", str(root), release], work,
             f"depmod for {package}")
        # The guest needs a few of its 4000 modules: keep those (0.4 GB
        # less in the cache), and modules.dep, which orders them.
        mods = root / "lib/modules" / release
        keep = set(load_order(mods / "modules.dep", DRIVERS))
        for ko in (mods / "kernel").rglob("*.ko*"):
            if str(ko.relative_to(mods)) not in keep:
                ko.unlink()
            elif ko.suffix == ".xz":
                # Debian's 6.12 compresses its modules with xz; the
                # guest's busybox loads them uncompressed
                ko.with_suffix("").write_bytes(lzma.decompress(
                    ko.read_bytes()))
                ko.unlink()
        _run(["depmod", "-b", str(root), release], work,
             f"depmod for {package}, on the modules kept")
        shutil.rmtree(root / "usr", ignore_errors=True)
        for name, dest in ((f"vmlinuz-{release}", "bzImage"),
                           (f"config-{release}", "config"),
                           (f"System.map-{release}", "System.map")):
            shutil.copy2(root / "boot" / name, stage / dest)
        flavour = f"headers/usr/src/linux-headers-{release}"
        # Its Makefile includes the common headers by their installed
        # path, /usr/src/...; here they sit beside it.
        makefile = stage / flavour / "Makefile"
        makefile.write_text(re.sub(
            r"^include /usr/src/", f"include {folder}/headers/usr/src/",
            makefile.read_text(), flags=re.M))
        meta = {
            "variant": variant.name,
            "hash": store.sha256(image_deb),
            "recipe": RECIPE,
            "release": release,
            "kernel_version": version.split("-")[0],
            "package": package,
            "package_version": version,
            "source_tarball_sha256": "",
            "patches": [],
            "config_sha256": store.sha256(stage / "config"),
            "headers": flavour,
            "debs": {d.name: store.sha256(d)
                     for d in (image_deb, headers_deb, *extra)},
        }
        (stage / "build.json").write_text(json.dumps(meta, indent=2) + "\n")
        try:
            stage.rename(folder)
        except OSError:         # another process unpacked it first
            if not (folder / "build.json").is_file():
                raise
    info(f"{label}: {package} {version} unpacked")
    return Built(variant.name, folder, meta)


def drivers(built: Built) -> dict:
    """{guest path: host path} of the driver modules, named so that
    /init's sorted glob loads them in dependency order."""
    mods = built.folder / "root/lib/modules" / built.meta["release"]
    return {f"lib/modules/drivers/{i:02d}-{Path(rel).name}": mods / rel
            for i, rel in enumerate(load_order(mods / "modules.dep",
                                               DRIVERS))}
