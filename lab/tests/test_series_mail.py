"""From a posted series to a variant, and from a report to a reply."""
import email
import email.policy
import json
import re
import subprocess

import pytest

from lab.base import kconfig, paths
from lab.report import mail
from lab.build import series, source
from lab.base.log import LabError

AUTHOR = ["-c", "user.name=Ann Dev", "-c", "user.email=ann@example.org"]


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *AUTHOR, *args], check=True,
                   capture_output=True, text=True)


def make_series(tmp_path, files: dict, edits: list,
                thread: bool = True) -> str:
    """A series as `git format-patch --cover-letter --stdout` writes it
    (with --thread unless told not): `files` is the base, each of
    `edits` (path, old, new, subject) one patch.  Returns the mbox
    text."""
    repo = tmp_path / "repo"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for rel, old, new, subject in edits:
        path = repo / rel
        path.write_text(path.read_text().replace(old, new, 1))
        git(repo, "commit", "-q", "-a", "-m",
            f"{subject}\n\nWhy.\n\nSigned-off-by: Ann Dev <ann@example.org>")
    out = subprocess.run(
        ["git", "-C", str(repo), *AUTHOR, "format-patch", "--stdout",
         "--cover-letter", *(["--thread"] if thread else []),
         f"-{len(edits)}"],
        check=True, capture_output=True, text=True).stdout
    return out.replace("*** SUBJECT HERE ***", "softirq: two steps") \
        .replace("*** BLURB HERE ***", "A series for the lab's test.")


TOY = {"kernel/Kconfig.x": "config OLD\n\tbool\n", "kernel/x.c": "int x;\n"}
TOY_EDITS = [("kernel/Kconfig.x", "config OLD\n",
              "config OLD\n\tbool\n\nconfig LAB_NEW\n\tbool \"new\"\n",
              "x: add LAB_NEW"),
             ("kernel/x.c", "int x;\n", "int x = 1;\n", "x: set x")]


def test_a_series_is_checked_before_anything_is_written(tmp_path):
    root = tmp_path / "variants"
    (root / "taken").mkdir(parents=True)
    (root / "baseline").mkdir()
    text = make_series(tmp_path, TOY, TOY_EDITS)
    with pytest.raises(LabError, match="variant 'taken' exists already"):
        series.add("taken", str(tmp_path), root=root)
    prose = tmp_path / "notes.txt"
    prose.write_text("Just some notes, no mail in here.\n")
    with pytest.raises(LabError, match="notes.txt: no patch mail in it"):
        series.add("prose", str(prose), root=root)
    # patch 1/2 left out: the gap is named
    cover, _, second = re.split(r"(?m)^(?=From [0-9a-f]{40} )", text)[1:]
    cut = tmp_path / "cut.mbox"
    cut.write_text(cover + second)
    with pytest.raises(LabError, match=r"cut.mbox: patch 1/2 missing"):
        series.add("cut", str(cut), root=root)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LabError, match="no \\*.patch files"):
        series.add("empty", str(empty), root=root)
    # `make variant NAME=x` without FROM, and a mistyped path: said so,
    # not sent to the archive as a Message-ID
    with pytest.raises(LabError, match="no series given: FROM="):
        series.add("none", "", root=root)
    with pytest.raises(LabError, match=r"serie.mbox: no such file or "
                       r"folder, and not a Message-ID"):
        series.add("typo", str(tmp_path / "serie.mbox"), root=root)
    assert sorted(p.name for p in root.iterdir()) == ["baseline", "taken"]


def test_a_series_without_message_ids_is_threaded_for_b4(tmp_path):
    """`git format-patch --cover-letter --stdout` without --thread gives
    no Message-IDs, and b4 found no patches in it."""
    plain = tmp_path / "plain.mbox"
    plain.write_text(make_series(tmp_path, TOY, TOY_EDITS, thread=False))
    assert "Message-ID" not in plain.read_text()
    mbx, cover = series.b4_am(str(series.unfolded(
        plain, tmp_path / "unfolded.mbox")), tmp_path / "b4", str(plain))
    checked = series.check_mbox(mbx, "b4's")
    assert checked["total"] == 2 and cover is not None
    # each patch file named by its subject, as format-patch names it: a
    # patch that does not apply is named by what it does (issue 53)
    assert [p.name for p in series.split(mbx, tmp_path / "split")] == \
        ["0001-x-add-LAB_NEW.patch", "0002-x-set-x.patch"]


def test_b4_imports_without_a_home_or_a_git_identity(tmp_path,
                                                     monkeypatch):
    """Issue 53: with HOME unset, or no git identity, "b4 am failed"
    named neither; the lab gives b4 a home and its own identity."""
    plain = tmp_path / "plain.mbox"
    plain.write_text(make_series(tmp_path, TOY, TOY_EDITS))
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for k in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(k, raising=False)
    mbx, _ = series.b4_am(str(series.unfolded(
        plain, tmp_path / "unfolded.mbox")), tmp_path / "b4", str(plain))
    assert series.check_mbox(mbx, "b4's")["total"] == 2


def test_bytes_that_are_not_utf8_are_refused_with_their_line(tmp_path):
    text = make_series(tmp_path, TOY, TOY_EDITS).encode()
    bad = tmp_path / "latin1.mbox"
    bad.write_bytes(text.replace(b"int x = 1;", b"int x = 1; /* caf\xe9 */"))
    line = bad.read_bytes().split(b"\n").index(
        next(x for x in bad.read_bytes().split(b"\n") if b"caf" in x))
    with pytest.raises(LabError, match=r"x: set x', line \d+ of its mail: "
                       r"byte 0xe9 is not UTF-8") as e:
        series.check_bytes(bad, str(bad))
    assert line > 0 and "latin1.mbox" in str(e.value)
    # in the diff, format-patch wrote the byte: no advice to use it
    assert "in the patch's own diff" in str(e.value)
    assert "format-patch does" not in str(e.value)
    # in the message above the diff, the mailer did: send it as UTF-8
    above = tmp_path / "above.mbox"
    above.write_bytes(text.replace(b"\n---\n", b"\nCaf\xe9.\n---\n", 1))
    with pytest.raises(LabError, match="send the series as UTF-8"):
        series.check_bytes(above, str(above))


def test_an_undecided_option_stops_the_build(tmp_path):
    frag = tmp_path / "config"
    frag.write_text("# from the series\nCONFIG_LAB_NEW=decide\n")
    with pytest.raises(LabError, match=r"config:2: CONFIG_LAB_NEW=decide: "
                       r"the series adds this option"):
        kconfig.parse_fragment(frag)


@pytest.mark.guest
def test_a_posted_series_becomes_a_variant_that_applies(tmp_path):
    """A two-patch series with a cover letter and a Kconfig option,
    written against the packaged tree's own files, becomes a variant;
    its options wait for a decision."""
    repo, _, _ = source.unpacked_source()
    files = {rel: (repo / rel).read_text()
             for rel in ("init/Kconfig", "kernel/softirq.c")}
    edits = [("init/Kconfig", "config SYSFS_DEPRECATED\n",
              "config LAB_TEST_OPTION\n\tbool \"for the lab's test\"\n\n"
              "config SYSFS_DEPRECATED\n", "init: add LAB_TEST_OPTION"),
             ("kernel/softirq.c", "#define MAX_SOFTIRQ_RESTART 10\n",
              "#define MAX_SOFTIRQ_RESTART 10 /* lab test */\n",
              "softirq: note the restart limit")]
    mbox = tmp_path / "series.mbox"
    mbox.write_text(make_series(tmp_path, files, edits))
    root = tmp_path / "variants"
    (root / "baseline").mkdir(parents=True)   # the generation's base
    folder = series.add("from-mbox", str(mbox), root=root)
    names = (folder / "series").read_text().split("\n")
    patches = [n for n in names if n.endswith(".patch")]
    assert patches[0].startswith("0001-init-add-LAB_TEST_OPTION")
    assert len(patches) == 2
    assert "CONFIG_LAB_TEST_OPTION=decide" in (folder / "config").read_text()
    readme = (folder / "README.md").read_text()
    assert "[PATCH 0/2] softirq: two steps" in readme
    assert "A series for the lab's test." in readme
    conf = (folder / "variant.conf").read_text()
    assert "message_id = cover." in conf
    assert "base = baseline\n" in conf
    # a series that does not apply: patch, file and hunk named
    bad = tmp_path / "bad.mbox"
    bad.write_text(mbox.read_text().replace(
        "#define MAX_SOFTIRQ_RESTART 10\n", "#define MAX_SOFTIRQ_RESTART 11\n"))
    with pytest.raises(LabError, match=r"patch 2/2 .* does not apply .* "
                       r"kernel/softirq.c hunk #1"):
        series.add("from-bad", str(bad), root=root)
    assert not (root / "from-bad").exists()


def fake_report(tmp_path, monkeypatch, message_id=""):
    reports, vroot = tmp_path / "reports", tmp_path / "variants"
    folder = reports / "2026-12-04-mine"
    (folder / "data").mkdir(parents=True)
    (folder / "report.txt").write_text(
        "softirq-rt lab: baseline vs mine\n\nSummary\n  mine lower in "
        "long-block x0.01.\n")
    (folder / "data" / "analysis.json").write_text(json.dumps(
        {"variants": ["baseline", "mine"],
         "command": "python3 -m lab run --variants baseline,mine "
                    "--scenarios idle,long-block,short-storm,fs-noise "
                    "--boots 5 --name mine"}))
    for name in ("baseline", "mine"):
        (vroot / name).mkdir(parents=True)
        for f in ("series", "config", "README.md"):
            (vroot / name / f).write_text("")
    if message_id:
        (vroot / "mine" / "variant.conf").write_text(
            f"message_id = {message_id}\n"
            f"subject = [PATCH 0/2] softirq: two steps\n")
    monkeypatch.setattr(paths, "REPO", tmp_path)
    monkeypatch.setattr(paths, "VARIANTS_DIR", vroot)
    return folder


def test_a_report_becomes_a_reply_to_its_series(tmp_path, monkeypatch):
    fake_report(tmp_path, monkeypatch, "cover.1.git.ann@example.org")
    out = mail.write(mail.find_report("mine"))
    assert out.name == "reply.eml"
    raw = out.read_bytes()
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert msg["Subject"] == "Re: [PATCH 0/2] softirq: two steps"
    assert msg["In-Reply-To"] == "<cover.1.git.ann@example.org>"
    assert msg["References"] == "<cover.1.git.ann@example.org>"
    body = msg.get_content()
    assert "mine lower in long-block x0.01." in body
    # the command pastes whole: cut at spaces, lines joined by "\\"
    assert "--variants baseline,mine --scenarios " \
        "idle,long-block,short-storm,fs-noise --boots 5 --name mine" in \
        body.replace(" \\\n    ", " ")
    assert max(len(x) for x in body.splitlines()) <= 72
    # a long Message-ID stays one token (folded, mail clients lose it)
    fake_report(tmp_path / "long", monkeypatch, "x" * 70 + "@example.org")
    long_id = email.message_from_bytes(
        mail.write(mail.find_report("mine")).read_bytes(),
        policy=email.policy.default)
    assert long_id["In-Reply-To"] == "<" + "x" * 70 + "@example.org>"


def test_a_report_without_a_series_is_a_new_thread(tmp_path, monkeypatch):
    folder = fake_report(tmp_path, monkeypatch)
    msg = email.message_from_bytes(mail.write(folder).read_bytes(),
                                   policy=email.policy.default)
    assert msg["Subject"] == "softirq-rt lab: 2026-12-04-mine"
    assert msg["In-Reply-To"] is None
    with pytest.raises(LabError, match="no report named 'other'"):
        mail.find_report("other")
    with pytest.raises(LabError, match="'zijlstra' is not in this report"):
        mail.write(folder, "zijlstra")


@pytest.mark.parametrize("name", ["../../mailtarget", "mine/../mine", "*",
                                  "04-mine", "ine", "", "."])
def test_a_report_is_named_exactly(tmp_path, monkeypatch, name):
    """Issue 53: `make mail NAME=../../mailtarget` wrote reply.eml
    outside reports/, and NAME=5boots or * picked a report by pattern: a
    name is a folder directly under reports/, or one dated
    <yyyy-mm-dd>-<name>, nothing else."""
    fake_report(tmp_path, monkeypatch)
    (tmp_path / "mailtarget" / "data").mkdir(parents=True)
    (tmp_path / "mailtarget" / "report.txt").write_text("x\n")
    with pytest.raises(LabError) as e:
        mail.find_report(name)
    assert repr(name) in str(e.value)
    assert f"report names: `ls {tmp_path / 'reports'}`" in str(e.value)
    assert "\n" not in str(e.value)
    assert mail.find_report("mine").name == "2026-12-04-mine"
    assert mail.find_report("2026-12-04-mine").name == "2026-12-04-mine"


def test_a_mistyped_path_with_an_at_sign_says_it_is_no_file(tmp_path,
                                                            monkeypatch):
    """Issue 53: a FROM path with "@" that names no file went to the
    archive as a Message-ID and ended in b4's ConnectionError alone."""
    import subprocess as sp

    def offline(cmd, **kw):
        return sp.CompletedProcess(cmd, 1, "", "ConnectionError: no route")
    monkeypatch.setattr(series.subprocess, "run", offline)
    typo = str(tmp_path / "me@host" / "serie.mbox")
    with pytest.raises(LabError) as e:
        series.b4_am(typo, tmp_path / "b4", typo)
    assert str(e.value).startswith(f"{typo}: no such file or folder; as a "
                                   f"Message-ID, b4 am failed: "
                                   f"ConnectionError")
