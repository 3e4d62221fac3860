"""Faults the host side must meet with a clear message and no loss."""
import json
import re
import subprocess
from pathlib import Path

import pytest

from lab.base import paths
from lab.build import source
from lab.base.log import LabError

# every host module, lab/run/runners/lava/ too; the tests quote guest output
HOST_SIDE = [*sorted(p for p in (paths.REPO / "lab").rglob("*.py")
                     if "tests" not in p.relative_to(paths.REPO).parts),
             paths.REPO / "lab" / "deps.sh", paths.REPO / "Makefile",
             paths.REPO / ".ci" / "run"]


def test_host_side_never_loads_kernel_code():
    """Modules are loaded inside guests only: no host code runs insmod,
    modprobe, rmmod or kexec (guest plans under guest/ may)."""
    words = re.compile(r"\b(insmod|modprobe|rmmod|kexec|init_module|"
                       r"finit_module)\b")
    for f in HOST_SIDE:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            assert not words.search(line), f"{f}:{n}: {line.strip()}"


def test_missing_packaged_source_says_what_to_install(tmp_path,
                                                       monkeypatch):
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(LabError) as e:
        source.unpacked_source(tmp_path / "linux-source-6.1.tar.xz")
    assert "not found" in str(e.value)
    assert "linux-source-6.1" in str(e.value) and "make deps" in str(e.value)


def test_a_generation_debian_does_not_package_is_named_as_such():
    """`source = 6.99` once said `make deps` would install
    linux-source-6.99, which does not exist."""
    assert source.install_hint("6.99").startswith(
        "Debian has no package linux-source-6.99 here")
    assert "make deps" not in source.install_hint("6.99")


def fake_tarball(tmp_path, version):
    tree = tmp_path / "linux-source-x"
    tree.mkdir()
    major, minor, sub = version.split(".")
    (tree / "Makefile").write_text(f"VERSION = {major}\nPATCHLEVEL = "
                                   f"{minor}\nSUBLEVEL = {sub}\n")
    tarball = tmp_path / "linux-source.tar.xz"
    subprocess.run(["tar", "-cJf", str(tarball), "-C", str(tmp_path),
                    tree.name], check=True)
    return tarball


def test_other_kernel_version_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    tarball = fake_tarball(tmp_path, "5.10.200")
    with pytest.raises(LabError, match=r"holds Linux 5\.10\.200, the lab "
                                       r"needs 6\.1\.x: install it with"):
        source.unpacked_source(tarball)
    # nothing half-unpacked is left to be mistaken for a source tree
    assert not any((tmp_path / "cache" / "source").glob("*/Makefile"))


def test_packaged_source_is_unpacked_once(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    tarball = fake_tarball(tmp_path, "6.1.192")
    repo, digest, version = source.unpacked_source(tarball)
    assert version == "6.1.192" and (repo / "Makefile").is_file()
    tag = source.git(repo, "rev-parse", source.BASE_TAG).stdout.strip()
    assert len(tag) == 40
    assert source.unpacked_source(tarball) == (repo, digest, version)


def test_two_writers_unpack_one_source_once(tmp_path, monkeypatch):
    """Issue 61: two test workers unpacked linux-source-6.1 at once into
    one temporary folder (FileExistsError in one, tar's "Cannot stat" in
    the other).  A tar slowed to half a second makes the two overlap;
    both must get the same repository, and nothing else is left."""
    import concurrent.futures
    slow = tmp_path / "bin"
    slow.mkdir()
    (slow / "tar").write_text("#!/bin/sh\nsleep 0.5\nexec /bin/tar \"$@\"\n")
    (slow / "tar").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}:/usr/bin:/bin")
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    tarball = fake_tarball(tmp_path, "6.1.192")
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        got = list(pool.map(source.unpacked_source, [tarball, tarball]))
    assert got[0] == got[1] and got[0][2] == "6.1.192"
    left = sorted(p.name for p in (tmp_path / "cache" / "source").iterdir())
    assert left == [got[0][0].name]


def test_a_cache_that_is_a_file_is_named(tmp_path, monkeypatch):
    """Issue 53: LAB_CACHE pointing at a file (or below one) ended in a
    NotADirectoryError from source.py, for `variant add` and `run`: one
    line naming the setting and the file."""
    tarball = fake_tarball(tmp_path, "6.1.192")
    a_file = tmp_path / "cache"
    a_file.write_text("")
    for cache in (a_file, a_file / "below"):
        monkeypatch.setenv("LAB_CACHE", str(cache))
        with pytest.raises(LabError) as e:
            source.unpacked_source(tarball)
        assert str(e.value).startswith(
            f"LAB_CACHE={cache}: {a_file} is a file, not a folder; set "
            f"LAB_CACHE to a folder")
    monkeypatch.delenv("LAB_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(a_file))
    with pytest.raises(LabError, match=f"XDG_CACHE_HOME={a_file}: {a_file} "
                                       f"is a file, not a folder; set "
                                       f"LAB_CACHE"):
        paths.cache_dir()


def test_results_are_written_atomically(tmp_path, monkeypatch):
    """A crash during a write leaves the old file whole, never half."""
    from lab.base import store
    target = tmp_path / "run.json"
    store.write_json(target, {"status": "ok"})

    def crash(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(store.os, "replace", crash)
    with pytest.raises(OSError):
        store.write_json(target, {"status": "running"})
    assert store.read_json(target) == {"status": "ok"}


def test_deps_script_is_plain_sh():
    """make deps must run on a fresh machine before python3 is there."""
    script = Path(paths.REPO / "lab" / "deps.sh")
    assert script.read_text().startswith("#!/bin/sh")
    r = subprocess.run(["sh", "-n", str(script)], capture_output=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("boots", ["0", "-1", "two", "\u0663", "+3"])
def test_bad_boots_are_refused_before_anything_runs(boots):
    r = subprocess.run(["/usr/bin/python3", "-m", "lab", "run", "--boots",
                        boots], cwd=paths.REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2
    assert f"argument --boots: '{boots}': give a whole number of at " \
           f"least 1" in r.stderr
    assert "variant" not in r.stdout       # nothing was built


@pytest.mark.parametrize("command", [
    ["run", "--boots", "1"], ["compare"], ["ladder", "--media", "a,b"],
    ["pool", "a", "b"], ["calibrate", "a"], ["attribute", "baseline"]])
@pytest.mark.parametrize("name", ["../../../../x", "a/b", "x" * 300,
                                  "Mine", ".hidden"])
def test_a_report_name_outside_reports_is_refused_first(command, name,
                                                        capsys):
    """Issue 61: compare, run, pool and calibrate took `../../../../x` (a
    report outside the repository), `a/b` (a nested folder) and a
    300-character name (an OSError after the whole matrix had booted)."""
    from lab.__main__ import main
    with pytest.raises(SystemExit) as e:
        main([*command, "--name", name])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"{name[:100]!r} is not a report name: it names the folder " \
        f"reports/<date>-<name>" in err and "Traceback" not in err


def test_a_cache_that_cannot_be_written_is_named(monkeypatch, capsys):
    """Not a traceback: the folder, why, and the setting that moves it
    (/sys refuses a new folder even to root)."""
    from lab.__main__ import main
    monkeypatch.setenv("LAB_CACHE", "/sys/lab-cache")
    assert main(["build", "--variants", "baseline"]) == 2
    err = capsys.readouterr().err
    assert "error: /sys/lab-cache: Operation not permitted" in err
    assert "set LAB_CACHE" in err and "Traceback" not in err


# A python3 that only records what the Makefile asked of it, one JSON
# line a call: make's recipes are tested without the lab running.
RECORDER = """#!/usr/bin/python3
import json, sys
with open(sys.argv[0] + ".calls", "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
"""


def make_calls(tmp_path, *args) -> list:
    """`make args` in the repository with PY the recorder and `deps` not
    run; the lab's argument lists it made.  The environment is PATH only:
    an outer make's MAKEFLAGS (make test) must not reach this one."""
    py = tmp_path / "python3"
    py.write_text(RECORDER)
    py.chmod(0o755)
    calls = py.with_name("python3.calls")
    calls.unlink(missing_ok=True)
    r = subprocess.run(["make", "-s", "-C", str(paths.REPO), "-o", "deps",
                        f"PY={py}", *args], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    return [json.loads(x) for x in calls.read_text().splitlines()] \
        if calls.is_file() else []


@pytest.mark.parametrize("target, variable, option", [
    ("variant", "NAME", "add"),
    ("variant", "FROM", "--from"),
    ("compare", "SCENARIOS", "--scenarios"),
    ("compare", "VARIANTS", "--variants"),
    ("compare", "NAME", "--name"),
    ("compare", "RUNNER", "--runner"),
    ("compare", "MEDIUM", "--medium"),
    ("lab", "BOOTS", "--boots"),
    ("lab", "MEDIUM", "--medium"),
    ("lab", "JOBS", "--jobs"),
    ("lab", "LAVA_URI", "--lava-uri"),
    ("lab", "LAVA_QEMU", "--lava-qemu"),
    ("mail", "NAME", "--name"),
    ("mail", "VARIANT", "--variant"),
    ("attribute", "VARIANT", "attribute"),
    ("replicate", "A", "replicate"),
    ("replicate", "B", ""),     # after A, empty
    ("pool", "NAME", "--name"),
])
def test_make_variables_reach_the_lab_as_data(tmp_path, target, variable,
                                              option):
    """Issue 53: `make variant 'NAME=x";touch /tmp/p;"'` ran the touch,
    and `NAME=x$(touch ...)` became `x`: a make variable is data, byte
    for byte, never shell text nor make's."""
    marker = tmp_path / "ran"
    value = (f'x";touch {marker};"`touch {marker}`$(touch {marker})'
             f"$(shell touch {marker})'$$HOME $$(touch {marker})")
    named = ["NAME=mine"] if target == "variant" and variable != "NAME" \
        else []
    [argv] = make_calls(tmp_path, target, f"{variable}={value}", *named)
    assert not marker.exists()
    assert value in argv and argv[argv.index(value) - 1] == option, argv


def test_make_variant_asks_for_its_name(tmp_path):
    """`make variant FROM=...` without NAME once made variants/lab."""
    py = tmp_path / "python3"
    py.write_text(RECORDER)
    py.chmod(0o755)
    r = subprocess.run(["make", "-s", "-C", str(paths.REPO), "-o", "deps",
                        f"PY={py}", "variant", "FROM=x.mbox"],
                       capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin"})
    assert r.returncode != 0
    assert "make variant: NAME=<name> names the new variant" in r.stderr
    assert not py.with_name("python3.calls").exists()


def test_a_list_of_reports_is_split_at_spaces_only(tmp_path):
    """REPORTS names several reports: split at blanks, each word taken
    as it is (no glob, no command)."""
    marker = tmp_path / "ran"
    for target in ("power", "pool", "calibrate"):
        [argv] = make_calls(tmp_path, target,
                            f"REPORTS=a * `touch {marker}` $(touch x)")
        assert argv[3:7] == ["a", "*", f"`touch", f"{marker}`"], argv
        assert argv[7:9] == ["$(touch", "x)"], argv
    assert not marker.exists()


@pytest.mark.parametrize("names", ["", "malat,baseline", " , "])
def test_attribute_asks_for_one_variant(names, capsys):
    """`attribute malat,baseline` dropped the second name without a word,
    and `make attribute` without VARIANT attributed baseline."""
    from lab.__main__ import main
    assert main(["attribute", names]) == 2
    err = capsys.readouterr().err
    assert "attribute: name one variant (VARIANT=<name>)" in err or \
        "names no variant" in err, err


def test_the_labs_own_makes_do_not_take_the_outer_makes_variables(
        monkeypatch):
    """`make lab NAME=x` puts NAME=x in MAKEFLAGS, which a kernel build
    the lab runs would take as an override of its own NAME."""
    import os
    from lab.__main__ import main
    monkeypatch.setenv("MAKEFLAGS", " -- NAME=x VARIANTS=y")
    monkeypatch.setenv("MAKELEVEL", "1")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "MAKEFLAGS" not in os.environ and "MAKELEVEL" not in os.environ


def test_inputs_that_once_gave_tracebacks_give_one_line(tmp_path, capsys):
    """Issue 61: an unclosed quote in a background command, a byte that
    is not UTF-8 in variant.conf or series, a results folder below a
    file, a truncated analysis.json, `qemu: {}` in run.json."""
    from lab.__main__ import main
    from lab.base import variants
    from lab.build import guestbuild
    from lab.run import scenario
    s = tmp_path / "s.scenario"
    s.write_text("description = x\nduration = 5\n"
                 "background = sh -c 'stress-ng --cpu 1\n")
    with pytest.raises(LabError, match=r"s.scenario: background: No "
                       r"closing quotation in "):
        guestbuild.check_background([scenario.parse(s)])
    for name, text in (("variant.conf", b"base = baseline\n# caf\xe9\n"),
                       ("series", b"0001-a.patch\n\xff\n")):
        v = tmp_path / "mine"
        v.mkdir(exist_ok=True)
        (v / name).write_bytes(text)
        with pytest.raises(LabError, match=rf"mine/{name}:2: not UTF-8 "
                           rf"text \(byte 0x"):
            if name == "series":
                variants.parse_series(v / name)
            else:
                variants.parse_conf(v)
        (v / name).unlink()
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert main(["run", "--variants", "baseline", "--scenarios",
                 "idle", "--boots", "1", "--results",
                 str(a_file / "results")]) == 2
    err = capsys.readouterr().err
    assert f"error: {a_file}" in err and "Not a directory" in err
    assert "nothing already written was lost" in err
    report = tmp_path / "report"
    (report / "data").mkdir(parents=True)
    (report / "data" / "analysis.json").write_text('{"cells": {')
    assert main(["power", str(report), str(report)]) == 2
    assert "analysis.json: unreadable" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_an_expect_file_refuses_a_value_no_test_can_meet(tmp_path, value):
    from lab.base import variants
    f = tmp_path / "expect"
    f.write_text(f"long_wakeup p99_us {value}\n")
    with pytest.raises(LabError, match=rf"expect:1: '{value}' is neither "
                       r"a number nor yes/no"):
        variants.parse_expect(f)
