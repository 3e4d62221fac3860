"""Build each variant's kernel from the packaged source.

All variants of one packaged source share one git worktree and one O=
object folder: a variant's series is applied there with `git am` and
kbuild's own dependency tracking recompiles only what its patches and
Kconfig options touch (stultz-v5 after baseline: about 1 minute instead
of 9).  Separate trees per variant defeated ccache, whose hashes include
the tree's absolute path.  The finished image is stored under
cache/kernels/<content hash>/.  The hash covers the source tarball, the
common and variant fragments and the patches, so an unchanged variant is
never rebuilt, and a fresh clone finds the images its twin already built.
"""
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from ..base import arches, kconfig, paths, store
from . import packaged, source
from .cachelock import locked
from .built import Built
from ..base.log import LabError, fmt_seconds, info, warn
from ..base.variants import Variant

# How a kernel is made, its image and its compiler are its architecture's
# (lab/base/arches.py: bump a recipe when the way changes).
COMMON_DOTCONFIG = "lab.common.config"


# A cold variant: a 1.5 GB worktree and 0.25 GB of objects, with margin.
NEEDED_GB = 3


def check_disk(folder: Path, needed_gb: float,
               what: str = "a variant build") -> None:
    """Fail before a long step that would fill the disk half way."""
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free / 2**30
    if free < needed_gb:
        raise LabError(f"not enough disk space in {folder}: {free:.1f} GB "
                       f"free, {what} needs about {needed_gb} GB "
                       f"(set LAB_CACHE to use another disk)")


def _worktree(repo: Path, tree: Path = None) -> Path:
    """The one worktree every variant of this source is built in (or
    another worktree of the same repository, at `tree`)."""
    tree = tree or paths.cache_dir() / "trees" / repo.name
    if not (tree / ".git").exists():
        source.git(repo, "worktree", "prune")
        shutil.rmtree(tree, ignore_errors=True)
        tree.parent.mkdir(parents=True, exist_ok=True)
        source.git(repo, "worktree", "add", "-q", "--detach", str(tree),
                   source.BASE_TAG)
    return tree


def scratch_tree(repo: Path, tree: Path = None) -> Path:
    """The worktree beside a build tree (by default the one every variant
    of `repo` is built in) where series are applied with git am
    (checkout_series, and `lab variant add`'s check)."""
    tree = tree or paths.cache_dir() / "trees" / repo.name
    return _worktree(repo, tree.with_name(tree.name + "-series"))


def checkout_series(variant: Variant, tree: Path) -> None:
    """Bring the build tree to the variant's series, rewriting only the
    files that differ from what it holds now.

    The series is applied with `git am` in a scratch worktree beside it
    (reset to `packaged` first, which rewrites every file a series
    touched), and the build tree then checks out the resulting commit:
    git leaves files whose content did not change alone, so their mtimes
    stay and make recompiles only what really changed (a header such as
    include/linux/interrupt.h rewritten with the same text would make
    kbuild recompile 40% of the kernel).
    """
    common = source.git(tree, "rev-parse", "--git-common-dir").stdout
    scratch = scratch_tree((tree / common.strip()).resolve().parent, tree)
    apply_series(variant, scratch)
    commit = source.git(scratch, "rev-parse", "HEAD").stdout.strip()
    _tree_mark(tree).unlink(missing_ok=True)
    source.git(tree, "am", "--abort", check=False)
    source.git(tree, "checkout", "-q", "-f", "--detach", commit)
    source.git(tree, "clean", "-q", "-fd")


def failed_hunk(patch: Path, stderr: str) -> str:
    """Turn git-apply's 'patch failed: FILE:LINE' into file and hunk."""
    m = re.search(r"patch failed: (\S+):(\d+)", stderr)
    if not m:
        m2 = re.search(r"error: (\S+): (does not exist in index|"
                       r"No such file or directory)", stderr)
        return f"{m2.group(1)}: file not in the tree" if m2 else \
            stderr.strip().splitlines()[-1] if stderr.strip() else "unknown"
    fname, line = m.group(1), int(m.group(2))
    current, index = None, 0
    for text in patch.read_text(errors="replace").splitlines():
        if text.startswith("+++ "):
            current = text[4:].split("/", 1)[-1]
            index = 0
        elif text.startswith("@@ ") and current == fname:
            index += 1
            h = re.match(r"@@ -(\d+)", text)
            if h and int(h.group(1)) == line:
                return f"{fname} hunk #{index} ({text.split(' @@')[0]} @@)"
    return f"{fname} at line {line}"


def apply_series(variant: Variant, tree: Path) -> None:
    _tree_mark(tree).unlink(missing_ok=True)
    source.git(tree, "am", "--abort", check=False)
    source.git(tree, "reset", "-q", "--hard", source.BASE_TAG)
    source.git(tree, "clean", "-q", "-fd")
    for i, patch in enumerate(variant.patches, 1):
        r = source.git(tree, "am", "-q", "--keep-cr", str(patch), check=False)
        if r.returncode != 0:
            where = failed_hunk(patch, r.stderr + r.stdout)
            source.git(tree, "am", "--abort", check=False)
            raise LabError(
                f"variant {variant.name}: patch {i}/{len(variant.patches)} "
                f"{patch.name} does not apply to the packaged source: "
                f"{where}\n  ({patch})")


def _tree_mark(tree: Path) -> Path:
    gitdir = source.git(tree, "rev-parse", "--git-dir").stdout.strip()
    return (tree / gitdir / "lab-content-hash").resolve()


def mark_tree(tree: Path, content_hash: str) -> None:
    _tree_mark(tree).write_text(content_hash + "\n")


def ensure_tree(variant: Variant, built: "Built") -> None:
    """Bring the shared tree and objects back to this variant, built.

    External modules compile against the tree's headers and objects; the
    shared tree may hold another variant (or a failed series), so the
    series is applied and made again (incremental: about a minute).
    Call with the tree's lock held.
    """
    mark = _tree_mark(built.tree)
    if mark.is_file() and mark.read_text().strip() == built.meta["hash"]:
        return
    make_variant(variant, built.tree, built.objdir, built.meta["hash"],
                 f"variant {variant.name}")


def compiler(arch: arches.Arch) -> str:
    """The C compiler for `arch`: gcc, or its Debian cross compiler,
    which must be installed."""
    gcc = arch.cross_compile + "gcc"
    if arch.cross_compile and not shutil.which(gcc):
        raise LabError(f"{gcc} not found: install Debian package "
                       f"{arch.cross_package} (`make deps`)")
    return gcc


def make_args(arch: arches.Arch) -> list:
    """make's variables for a build for `arch`: its ARCH, and its cross
    compiler where it is not the host's."""
    compiler(arch)
    return [f"ARCH={arch.name}"] + (
        [f"CROSS_COMPILE={arch.cross_compile}"] if arch.cross_compile
        else [])


def _make(tree: Path, objdir: Path, arch: arches.Arch, *targets: str,
          log=None, progress=None) -> None:
    env = dict(os.environ,
               CCACHE_DIR=str(paths.cache_dir() / "ccache"),
               CCACHE_MAXSIZE="5G",
               KBUILD_BUILD_TIMESTAMP="2000-01-01", KBUILD_BUILD_VERSION="1",
               KBUILD_BUILD_USER="lab", KBUILD_BUILD_HOST="softirq-rt-lab")
    gcc = compiler(arch)
    cc = f"ccache {gcc}" if shutil.which("ccache") else gcc
    # LOCALVERSION= (set, empty) stops setlocalversion from appending "+"
    # for a git tree; the variant's name comes from CONFIG_LOCALVERSION.
    cmd = ["make", "-C", str(tree), f"O={objdir}", *make_args(arch),
           "LOCALVERSION=", f"CC={cc}", f"-j{os.cpu_count() or 2}", *targets]
    out = open(log, "a") if log else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        tail = []
        for line in proc.stdout:
            if log:
                out.write(line)
            tail = (tail + [line.rstrip()])[-25:]
            if progress:
                progress(line)
        rc = proc.wait()
    finally:
        if log:
            out.close()
    if rc != 0:
        raise LabError(f"make {' '.join(targets)} failed (exit {rc}); "
                       f"last lines:\n  " + "\n  ".join(tail) +
                       (f"\n  full log: {log}" if log else ""))


def configure(variant: Variant, tree: Path, objdir: Path, log: Path) -> Path:
    """The generation's common config, then the variant's fragment on top;
    verify every request.

    allnoconfig + the common fragment + olddefconfig gives the common
    config (kept as lab.common.config).  The variant's fragment is then
    merged into it with the tree's merge_config.sh and olddefconfig runs
    again, so options the fragment does not name keep their values.  In
    a single allnoconfig pass a fragment that sets CONFIG_EXPERT (as
    PREEMPT_RT needs) makes every option behind `if EXPERT` visible, and
    allnoconfig turns them all off: on 6.12, 43 of them, the ACPI PM
    timer, PROC_SYSCTL and VM_EVENT_COUNTERS among them.
    """
    arch = variant.arch
    common = kconfig.parse_fragment(paths.COMMON_CONFIG)
    if arch.config:         # the architecture's, over the x86 guest's
        common += kconfig.parse_fragment(arch.config)
    common += [kconfig.Request("CONFIG_LOCALVERSION", f'"-{variant.name}"',
                               "lab/build/kernel.py (LOCALVERSION)"),
               kconfig.Request("CONFIG_LOCALVERSION_AUTO", "n",
                               "lab/build/kernel.py (LOCALVERSION)")]
    own = kconfig.parse_fragment(variant.config)
    fragment = objdir / "lab.fragment"
    kconfig.write_fragment(common, fragment)
    _make(tree, objdir, arch, f"KCONFIG_ALLCONFIG={fragment}",
          "allnoconfig", log=log)
    _make(tree, objdir, arch, "olddefconfig", log=log)
    config = objdir / ".config"
    shutil.copy2(config, objdir / COMMON_DOTCONFIG)
    if own:
        _merge(tree, objdir, variant.config, log)
        _make(tree, objdir, arch, "olddefconfig", log=log)
    requests = {r.option: r for r in common + own}.values()
    bad = kconfig.mismatches(kconfig.read_config(config), requests)
    if bad:
        raise LabError(f"variant {variant.name}: the kernel config dropped "
                       f"options asked for:\n  " + "\n  ".join(bad))
    return config


def _merge(tree: Path, objdir: Path, fragment: Path, log: Path) -> None:
    script = tree / "scripts/kconfig/merge_config.sh"
    cmd = ["sh", str(script), "-m", "-O", str(objdir),
           str(objdir / ".config"), str(fragment.resolve())]
    with open(log, "a") as out:
        rc = subprocess.run(cmd, cwd=objdir, stdout=out,
                            stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise LabError(f"merging {fragment} into the common config failed "
                       f"(exit {rc}); full log: {log}")


def config_changes(objdir: Path) -> list:
    """What the variant's fragment changed in the common config."""
    return kconfig.changes(kconfig.read_config(objdir / COMMON_DOTCONFIG),
                           kconfig.read_config(objdir / ".config"))


def cached(variant: Variant, content_hash: str):
    folder = paths.cache_dir() / "kernels" / content_hash[:16]
    try:    # read without the lock: a forced rebuild may replace it
        meta = json.loads((folder / "build.json").read_text())
    except (OSError, ValueError):
        return None
    if meta.get("hash") == content_hash and \
            (folder / meta.get("image", "bzImage")).is_file():
        return Built(variant.name, folder, meta)
    return None


def up_to_date(variant: Variant, digest: str, index: int, total: int):
    """The variant's cached kernel, said so, or None."""
    hit = cached(variant, variant.content_hash(digest, variant.arch.recipe))
    if hit:
        info(f"variant {index}/{total} {variant.name}: up to date "
             f"({hit.meta['release']}, {hit.meta['hash'][:12]})")
    return hit


def build(variant: Variant, index: int = 1, total: int = 1,
          force: bool = False) -> Built:
    """Return the variant's kernel, building it only if its inputs changed.

    A variant that boots another's kernel (variant.conf `kernel`) gets
    that kernel, built as the other's."""
    own = variant.kernel_variant()
    if own is not variant:
        info(f"variant {index}/{total} {variant.name}: boots {own.name}'s "
             f"kernel")
    if own.package:
        built = packaged.fetch(own, index, total)
        return Built(variant.name, built.folder, built.meta)
    repo, digest, version = source.unpacked_source(own.tarball, own.source)
    # A cached kernel needs no lock (its folder appears by a rename), so
    # a user or test never waits for another variant's build to find it.
    hit = None if force else up_to_date(own, digest, index, total)
    if hit:
        built = hit
    else:
        with locked(repo.name):
            built = _build(own, repo, digest, version, index, total, force)
    return built if own is variant else \
        Built(variant.name, built.folder, built.meta)


def build_all(chosen: list, force: bool = False, then=None) -> dict:
    """Build every variant; one that fails does not stop the others.

    then(variant, built), if given, runs right after each variant is
    built, while the shared tree still holds it (the test module is built
    there), so the tree is not switched back and forth.  Returns {name:
    Built}.  If any failed, raises one LabError naming each failure,
    after the rest were built (and cached).
    """
    built, failed = {}, []
    for i, v in enumerate(chosen, 1):
        try:
            built[v.name] = build(v, i, len(chosen), force=force)
            if then:
                then(v, built[v.name])
        except LabError as e:
            warn(str(e).splitlines()[0])
            failed.append(str(e))
            built.pop(v.name, None)
    if failed:
        raise LabError(f"{len(failed)} of {len(chosen)} variant(s) failed "
                       f"to build ({len(built)} built):\n" +
                       "\n".join(failed))
    return built


def make_variant(variant: Variant, tree: Path, objdir: Path,
                 content_hash: str, label: str) -> tuple[Path, str]:
    """Apply the series in tree, configure and make into objdir.

    Returns (config, kernel release).  The tree is marked with the
    content hash only once make succeeded: the mark says that tree and
    objdir hold this variant, built.
    """
    objdir.mkdir(parents=True, exist_ok=True)
    log = objdir / "build.log"
    log.write_text("")
    info(f"{label}: applying {len(variant.patches)} patch(es)")
    checkout_series(variant, tree)
    info(f"{label}: configuring")
    config = configure(variant, tree, objdir, log)

    started = time.monotonic()
    compiled, last = [0], [started]

    def progress(line):
        if line.lstrip().startswith(("CC ", "LD ", "AR ", "AS ")):
            compiled[0] += 1
        if time.monotonic() - last[0] >= 30:
            last[0] = time.monotonic()
            info(f"{label}: compiling, {compiled[0]} objects, "
                 f"{fmt_seconds(last[0] - started)} elapsed")

    cold = not (objdir / "vmlinux").is_file()
    info(f"{label}: compiling " + ("(cold: about 8 minutes on 2 cores)"
                                   if cold else "what changed since the "
                                   "last variant (about a minute)"))
    _make(tree, objdir, variant.arch, "all", log=log, progress=progress)
    mark_tree(tree, content_hash)
    release = (objdir / "include/config/kernel.release").read_text().strip()
    return config, release


def clean_build(variant: Variant) -> Path:
    """Build the variant again into a new, empty object folder.

    For the check that the shared tree's incremental builds are what a
    clean build gives (lab/tests/test_incremental_build.py).  Returns
    the object folder.
    """
    repo, digest, _ = source.unpacked_source(variant.tarball,
                                             variant.source)
    content_hash = variant.content_hash(digest, variant.arch.recipe)
    objdir = paths.cache_dir() / "obj-clean" / content_hash[:16]
    if (objdir / variant.arch.image).is_file():
        return objdir
    check_disk(paths.cache_dir(), NEEDED_GB)
    with locked(repo.name):
        tree = _worktree(repo)
        tmp = objdir.with_name(objdir.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        make_variant(variant, tree, tmp, content_hash,
                     f"clean build of {variant.name}")
        # The shared objects no longer match the tree's files.
        _tree_mark(tree).unlink(missing_ok=True)
    shutil.rmtree(objdir, ignore_errors=True)
    tmp.rename(objdir)
    return objdir


def _build(variant: Variant, repo: Path, digest: str, version: str,
           index: int, total: int, force: bool) -> Built:
    arch = variant.arch
    content_hash = variant.content_hash(digest, arch.recipe)
    label = f"variant {index}/{total} {variant.name}"
    # built by the process this one waited for
    hit = None if force else up_to_date(variant, digest, index, total)
    if hit:
        return hit

    check_disk(paths.cache_dir(), NEEDED_GB)
    started = time.monotonic()
    tree = _worktree(repo)
    # one object folder per architecture; the tree is shared
    objdir = paths.cache_dir() / "obj" / (
        repo.name if arch is arches.X86_64 else f"{repo.name}-{arch.name}")
    config, release = make_variant(variant, tree, objdir, content_hash,
                                   label)
    folder = paths.cache_dir() / "kernels" / content_hash[:16]
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    image = Path(arch.image).name
    shutil.copy2(objdir / arch.image, tmp / image)
    shutil.copy2(config, tmp / "config")
    # names the addresses of a hung guest's vCPUs (lab/run/hangdump.py)
    shutil.copy2(objdir / "System.map", tmp / "System.map")
    meta = {
        "variant": variant.name,
        "hash": content_hash,
        "recipe": arch.recipe,
        "arch": arch.name,
        "image": image,
        "release": release,
        "kernel_version": version,
        "source_tarball_sha256": digest,
        "patches": [{"name": p.name, "sha256": store.sha256(p)}
                    for p in variant.patches],
        "config_sha256": store.sha256(config),
        "config_changes": config_changes(objdir),
        "image_sha256": store.sha256(objdir / arch.image),
        "tree": str(tree),
        "objdir": str(objdir),
        "build_seconds": round(time.monotonic() - started, 1),
    }
    (tmp / "build.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    info(f"{label}: built {release} in {meta['build_seconds']:.0f} s")
    return Built(variant.name, folder, meta)
