"""The lab's QEMU as a Debian package, and LAVA jobs checked against the
QEMU their setting was chosen for (lab/build/qemudeb.py)."""
import re
import subprocess

import pytest

from lab.base.log import LabError
from lab.build import qemubuild, qemudeb
from lab.run.runners.lava import collect, runner

DEBIANS = "1:7.2+dfsg-7+deb12u18+b3"
BUILD = "6428fe67b4cb66e4"
CONTROL = f"""Package: qemu-system-x86
Source: qemu (1:7.2+dfsg-7+deb12u18)
Version: {DEBIANS}
Architecture: amd64
Installed-Size: 43488
Description: QEMU full system emulation binaries (x86)
 QEMU is a fast processor emulator.
"""


def test_the_version_names_the_lab_and_its_build_over_debians():
    v = qemudeb.lab_version(DEBIANS, BUILD)
    assert v == f"{DEBIANS}+softirqlab.{BUILD}"
    assert qemudeb.build_of(v) == BUILD and qemudeb.build_of(DEBIANS) == ""
    assert qemudeb.debian_version(v) == DEBIANS
    # made again from an installed lab package: one suffix, not two
    assert qemudeb.lab_version(v, "0" * 16) == \
        f"{DEBIANS}+softirqlab.{'0' * 16}"
    # dpkg orders it after Debian's, so apt does not take it back
    assert subprocess.run(["dpkg", "--compare-versions", v, "gt",
                           DEBIANS]).returncode == 0


def test_the_control_file_keeps_debians_source_version():
    out = qemudeb.control(CONTROL, DEBIANS, BUILD,
                          "qemu (1:7.2+dfsg-7+deb12u18)", grown_kb=44000)
    lines = out.splitlines()
    assert "Installed-Size: 87488" in lines
    assert f"Version: {DEBIANS}+softirqlab.{BUILD}" in lines
    # qemubuild keys its build on the source version: it must not move
    assert lines.count("Source: qemu (1:7.2+dfsg-7+deb12u18)") == 1
    assert BUILD in out and out.endswith("\n")


def qemu_record(build, logged):
    record = {"accel": {"emulator": {"build": build} if build else {}}}
    if logged is not None:
        record["qemu_version"] = logged
    return record


@pytest.mark.parametrize("build, logged, wrong", [
    (BUILD, f"QEMU {DEBIANS}+softirqlab.{BUILD}", ""),
    ("", f"QEMU {DEBIANS}", ""),
    (BUILD, f"QEMU {DEBIANS}", "not the lab's QEMU build"),
    (BUILD, f"QEMU {DEBIANS}+softirqlab.{'0' * 16}",
     "not the lab's QEMU build"),
    ("", f"QEMU {DEBIANS}+softirqlab.{BUILD}", "LAVA_QEMU=lab"),
    (BUILD, None, "names no qemu-system-x86 version"),
])
def test_a_job_in_another_qemu_than_its_setting_wants_fails(build, logged,
                                                            wrong):
    why = collect.wrong_qemu(qemu_record(build, logged), "qemu-lab-01")
    assert (wrong in why and "qemu-lab-01" in why) if wrong else why == ""


def test_the_job_log_line_lava_writes_gives_the_version():
    log = [{"msg": f"qemu-system-x86, installed at version: "
                   f"{DEBIANS}+softirqlab.{BUILD}, host architecture: "
                   f"amd64"}]
    got = collect.qemu_facts(log)["qemu_version"]
    assert qemudeb.build_of(got.removeprefix("QEMU ")) == BUILD


@pytest.mark.parametrize("told, installed, uri, lab", [
    ("lab", DEBIANS, "https://u:t@lava.example.org/RPC2", True),
    ("debian", f"{DEBIANS}+softirqlab.{BUILD}", "", False),
    ("auto", f"{DEBIANS}+softirqlab.{BUILD}",
     "http://u:t@127.0.0.1:8800/RPC2", True),
    ("auto", DEBIANS, "http://u:t@127.0.0.1:8800/RPC2", False),
    # another machine's workers: not known, so Debian's
    ("auto", f"{DEBIANS}+softirqlab.{BUILD}",
     "https://u:t@lava.example.org/RPC2", False),
])
def test_lava_jobs_get_the_lab_setting_only_where_workers_have_its_qemu(
        monkeypatch, told, installed, uri, lab):
    monkeypatch.setattr(qemudeb, "installed_version", lambda: installed)
    monkeypatch.setattr(qemubuild, "provenance", lambda count=None, arch=None: {
        "source": "qemu", "patches": [], "build": BUILD, "binary": "q"})
    monkeypatch.delenv("LAB_TCG_SETTING", raising=False)
    accel = runner.Lava(uri=uri, qemu=told).accel()
    assert bool(accel.emulator) == lab, accel.reason


@pytest.mark.guest
def test_the_package_holds_the_labs_build_and_says_so(tmp_path):
    deb = qemudeb.build()
    prov = qemubuild.provenance()
    fields = subprocess.run(["dpkg-deb", "-f", str(deb), "Version",
                             "Source"], capture_output=True, text=True,
                            check=True).stdout
    assert f"+softirqlab.{prov['build']}" in fields
    assert "Source: qemu (" in fields and "softirqlab" not in \
        fields.split("Source:")[1]
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], check=True)
    inside = tmp_path / "usr" / "bin" / qemubuild.BINARY
    assert inside.read_bytes() == qemubuild.ensure().read_bytes()


@pytest.mark.parametrize("setting, installed, uri, refused", [
    ("icount-3-nosleep", f"{DEBIANS}+softirqlab.{BUILD}",
     "http://u:t@127.0.0.1:8800/RPC2", "measures Debian's QEMU"),
    # the local worker's package is an older build than the setting's
    ("icount-3-slice20", f"{DEBIANS}+softirqlab.{'0' * 16}",
     "http://u:t@127.0.0.1:8800/RPC2", "`make lava-local` installs"),
    # a build with fewer of the lab's patches is in no package
    ("icount-3-labbuild", f"{DEBIANS}+softirqlab.{BUILD}",
     "http://u:t@127.0.0.1:8800/RPC2", "RUNNER=local"),
    ("icount-3-labbuild", DEBIANS, "https://u:t@lava.example.org/RPC2",
     "RUNNER=local"),
])
def test_lava_refuses_a_setting_its_workers_package_cannot_run(
        monkeypatch, setting, installed, uri, refused):
    monkeypatch.setattr(qemudeb, "installed_version", lambda: installed)
    monkeypatch.setattr(qemubuild, "provenance", lambda count=None, arch=None: {
        "source": "qemu", "patches": [],
        "build": "1" * 16 if count == 0 else BUILD, "binary": "q"})
    monkeypatch.setenv("LAB_TCG_SETTING", setting)
    with pytest.raises(LabError, match=f"setting {setting} .*{re.escape(refused)}"):
        runner.Lava(uri=uri, qemu="lab").accel()
