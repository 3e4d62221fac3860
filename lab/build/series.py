"""A variant from a posted series: `python3 -m lab variant add`.

The series is an mbox, a folder of patch files, or a Message-ID that b4
fetches from a public-inbox archive.  b4's am mode puts the patches in
order and applies follow-up trailers; the lab then checks what b4 does
not (every patch n/m there, nothing else in the file), applies the
series to the packaged source with `git am` (a patch that does not
apply is named with its file and hunk, as a build would), and writes
variants/<name>/ from what applied: the patches again in `git
format-patch` form, the series file, a README drafted from the cover
letter, a config fragment listing the Kconfig options the series adds
for the user to decide, and variant.conf with where it came from.
Nothing is written unless all of that succeeded.
"""
import email
import email.header
import hashlib
import mailbox
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import cachelock, kernel, source
from ..base import kconfig, paths, variants
from ..base.log import LabError, info

SUBJECT_RE = re.compile(r"\[([^\]]*\bPATCH\b[^\]]*)\]\s*(.*)", re.I | re.S)
NUMBER_RE = re.compile(r"\b(\d+)/(\d+)$")
KCONFIG_RE = re.compile(r"^\+\s*(?:menu)?config\s+([A-Za-z0-9_]+)\s*$")
BASE_RE = re.compile(r"^base-commit:\s*([0-9a-f]{7,40})\s*$", re.M)


def header(msg, name: str) -> str:
    raw = msg.get(name, "")
    text = str(email.header.make_header(email.header.decode_header(raw)))
    return " ".join(text.split())


def numbered(msg) -> tuple:
    """(n, m, subject without its [PATCH ...] tag) of one message, or
    None when it is not a patch mail."""
    m = SUBJECT_RE.search(header(msg, "Subject"))
    if not m:
        return None
    count = NUMBER_RE.search(m.group(1).strip())
    n, total = (int(count.group(1)), int(count.group(2))) if count \
        else (1, 1)
    return n, total, m.group(2).strip()


def check_mbox(path: Path, what: str) -> dict:
    """The series in an mbox, checked: {"patches": {n: msg}, "cover": msg
    or None, "total": m}.  Not an mbox, no patch, a gap in n/m or two
    counts are errors naming `what`."""
    try:
        msgs = list(mailbox.mbox(str(path), create=False))
    except (OSError, mailbox.Error) as e:
        raise LabError(f"{what}: cannot read it as an mbox: {e}") from None
    found = [(numbered(m), m) for m in msgs]
    found = [(x, m) for x, m in found if x]
    if not found:
        raise LabError(f"{what}: no patch mail in it ({len(msgs)} messages; "
                       f"want subjects '[PATCH n/m] ...')")
    totals = {x[1] for x, _ in found}
    if len(totals) != 1:
        raise LabError(f"{what}: patches of different series in it "
                       f"(counts {', '.join(f'/{t}' for t in sorted(totals))})"
                       f"; give one series")
    total = totals.pop()
    patches, cover = {}, None
    for (n, _, subject), m in found:
        if n == 0:
            cover = m
        elif n in patches:
            raise LabError(f"{what}: patch {n}/{total} twice ('{subject}')")
        else:
            patches[n] = m
    missing = [n for n in range(1, total + 1) if n not in patches]
    if missing:
        gaps = ", ".join(f"{n}/{total}" for n in missing)
        raise LabError(f"{what}: patch {gaps} missing from the series")
    return {"patches": patches, "cover": cover, "total": total}


def as_mbox(folder: Path, out: Path) -> Path:
    """A folder of patch files (git format-patch's) as one mbox."""
    files = sorted(folder.glob("*.patch"))
    if not files:
        raise LabError(f"{folder}: no *.patch files in it")
    with open(out, "wb") as f:
        for p in files:
            data = p.read_bytes()
            if not data.startswith(b"From "):
                data = b"From lab Mon Sep 17 00:00:00 2001\n" + data
            f.write(data.rstrip(b"\n") + b"\n\n")
    return out


def unfolded(path: Path, out: Path) -> Path:
    """The mbox as b4 can read it: every header on one line (b4 0.12
    fails on a folded From:, and git format-patch folds a long name and
    address), and a thread: a series made without --thread has no
    Message-IDs, and b4 finds no patches in it.  Such messages get an
    ID made from their content and reply to the first message."""
    box = mailbox.mbox(str(out))
    root = None
    for msg in mailbox.mbox(str(path), create=False):
        for name, value in msg.items():
            if "\n" in value:
                msg.replace_header(name, " ".join(value.split()))
        if not msg.get("Message-ID"):
            digest = hashlib.sha256(msg.as_bytes()).hexdigest()[:16]
            msg["Message-ID"] = f"<{digest}@softirq-rt-lab.invalid>"
            if root and not msg.get("In-Reply-To"):
                msg["In-Reply-To"] = root
                msg["References"] = root
        root = root or msg["Message-ID"]
        box.add(msg)
    box.flush()
    return out


def check_bytes(path: Path, what: str) -> None:
    """Refuse a message with bytes that are not UTF-8, naming its
    subject and line: b4 would replace them with U+FFFD, and the stored
    patch (and the kernel built from it) would differ from the posted
    one."""
    box = mailbox.mbox(str(path), create=False)
    for key in box.keys():
        raw = box.get_bytes(key)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw[:e.start].count(b"\n") + 1
            subject = header(box.get_message(key), "Subject")
            where = f"{what}: '{subject}', line {line} of its mail: byte " \
                f"0x{raw[e.start]:02x} is not UTF-8"
            if b"\ndiff --git " in raw[:e.start]:
                # format-patch wrote it: the change itself holds the byte
                raise LabError(f"{where}, in the patch's own diff: the lab "
                               f"keeps patches as text and cannot take "
                               f"this one byte for byte") from None
            raise LabError(f"{where}; b4 would replace it and the patch "
                           f"would change: send the series as UTF-8 (git "
                           f"format-patch does)") from None


def b4_am(series: str, outdir: Path, label: str = "") -> tuple:
    """b4 am on a local mbox or a Message-ID: (.mbx, .cover or None).
    `label`: the series as the user named it, for errors."""
    outdir.mkdir(parents=True, exist_ok=True)
    local = Path(series).is_file()
    cmd = ["b4", "--no-interactive", "am", "-o", str(outdir)] + \
        (["-m", series] if local else [series.strip("<>")])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=300, cwd=outdir, env=_b4_env(outdir))
    except FileNotFoundError:
        raise LabError("b4 not found: install it with `make deps` (Debian "
                       "package b4)") from None
    mbx = sorted(outdir.glob("*.mbx"))
    if r.returncode != 0 or not mbx:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
        if local:
            raise LabError(f"{label or series}: b4 am failed: {tail[0]}")
        raise LabError(f"{label or series}: no such file or folder; as a "
                       f"Message-ID, b4 am failed: {tail[0]} (is a "
                       f"public-inbox archive such as lore.kernel.org "
                       f"reachable? offline, give a local mbox)")
    covers = sorted(outdir.glob("*.cover"))
    return mbx[0], covers[0] if covers else None


def _b4_env(home: Path) -> dict:
    """b4's environment: git needs an identity and b4 a home, which a
    bare machine or a service may lack ("b4 am failed" named neither).
    The identity is the lab's own, for this import only, where git has
    none; b4 am commits nothing under it."""
    env = dict(os.environ)
    env.setdefault("HOME", str(home))
    try:                            # asked where b4 runs, as b4's git is
        has = subprocess.run(["git", "config", "user.email"], env=env,
                             cwd=home, capture_output=True,
                             text=True).stdout.strip()
    except FileNotFoundError:
        raise LabError("git not found: install it with `make deps` "
                       "(Debian package git)") from None
    if not has and "GIT_CONFIG_COUNT" not in env:
        env.update({"GIT_CONFIG_COUNT": "2",
                    "GIT_CONFIG_KEY_0": "user.name",
                    "GIT_CONFIG_VALUE_0": "softirq-rt lab",
                    "GIT_CONFIG_KEY_1": "user.email",
                    "GIT_CONFIG_VALUE_1": "lab@softirq-rt-lab.invalid"})
    return env


def split(mbx: Path, folder: Path) -> list:
    """b4's mbox, one file per patch, in order, each named by its subject
    as git format-patch names it: an error of a patch names the patch."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, msg in enumerate(mailbox.mbox(str(mbx), create=False), 1):
        title = (numbered(msg) or (0, 0, header(msg, "Subject")))[2]
        slug = re.sub(r"[^A-Za-z0-9._]+", "-", title).strip("-.")[:52]
        path = folder / f"{i:04d}-{slug or 'patch'}.patch"
        path.write_bytes(msg.as_bytes(unixfrom=True))
        out.append(path)
    return out


def apply_and_export(name: str, patches: list, generation: str,
                     out: Path, base: str) -> list:
    """Apply the patches to the packaged source with git am; write them
    again with git format-patch into `out`.  A patch that does not
    apply is named with its file and hunk."""
    repo, _, version = source.unpacked_source(
        paths.packaged_tarball(generation), generation)
    with cachelock.locked(repo.name):
        scratch = kernel.scratch_tree(repo)
        probe = variants.Variant(name, out, tuple(patches))
        try:
            kernel.apply_series(probe, scratch)
        except LabError as e:
            hint = (f"; the series says it is based on {base} "
                    f"(base-commit), the lab applies it to Linux {version} "
                    f"(linux-source-{generation})") if base else ""
            raise LabError(f"{e}{hint}") from None
        source.git(scratch, "format-patch", "-q", "-o", str(out),
                   f"{source.BASE_TAG}..HEAD")
    return sorted(out.glob("*.patch"))


def kconfig_options(patches: list) -> list:
    """Kconfig symbols the series adds (`+config FOO` in a Kconfig file)."""
    found = []
    for p in patches:
        current = ""
        for line in p.read_text(errors="replace").splitlines():
            if line.startswith("+++ "):
                current = line[4:]
            elif "Kconfig" in current:
                m = KCONFIG_RE.match(line)
                if m and m.group(1) not in found:
                    found.append(m.group(1))
    return found


def readme(name: str, cover, first, total: int, msgid: str) -> str:
    """README.md drafted from the cover letter (or the first patch)."""
    msg = cover or first
    subject = header(msg, "Subject")
    lines = [f"# {name}", "",
             "Drafted by `python3 -m lab variant add` from the posted "
             "series; say here what it changes for this lab's question, "
             "and what differs from the posting.", "",
             f"- Subject: {subject}",
             f"- Author: {header(msg, 'From')}",
             f"- Date: {header(msg, 'Date')}",
             f"- Message-ID: <{msgid}>",
             f"- Link: https://lore.kernel.org/r/{msgid}",
             f"- Patches: {total}", ""]
    if cover is not None:
        body = cover.get_payload(decode=True) or b""
        lines += ["## Cover letter", "", "```",
                  body.decode(errors="replace").rstrip(), "```", ""]
    return "\n".join(lines)


def add(name: str, series: str, generation: str = paths.GENERATION,
        root: Path = None) -> Path:
    """Write variants/<name>/ from `series`; return the folder."""
    root = root or paths.VARIANTS_DIR
    folder = root / name
    if not series.strip():
        raise LabError("no series given: FROM= an mbox, a folder of "
                       "patches, or a Message-ID")
    given = Path(series)
    if not (given.exists() or "@" in series):
        raise LabError(f"{series}: no such file or folder, and not a "
                       f"Message-ID (those hold an @)")
    if not variants.NAME_RE.match(name):
        raise LabError(f"variant name {name!r}: use lower case, digits and "
                       f"'.+_-' (it becomes the kernel's LOCALVERSION)")
    if folder.exists():
        raise LabError(f"variant {name!r} exists already ({folder}); "
                       f"choose another name")
    base_variant = variants.generation_base(generation, root)
    with tempfile.TemporaryDirectory() as tmpname:
        tmp = Path(tmpname)
        local = given.is_dir() or given.is_file()
        if given.is_dir():
            series = str(as_mbox(given, tmp / "series.mbox"))
        if local:
            check_mbox(Path(series), str(given))
            check_bytes(Path(series), str(given))
            series = str(unfolded(Path(series), tmp / "unfolded.mbox"))
        info(f"variant {name}: b4 am {given}")
        mbx, cover_file = b4_am(series, tmp / "b4", str(given))
        checked = check_mbox(mbx, f"{given} (as b4 ordered it)")
        cover = email.message_from_bytes(cover_file.read_bytes()) \
            if cover_file else None
        first = checked["patches"][1]
        msgid = header(cover or first, "Message-ID").strip("<>")
        texts = [m.as_string() for m in checked["patches"].values()] + \
            ([cover.as_string()] if cover is not None else [])
        base = next((b.group(1) for t in texts for b in [BASE_RE.search(t)]
                     if b), "")
        stage = tmp / "variant"
        stage.mkdir()
        info(f"variant {name}: applying {checked['total']} patch(es) to "
             f"linux-source-{generation}")
        patches = apply_and_export(name, split(mbx, tmp / "split"),
                                   generation, stage, base)
        subject = header(cover or first, "Subject")
        (stage / "series").write_text(
            f"# {subject}\n# <{msgid}>, imported by `lab variant add`\n" +
            "".join(p.name + "\n" for p in patches))
        options = kconfig_options(patches)
        (stage / "config").write_text(
            "# Kconfig options the series adds: decide each (y, n or a "
            "value)\n# in place of 'decide'; the build refuses this file "
            "until then.\n" + "".join(
                f"CONFIG_{o}={kconfig.UNDECIDED}\n" for o in options))
        (stage / "README.md").write_text(
            readme(name, cover, first, checked["total"], msgid))
        (stage / "variant.conf").write_text(
            f"# imported from a posted series\nsource = {generation}\n"
            f"base = {base_variant}\n"
            f"role = proposal\ndefault = no\nmessage_id = {msgid}\n"
            f"subject = {subject}\n")
        shutil.copytree(stage, folder)
    return folder
