"""A variant is a folder under variants/: series, patches, config, README,
optionally `variant.conf` (what it is built from and how it boots) and
`expect` (what its kernel must do in the mechanism tests).

    # variant.conf: every key optional
    source  = 6.1          packaged source generation: linux-source-<source>
    arch    = arm64        the guest's architecture (lab/base/arches.py;
                           x86_64 if not set)
    append  = threadirqs   kernel parameters this variant boots with
    role    = proposal     or reference (what upstream or -rt did), or
                           control: its base's kernel and command line
                           under a second name, each finding against
                           the base a false one (the A/A control), or
                           with handler_scale a known effect
    handler_scale = 0.8    the test module's handlers at this fraction
                           of the scenario's length (spin_us,
                           storm_spin_us): a change of known size made
                           on the same kernel (a control's only change)
    kernel  = baseline     boot that variant's kernel, build none of its own
    package = linux-image-6.1.0-57-rt-amd64
                           boot Debian's packaged image, build none
                           (lab/build/packaged.py)
    package_version = 6.1.192-3
                           the package's Debian version (with package:
                           required, so a report names what it booted)
    package_debs = debs    a folder (relative to the variant's) holding
                           that version's .deb files, for a version
                           Debian's archive no longer has
    default = yes          in the default matrix (`make lab` without VARIANTS)
    base    = baseline     the variant of the same source and arch this
                           one is compared with; a base names itself
    message_id = <...>     the posted series it comes from (`lab variant
    subject = [PATCH ...]  add` writes both; `lab mail` replies to it)
    checkpatch_ignore = AVOID_BUG
                           checkpatch message types a backport keeps as
                           upstream merged them (say why in README.md)

Optionally `setup.sh`: POSIX sh the guest runs before any load starts,
for set-up beyond the command line (a sysfs write, a chrt); its output
is kept as setup.log, and a failure fails the run with it.

Adding a variant is making such a folder; nothing else names variants.
"""
import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path

from . import arches, kconfig, paths, textfile
from .log import LabError, warn

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.+_-]*$")
REQUIRED = ("series", "config", "README.md")
CONF = "variant.conf"
SETUP = "setup.sh"
CONF_DEFAULTS = {"source": "6.1", "arch": arches.DEFAULT, "append": "", "role": "proposal",
                 "kernel": "", "package": "", "package_version": "",
                 "package_debs": "", "default": "yes", "base": "baseline",
                 "message_id": "", "subject": "", "checkpatch_ignore": "",
                 "handler_scale": ""}
CONF_CHOICES = {"role": ("proposal", "reference", "control"),
                "arch": tuple(arches.ARCHES),
                "default": ("yes", "no")}
SOURCE_RE = re.compile(r"^\d+\.\d+$")
# the test module's parameters that are a handler's length, in us
SCALED_PARAMETERS = ("spin_us", "storm_spin_us")
# a versioned image, not a metapackage: the ABI pins what is booted
# (6.1.0-57-rt-amd64 in bookworm, 6.12.118+deb12-rt-amd64 in its 6.12)
PACKAGE_RE = re.compile(
    r"^linux-image-\d+\.\d+\.\d+(-\d+|\+deb\d+)-[a-z0-9-]+$")
# Debian policy's version: [epoch:]upstream[-revision]
PACKAGE_VERSION_RE = re.compile(r"^(\d+:)?\d[A-Za-z0-9.+~-]*$")


@dataclass(frozen=True)
class Variant:
    name: str
    folder: Path
    patches: tuple  # Paths, in series order
    conf: tuple = tuple(sorted(CONF_DEFAULTS.items()))  # variant.conf

    @property
    def config(self) -> Path:
        return self.folder / "config"

    def get(self, key: str) -> str:
        return dict(self.conf)[key]

    @property
    def source(self) -> str:
        """The source generation, e.g. "6.1"."""
        return self.get("source")

    @property
    def arch(self) -> arches.Arch:
        """The guest architecture its kernel is built for and boots on."""
        return arches.get(self.get("arch"))

    @property
    def tarball(self) -> Path:
        return paths.packaged_tarball(self.source)

    @property
    def append(self) -> str:
        return self.get("append")

    @property
    def base(self) -> str:
        """The variant of its own generation it is compared with."""
        return self.get("base")

    @property
    def package(self) -> str:
        """The Debian image package it boots, or ""."""
        return self.get("package")

    @property
    def package_version(self) -> str:
        """The Debian version of `package` it boots, or ""."""
        return self.get("package_version")

    @property
    def package_debs(self) -> Path:
        """The folder of .deb files to take the package from instead of
        Debian's archive, or None."""
        folder = self.get("package_debs")
        return self.folder / folder if folder else None

    @property
    def in_default_matrix(self) -> bool:
        return self.get("default") == "yes"

    def kernel_variant(self) -> "Variant":
        """The variant whose kernel this one boots: itself, or the one its
        `kernel` key names (a variant that only boots differently)."""
        other = self.get("kernel")
        return load(self.folder.parent / other) if other else self

    @property
    def explains(self) -> bool:
        """Whether its first boot of a cell runs the explaining phases
        (traces, rtla, the probe): a control boots its base's kernel,
        whose own first boot explains it."""
        return self.get("role") != "control"

    @property
    def is_aa_control(self) -> bool:
        """An A/A control: its base's kernel and boot under another name,
        nothing changed, so any finding against the base is false."""
        return self.get("role") == "control" and self.handler_scale == 1

    @property
    def handler_scale(self) -> float:
        """The factor on the test module's handler lengths (1: as the
        scenario says)."""
        return float(self.get("handler_scale") or 1)

    def module_args(self, args: str) -> str:
        """A scenario's module parameters as this variant loads them:
        each handler length (spin_us, storm_spin_us) times
        handler_scale."""
        if self.handler_scale == 1:
            return args
        return " ".join(
            f"{k}={round(int(v) * self.handler_scale)}"
            if k in SCALED_PARAMETERS else f"{k}{eq}{v}"
            for k, eq, v in (w.partition("=") for w in args.split()))

    @property
    def setup(self) -> str:
        """Its guest set-up script (setup.sh), or "" if it has none."""
        f = self.folder / SETUP
        return textfile.read(f, "a set-up script") if f.is_file() else ""

    def plan_env(self) -> dict:
        """What every guest plan of this variant is handed: its set-up
        (SETUP, run by guest/bin/lab-setup), if it has one."""
        return {"SETUP": self.setup} if self.setup else {}

    def described(self) -> dict:
        """What run.json says about the variant besides its kernel; the
        set-up script only where there is one, so that other variants'
        records stay as they were."""
        out = dict(self.conf, name=self.name)
        if out["arch"] == arches.DEFAULT:
            del out["arch"]     # x86 records stay as they were
        if self.setup:
            out["setup"] = self.setup
        return out

    def expect(self, test: str):
        """What the mechanism test `test` must see in this kernel:
        {key: value} from the folder's `expect` file, or None when the
        file says nothing about that test (the test is then skipped)."""
        return parse_expect(self.folder / "expect").get(test)

    def content_hash(self, source_digest: str, recipe: str) -> str:
        """Everything a kernel image depends on, hashed.

        The series file's comments do not count; the patches it lists,
        in order, do.
        """
        h = hashlib.sha256()
        for part in (recipe, source_digest, self.name):
            h.update(part.encode() + b"\0")
        fragments = [paths.COMMON_CONFIG]
        if self.arch.config:
            fragments.append(self.arch.config)
        for f in (*fragments, self.config, *self.patches):
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()


def parse_expect(path: Path) -> dict:
    """An `expect` file: lines 'TEST KEY VALUE', '#' comments; a VALUE is
    a number, or yes/no.  {test: {key: value}}."""
    out = {}
    if not path.is_file():
        return out
    for lineno, raw in enumerate(textfile.read(path, "an expect file")
                                 .splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 3:
            raise LabError(f"{path}:{lineno}: expected 'test key value', "
                           f"got {raw.strip()!r}")
        test, key, text = words
        if text in ("yes", "no"):
            value = text == "yes"
        else:
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):    # nan, inf: a test never met
                raise LabError(f"{path}:{lineno}: {text!r} is neither a "
                               f"number nor yes/no") from None
        if key in out.get(test, {}):
            raise LabError(f"{path}:{lineno}: {test} {key} given twice")
        out.setdefault(test, {})[key] = value
    return out


def parse_conf(folder: Path) -> tuple:
    """variant.conf, checked, over the defaults: sorted (key, value)."""
    conf, path = dict(CONF_DEFAULTS), folder / CONF
    if not path.is_file():
        return tuple(sorted(conf.items()))
    seen = set()
    for lineno, raw in enumerate(textfile.read(path, CONF).splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{lineno}"
        key, eq, value = (x.strip() for x in line.partition("="))
        if not eq:
            raise LabError(f"{where}: expected 'key = value', got "
                           f"{raw.strip()!r}")
        if key not in CONF_DEFAULTS:
            raise LabError(f"{where}: unknown key {key!r}; known: "
                           f"{', '.join(CONF_DEFAULTS)}")
        if key in seen:
            raise LabError(f"{where}: {key} given twice")
        seen.add(key)
        if key in CONF_CHOICES and value not in CONF_CHOICES[key]:
            raise LabError(f"{where}: {key} = {value!r}: one of "
                           f"{', '.join(CONF_CHOICES[key])}")
        if key == "source" and not SOURCE_RE.match(value):
            raise LabError(f"{where}: source = {value!r}: a kernel "
                           f"generation such as 6.1 (the package "
                           f"linux-source-<source>)")
        if key == "kernel":
            other = folder.parent / value
            if value == folder.name or not (other / "series").is_file():
                raise LabError(f"{where}: kernel = {value!r}: name another "
                               f"variant in {folder.parent}")
            if dict(parse_conf(other))["kernel"]:
                raise LabError(f"{where}: kernel = {value!r}, which boots "
                               f"another's kernel itself: name that one")
        if key == "handler_scale":
            try:
                ok = 0 < float(value) <= 4 and float(value) != 1
            except ValueError:
                ok = False
            if not ok:
                # 1 would be an A/A control that calibrate counted as a
                # known effect of x1: an A/A control leaves the key out
                raise LabError(f"{where}: handler_scale = {value!r}: a "
                               f"factor over 0, at most 4 and not 1 (0.8: "
                               f"each handler 80% as long; an A/A control "
                               f"has none)")
        conf[key] = value
    _check_base(folder, conf, path)
    if conf["role"] == "control" and (
            conf["kernel"] != conf["base"] or conf["append"]):
        raise LabError(f"{path}: role = control boots its base's kernel "
                       f"as its base does: kernel = {conf['base']} and "
                       f"no append")
    if conf["handler_scale"] and conf["role"] != "control":
        raise LabError(f"{path}: handler_scale changes the load, not the "
                       f"kernel: only a control (role = control) has it")
    for key in ("kernel", "package"):
        if conf[key] and (parse_series(folder / "series") or
                          kconfig.parse_fragment(folder / "config")):
            raise LabError(f"{path}: {key} = {conf[key]}, but "
                           f"{folder.name} has patches or config options "
                           f"of its own: a variant boots another's kernel "
                           f"or a package's, or builds its own")
    if conf["kernel"] and conf["package"]:
        raise LabError(f"{path}: kernel and package both given: a variant "
                       f"boots one kernel")
    if conf["package"] and not PACKAGE_RE.match(conf["package"]):
        raise LabError(f"{path}: package = {conf['package']!r}: a Debian "
                       f"kernel image package, linux-image-<abi>-<flavour> "
                       f"(e.g. linux-image-6.1.0-57-rt-amd64)")
    if conf["package"] and not conf["package_version"]:
        raise LabError(f"{path}: package = {conf['package']} without "
                       f"package_version: name the Debian version it "
                       f"boots (`apt-cache policy {conf['package']}`)")
    for key in ("package_version", "package_debs"):
        if conf[key] and not conf["package"]:
            raise LabError(f"{path}: {key} without package: it names "
                           f"the version of a packaged kernel")
    if conf["package_version"] and \
            not PACKAGE_VERSION_RE.match(conf["package_version"]):
        raise LabError(f"{path}: package_version = "
                       f"{conf['package_version']!r}: a Debian version "
                       f"such as 6.1.192-3")
    return tuple(sorted(conf.items()))


def _check_base(folder: Path, conf: dict, path: Path):
    """A variant is compared with a base of its own source generation
    and architecture, and a base is its own base (no chains to
    follow)."""
    base = conf["base"]
    if base == folder.name:
        return
    other = folder.parent / base
    if not (other / "series").is_file():
        raise LabError(f"{path}: base = {base!r}: no such variant in "
                       f"{folder.parent}; a variant of source "
                       f"{conf['source']} needs `base = <a variant of "
                       f"that source>`, or its own name if it is one")
    theirs = dict(CONF_DEFAULTS, **_read_conf_keys(other / CONF))
    if theirs["base"] != base:
        raise LabError(f"{path}: base = {base!r}, but that variant is "
                       f"compared with {theirs['base']!r} itself: name a "
                       f"base (a variant whose base is its own name)")
    if theirs["source"] != conf["source"]:
        raise LabError(f"{path}: base = {base!r} is built from "
                       f"{theirs['source']}, this variant from "
                       f"{conf['source']}: a base must be of the same "
                       f"source generation")
    if theirs["arch"] != conf["arch"]:
        raise LabError(f"{path}: base = {base!r} boots on {theirs['arch']}, "
                       f"this variant on {conf['arch']}: a base must be of "
                       f"the same architecture")


def generation_base(source: str, root: Path = None,
                    arch: str = arches.DEFAULT) -> str:
    """The base of a source generation on an architecture: its variant
    that is its own base (baseline for 6.1, mainline-6.12 for 6.12)."""
    root = root or paths.VARIANTS_DIR
    for folder in sorted(d for d in root.iterdir() if d.is_dir()):
        conf = dict(CONF_DEFAULTS, **_read_conf_keys(folder / CONF))
        if conf["source"] == source and conf["base"] == folder.name \
                and conf["arch"] == arch:
            return folder.name
    raise LabError(f"no variant in {root} is the base of source {source} "
                   f"on {arch} (a variant of that source with base = its "
                   f"own name)")


def _read_conf_keys(path: Path) -> dict:
    """Another variant's variant.conf keys as written, unchecked (it is
    checked when that variant is loaded)."""
    if not path.is_file():
        return {}
    out = {}
    for raw in textfile.read(path, CONF).splitlines():
        key, eq, value = (x.strip() for x in
                          raw.split("#", 1)[0].partition("="))
        if eq:
            out[key] = value
    return out


def parse_series(series: Path) -> list:
    """Patch files named by a quilt-style series file, in order.

    One patch per line; '#' starts a comment; '-p1' may follow a name
    (the only strip level `git am` applies).
    """
    patches, seen = [], {}
    for lineno, raw in enumerate(textfile.read(series, "a series")
                                 .splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, *opts = line.split()
        where = f"{series}:{lineno}"
        if opts and opts != ["-p1"]:
            raise LabError(f"{where}: unsupported option {' '.join(opts)!r} "
                           f"(only -p1)")
        if "/" in name:
            raise LabError(f"{where}: {name!r}: patches live beside the "
                           f"series file, name them without a folder")
        if name in seen:
            raise LabError(f"{where}: {name!r} already listed on line "
                           f"{seen[name]}")
        patch = series.parent / name
        if not patch.is_file():
            raise LabError(f"{where}: patch {name!r} not found in "
                           f"{series.parent}")
        seen[name] = lineno
        patches.append(patch)
    return patches


def load(folder: Path) -> Variant:
    name = folder.name
    if not NAME_RE.match(name):
        raise LabError(f"variant {name!r} ({folder}): name must match "
                       f"{NAME_RE.pattern} (it becomes the kernel's "
                       f"LOCALVERSION)")
    missing = [f for f in REQUIRED if not (folder / f).is_file()]
    if missing:
        raise LabError(f"variant {name!r}: missing {', '.join(missing)} in "
                       f"{folder}: finish it (variants/README.md, "
                       f"'Adding a variant'), or name the variants you want "
                       f"(VARIANTS=baseline,...)")
    return Variant(name, folder, tuple(parse_series(folder / "series")),
                   parse_conf(folder))


def discover(root: Path = None) -> list:
    """All variants, baseline first, then by name."""
    root = root or paths.VARIANTS_DIR
    found = [load(d) for d in sorted(root.iterdir()) if d.is_dir()]
    found.sort(key=lambda v: (v.name != "baseline", v.name))
    return found


def default_matrix(root: Path = None) -> list:
    """The variants `make lab` runs when none are named."""
    return [v for v in discover(root) if v.in_default_matrix]


def names_in(text: str, what: str) -> list:
    """The names of a comma/space separated list, each once.  A list of
    nothing but separators (`SCENARIOS=,`) is an error, not "all"; a name
    given twice is kept once, with a note."""
    words = [w for w in re.split(r"[,\s]+", text) if w]
    if text.strip() and not words:
        raise LabError(f"the {what} list {text!r} names no {what}")
    once = list(dict.fromkeys(words))
    if len(once) < len(words):
        twice = sorted({w for w in words if words.count(w) > 1})
        warn(f"{what} named more than once, kept once: {', '.join(twice)}")
    return once


def pick(every: list, names: str, what: str) -> list:
    """The items named in a comma/space separated list, or all of them."""
    if not names.strip():
        return every
    by_name = {item.name: item for item in every}
    chosen = []
    for n in names_in(names, what):
        if n not in by_name:
            raise LabError(f"unknown {what} {n!r}; known: "
                           f"{', '.join(by_name)}")
        chosen.append(by_name[n])
    return chosen


def select(names: str = "", root: Path = None) -> list:
    """Variants named in a comma/space separated list, or all of them.

    Only the named folders are read: a half-made variant stops only the
    commands that ask for it (or for all).
    """
    root = root or paths.VARIANTS_DIR
    if not names.strip() or names.strip() == "all":
        return discover(root)
    known = sorted(d.name for d in root.iterdir() if d.is_dir())
    chosen = []
    for n in names_in(names, "variant"):
        if n not in known:
            raise LabError(f"unknown variant {n!r}; known: "
                           f"{', '.join(known)}")
        chosen.append(load(root / n))
    return chosen


def named_bases(text: str, chosen: list) -> dict:
    """`--base VARIANT=BASE,...`: the comparisons a report makes instead
    of the variants' variant.conf bases, {variant: base}.  A proposal on
    top of PREEMPT_RT (ktimers-rt, threaded NAPI there) is compared with
    the RT kernel it adds to, for its own effect; the base stays compared
    with its own, so the report has both steps."""
    by_name = {v.name: v for v in chosen}
    named = {}
    for pair in names_in(text, "--base pair"):
        var, sep, base = pair.partition("=")
        if not sep or not var or not base:
            raise LabError(f"--base {pair!r}: write VARIANT=BASE, for "
                           f"example ktimers-rt=preempt-rt-6.12")
        for n in (var, base):
            if n not in by_name:
                raise LabError(f"--base {pair}: {n} is not among the "
                               f"report's variants: add it to --variants")
        if var == base or by_name[base].base == var:
            raise LabError(f"--base {pair}: {var} would be compared with "
                           f"itself, or with a variant compared with it")
        if by_name[var].source != by_name[base].source:
            raise LabError(f"--base {pair}: {base} is built from "
                           f"{by_name[base].source}, {var} from "
                           f"{by_name[var].source}: a base must be of the "
                           f"same source generation")
        named[var] = base
    if any(named.get(b) for b in named.values()):
        raise LabError(f"--base {text}: a named base is compared with "
                       f"another itself; name each variant's base once")
    return named
