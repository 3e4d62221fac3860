"""Build the lab's own guest code: the test module and the programs.

The module is built against each variant's tree and objects (it must
match the kernel it is loaded into; kernel.ensure_tree brings the shared
tree back to the variant first), or a packaged kernel's headers; the
programs (guest/probe, guest/udpsink, guest/blkbatch) are ordinary
userspace C, built once.
Sources are copied into the cache and built there, so the checkout
stays clean, and each result is cached by the content of its sources
and, for the module, of the kernel it is built for.
"""
import hashlib
import re
import shutil
import shlex
import subprocess
import tempfile
from pathlib import Path

from . import cachelock, kernel, initramfs, packaged, rtlabuild
from .built import Built
from ..base import arches, paths
from ..base.log import LabError, info

MODULE_SRC = paths.GUEST_DIR / "softirq_load"
MODULE_NAME = "softirq_load.ko"
# userspace programs: the folder under guest/ and the binary it makes
PROGRAMS = {"probe": "softirq_probe", "udpsink": "udpsink",
            "blkbatch": "blkbatch", "flagcheck": "flagcheck",
            "cpuspeed": "cpuspeed", "pingpong": "pingpong"}
# the x86 guest's alone: flagcheck tests x86's cmpxchg16b flags (rtla too,
# which initrd() adds: it is built against the host's libraries)
X86_ONLY = {"flagcheck"}


def source_hash(folder: Path) -> str:
    """What a build depends on: every file but build products and the
    folder's documentation (a README edit rebuilds nothing)."""
    h = hashlib.sha256()
    for f in sorted(folder.rglob("*")):
        if f.is_file() and not f.name.endswith((".o", ".ko", ".cmd",
                                                 ".md")):
            h.update(str(f.relative_to(folder)).encode() + b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()


def _build_in_copy(src: Path, dest: Path, command, product: str,
                   what: str) -> Path:
    """Copy src to dest, run command(copy) there, keep dest/product."""
    if (dest / product).is_file():
        return dest / product
    info(f"building {what}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    # a copy of this process's own: two processes may build the same
    with tempfile.TemporaryDirectory(dir=dest.parent,
                                     prefix=dest.name + ".") as work:
        tmp = Path(work) / "src"
        shutil.copytree(src, tmp)
        r = subprocess.run(command(tmp), capture_output=True, text=True)
        if r.returncode != 0 or not (tmp / product).is_file():
            tail = "\n  ".join(
                (r.stdout + r.stderr).strip().splitlines()[-20:])
            raise LabError(f"building {what} failed:\n  {tail}")
        try:
            tmp.rename(dest)
        except OSError:
            if not (dest / product).is_file():   # not another's, finished:
                shutil.rmtree(dest, ignore_errors=True)  # a broken one
                tmp.rename(dest)
    return dest / product


def module(variant, built: Built) -> Path:
    """softirq_load.ko built against one variant's kernel (the kernel's
    own variant, for one that boots another's)."""
    variant = variant.kernel_variant()
    arch = variant.arch
    key = source_hash(MODULE_SRC)[:12] + "-" + built.meta["hash"][:12]
    dest = paths.cache_dir() / "modules" / variant.name / key
    if (dest / MODULE_NAME).is_file():
        return dest / MODULE_NAME      # no need to switch the shared tree
    if built.headers:                  # a packaged kernel's: no tree
        return _build_in_copy(
            MODULE_SRC, dest,
            lambda tmp: ["make", "-C", str(built.headers), f"M={tmp}",
                         "modules"],
            MODULE_NAME, f"{MODULE_NAME} for variant {variant.name} "
            f"(against {built.meta['package']}'s headers)")
    with cachelock.locked(built.tree.name):
        kernel.ensure_tree(variant, built)
        return _build_in_copy(
            MODULE_SRC, dest,
            lambda tmp: ["make", "-C", str(built.tree), f"O={built.objdir}",
                         *kernel.make_args(arch), "LOCALVERSION=",
                         f"M={tmp}", "modules"],
            MODULE_NAME, f"{MODULE_NAME} for variant {variant.name}")


def program(folder: str, arch=arches.X86_64) -> Path:
    """A userspace program of guest/<folder> (the same for every
    variant of an architecture), static, cross-compiled for another."""
    src, name = paths.GUEST_DIR / folder, PROGRAMS[folder]
    dest = paths.cache_dir() / folder / source_hash(src)[:16]
    command = ["make"]
    if arch is not arches.X86_64:
        dest = dest.with_name(f"{dest.name}-{arch.name}")
        command.append(f"CC={kernel.compiler(arch)}")
    return _build_in_copy(src, dest, lambda tmp: [*command, "-C", str(tmp)],
                          name, f"{name} ({arch.name})")


def programs(arch=arches.X86_64) -> dict:
    """{folder: binary name} of the lab's programs a guest of `arch`
    has."""
    return {folder: name for folder, name in PROGRAMS.items()
            if arch is arches.X86_64 or folder not in X86_ONLY}


def bare_initrd(built: Built) -> Path:
    """The common guest alone (no module, no programs): for plans that
    need neither; with the drivers a packaged kernel loads as modules."""
    if built.packaged:
        return initramfs.build(extra=packaged.drivers(built),
                               name=f"bare-{built.meta['release']}")
    arch = arches.get(built.arch)
    return initramfs.build(name=f"base-{arch.name}" if arch is not
                           arches.X86_64 else "base", arch=arch)


def initrd(variant, built: Built) -> Path:
    """The variant's initramfs: the common guest plus its module, the
    programs, and rtla with its libraries."""
    arch = variant.kernel_variant().arch
    extra = {"lib/modules/" + MODULE_NAME: module(variant, built)}
    extra.update({"usr/bin/" + name: program(folder, arch)
                  for folder, name in programs(arch).items()})
    if arch is arches.X86_64:
        rtla = rtlabuild.ensure()
        extra["usr/bin/rtla"] = rtla
        extra.update({lib.lstrip("/"): Path(lib)
                      for lib in initramfs.shared_libraries(str(rtla))})
    if built.packaged:
        extra.update(packaged.drivers(built))
    return initramfs.build(extra=extra, name=variant.name, arch=arch)


# Shell words that are not programs, and the words after which a
# command starts.
SHELL_WORDS = {"for", "in", "while", "until", "if", "then", "else", "elif",
               "fi", "do", "done", "case", "esac", "!", "{", "}", "echo",
               "cd", "exit", "export", "read", "set", "wait", "true",
               "false", "test", "[", "[[", "trap", "shift",
               "local", "return", "break", "continue", ":", "."}
COMMAND_STARTS = {";", "|", "||", "&&", "&", "(", "do", "then", "else",
                  "!", "{"}


# Programs that run the command after their own options and arguments:
# {name: (its options that take a value, how many arguments come before
# the command)}; `timeout 5 x` runs x, which the guest must have too.
WRAPPERS = {"timeout": ({"-s", "--signal", "-k", "--kill-after"}, 1),
            "nice": ({"-n", "--adjustment"}, 0),
            "ionice": ({"-c", "--class", "-n", "--classdata"}, 0),
            "chrt": ({"-T", "--sched-runtime", "-P", "--sched-period",
                      "-D", "--sched-deadline"}, 1),
            "taskset": (set(), 1),
            "env": ({"-u", "--unset", "-C", "--chdir"}, 0),
            "nohup": (set(), 0), "setsid": (set(), 0), "time": (set(), 0),
            "stdbuf": ({"-i", "-o", "-e"}, 0),
            # the shell's own: `exec -a NAME cmd`, `eval cmd ...`
            "exec": ({"-a"}, 0), "eval": (set(), 0)}
# a wrapper's option that makes it act on a running process, not run
# one (chrt -p, taskset -p; `time -p` only sets its output's format)
ON_A_PROCESS = {"chrt": {"-p", "--pid", "-a", "--all-tasks"},
                "taskset": {"-p", "--pid", "-a", "--all-tasks"}}
# env's options whose value is itself a command line: env -S 'cmd args'
SPLIT_STRING = ("-S", "--split-string")
# wrappers the shell has itself: no program of the guest's
BUILTIN_WRAPPERS = {"exec", "eval"}
SHELLS = {"sh", "ash", "bash", "dash"}


def programs_in(command: str) -> list:
    """The programs a background command runs: the first word of each
    simple command, past assignments, redirections and shell keywords;
    the command a wrapper (timeout, nice, chrt...) runs, and the
    commands of `sh -c '...'`."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
    lex.whitespace_split = True
    words = list(lex)
    out, start, k = [], True, 0
    while k < len(words):
        word = words[k]
        k += 1
        if word in COMMAND_STARTS or word == ";;":
            start = True
        elif start and ("=" in word[1:] or word[:1] in "<>" or
                        word[:1].isdigit() and ">" in word):
            continue                # X=y, >file, 2>/dev/null
        elif start:
            start = False
            if word in SHELL_WORDS or word.startswith("$"):
                continue
            if word not in BUILTIN_WRAPPERS:
                out.append(word)
            name = word.rsplit("/", 1)[-1]
            flags = [w for w in words[k:k + 2] if re.fullmatch(r"-\w*c\w*", w)]
            if name in SHELLS and flags:         # sh -c '...', sh -ec '...'
                k += words[k:k + 2].index(flags[0]) + 1
                if k < len(words):
                    out += programs_in(words[k])
                    k += 1
            elif name in WRAPPERS:
                k, start, split = _past_wrapper(words, k, name)
                if split:
                    out += programs_in(split)
    return out


def _past_wrapper(words: list, k: int, name: str) -> tuple:
    """(where the command the wrapper `name` runs starts, whether it runs
    one there, the command line an `env -S` gives it or ""): past its
    options (and their values) and its own arguments; none where an
    option makes it act on a running process (chrt -p)."""
    valued, arguments = WRAPPERS[name]
    while k < len(words) and words[k].startswith("-"):
        word = words[k]
        if word in ON_A_PROCESS.get(name, ()):
            return k + 1, False, ""
        if name == "env" and word.startswith(SPLIT_STRING):
            flag = next(f for f in SPLIT_STRING if word.startswith(f))
            given = word[len(flag):].lstrip("=")
            if given:
                return k + 1, False, given
            return k + 2, False, words[k + 1] if k + 1 < len(words) else ""
        k += 2 if word in valued else 1
    return k + arguments, True, ""


def applets() -> set:
    r = subprocess.run([initramfs.PROGRAMS[0][0], "--list"],
                       capture_output=True, text=True)
    return set(r.stdout.split())


def own_programs() -> set:
    """The guest's programs besides busybox's applets: the Debian ones
    and the lab's (lab/build/initramfs.py, PROGRAMS above, rtla)."""
    return ({Path(p).name for p, _ in initramfs.PROGRAMS} |
            {p.name for p in initramfs.GUEST_BIN.iterdir()} |
            set(PROGRAMS.values()) | {"rtla"})


def check_background(scenarios: list) -> None:
    """Refuse, before any build, a background command that runs a program
    the guest does not have."""
    own = own_programs()
    have = applets() | own
    for s in scenarios:
        for command in s.background:
            try:
                ran = programs_in(command)
            except ValueError as e:     # shlex: an unclosed quote
                raise LabError(f"{s.path}: background: {e} in "
                               f"{command!r}") from None
            missing = [p for p in ran if p.rsplit("/", 1)[-1] not in have]
            if missing:
                raise LabError(
                    f"{s.path}: background: {missing[0]!r} is not a "
                    f"program in the guest (busybox's applets and "
                    f"{', '.join(sorted(own))})")
