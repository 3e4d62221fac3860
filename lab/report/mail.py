"""A report as a reply on the list: reports/<date>-<name>/reply.eml.

Plain text, no line over 72 columns: a short opening, the report's
text (report.txt: summary and tables) and the command that reproduces
it.  When a variant of the report came from a posted series
(variant.conf `message_id`, written by `lab variant add`), the mail
answers that series: "Re: <its subject>", In-Reply-To and References.
Nothing is sent: `git send-email --to=... reply.eml` or a mail client
does that.
"""
import email.policy
import email.utils
import json
import re
import subprocess
import textwrap
from email.message import EmailMessage
from pathlib import Path

from ..base import paths, variants
from ..base.log import LabError
from ..base.textfmt import WIDTH

# Headers are not folded: a Message-ID is one token, and folding one
# longer than a line encodes it beyond a mail client's threading.  The
# body is wrapped to WIDTH here.
POLICY = email.policy.default.clone(max_line_length=None)

# a report folder of a date: <yyyy-mm-dd>-<its name>
DATED = re.compile(r"\d{4}-\d{2}-\d{2}-.+", re.ASCII)


def find_report(name: str) -> Path:
    """reports/<name>, or the newest reports/<date>-<name>: a folder
    directly under reports/, its name matched exactly.  A path or a
    pattern is no name: `../../x` once wrote reply.eml outside reports/,
    `5boots` and `*` into whichever report they matched."""
    root = paths.REPO / "reports"
    names = f"the report names: `ls {root}`"
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise LabError(f"{name!r} is not a report name: a report is a "
                       f"folder directly under reports/, named exactly; "
                       f"{names}")
    reports = [p for p in root.iterdir() if (p / "report.txt").is_file()] \
        if root.is_dir() else []
    exact = [p for p in reports if p.name == name]
    dated = sorted(p for p in reports
                   if DATED.fullmatch(p.name) and p.name[11:] == name)
    if not exact + dated:
        raise LabError(f"no report named {name!r} in {root} (want "
                       f"reports/<date>-{name}/report.txt: make lab or "
                       f"make compare NAME={name} first; {names})")
    return (exact + dated[-1:])[0]


def series_of(names: list, wanted: str = "") -> tuple:
    """(variant, message_id, subject) the reply answers, or ("", "", "")
    for a new thread."""
    posted = []
    for name in names:
        folder = paths.VARIANTS_DIR / name
        if not folder.is_dir():
            continue
        v = variants.load(folder)
        if v.get("message_id"):
            posted.append((name, v.get("message_id"), v.get("subject")))
    if wanted:
        if wanted not in names:
            raise LabError(f"variant {wanted!r} is not in this report "
                           f"({', '.join(names)})")
        return next((p for p in posted if p[0] == wanted),
                    (wanted, "", ""))
    if len(posted) > 1:
        raise LabError(f"variants {', '.join(p[0] for p in posted)} each "
                       f"came from a series: say which one to answer "
                       f"(--variant)")
    return posted[0] if posted else ("", "", "")


def sender() -> str:
    def git(key):
        r = subprocess.run(["git", "config", key], capture_output=True,
                           text=True, cwd=paths.REPO)
        return r.stdout.strip()
    name, addr = git("user.name"), git("user.email")
    return email.utils.formataddr((name or "softirq-rt lab",
                                   addr or "lab@localhost"))


def command_of(folder: Path, analysis: dict) -> str:
    """The command that made the report (report.md's first line)."""
    if analysis.get("command"):
        return analysis["command"]
    md = (folder / "report.md").read_text()
    start = md.find("Made with `")
    return md[start + 11:md.find("`", start + 11)] if start >= 0 else \
        "make lab"


def reply(folder: Path, variant: str = "") -> EmailMessage:
    text = (folder / "report.txt").read_text()
    analysis = json.loads((folder / "data" / "analysis.json").read_text())
    _, msgid, subject = series_of(analysis["variants"], variant)
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True,
                            cwd=paths.REPO).stdout.strip() or "unknown"
    lines = textwrap.wrap(
        f"Measured with the softirq-rt lab: {', '.join(analysis['variants'])}"
        f" built from Debian's packaged sources and booted in QEMU under "
        f"the same loads; the boot is the unit, verdicts need 5 boots a "
        f"cell.  Report folder: {folder.name}.", WIDTH)
    lines += ["", *text.rstrip("\n").splitlines(), "",
              "To reproduce (the lab at commit " + commit + "):", ""]
    # a shell command, cut at spaces with "\" so it pastes whole
    parts = textwrap.wrap(command_of(folder, analysis), WIDTH - 8,
                          break_on_hyphens=False, break_long_words=False)
    lines += ["    " + p + (" \\" if i < len(parts) - 1 else "")
              for i, p in enumerate(parts)]
    body = "\n".join(lines) + "\n"
    too_long = [x for x in body.splitlines() if len(x) > WIDTH]
    if too_long:
        raise LabError(f"{folder}/report.txt: lines over {WIDTH} columns, "
                       f"e.g. {too_long[0]!r}")
    msg = EmailMessage(policy=POLICY)
    msg["From"] = sender()
    msg["Date"] = email.utils.formatdate(localtime=False)
    msg["Message-ID"] = email.utils.make_msgid(domain="softirq-rt-lab")
    if msgid:
        base = subject[4:] if subject.lower().startswith("re: ") \
            else subject
        msg["Subject"] = f"Re: {base}"
        msg["In-Reply-To"] = f"<{msgid}>"
        msg["References"] = f"<{msgid}>"
    else:
        msg["Subject"] = f"softirq-rt lab: {folder.name}"
    msg.set_content(body, cte="7bit" if body.isascii() else "8bit")
    return msg


def write(folder: Path, variant: str = "") -> Path:
    out = folder / "reply.eml"
    out.write_bytes(reply(folder, variant).as_bytes(policy=POLICY))
    return out
