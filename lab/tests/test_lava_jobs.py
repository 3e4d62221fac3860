"""LAVA job definitions and job-log unpacking, without a server (the
server is in test_lava.py)."""
import base64
import hashlib
import io
import re
import subprocess
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from lava_common.schemas import validate

from lab.run import matrix, qemu, scenario, settings
from lab.run.runners.lava import client, collect, jobs
from lab.base.log import LabError

ACCEL = settings.tcg("test")


def make_cell(tmp_path, extra=""):
    path = tmp_path / "blk.scenario"
    path.write_text("description = test\nduration = 3\n"
                    "module = vector=block spin_us=5000 cpu=0\n" + extra)
    return matrix.Cell(SimpleNamespace(name="baseline", append="",
                                       plan_env=dict, explains=True,
                                       module_args=lambda args: args),
                       scenario.parse(path), 1)


def make_built(tmp_path):
    image = tmp_path / "bzImage"
    image.write_bytes(b"kernel")
    return SimpleNamespace(image=image, variant="baseline",
                           meta={"hash": "ab" * 16, "release": "6.1.1-x"})


def render(tmp_path, template="qemu", extra=""):
    base = tmp_path / "base.cpio"
    base.write_bytes(b"\0" * 512)
    run_dir = tmp_path / "run"
    text, own = jobs.definition(
        make_cell(tmp_path, extra), make_built(tmp_path), base, ACCEL,
        jobs.Artifacts.at(str(tmp_path / "art")),
        jobs.template_path(template), run_dir)
    assert (tmp_path / "art" / own).is_file()
    return text, run_dir


@pytest.mark.parametrize("template,extra", [
    ("qemu", ""), ("qemu", "disk = 64\n"), ("x86-ipxe", "")])
def test_jobs_pass_lavas_own_schema(tmp_path, template, extra):
    text, run_dir = render(tmp_path, template, extra)
    job = yaml.safe_load(text)
    validate(job, strict=True)
    assert (run_dir / "job.yaml").read_text() == text
    cmdline = f"console=ttyS0,115200 panic=-1 {ACCEL.append} " \
        "lab.results=console"
    if template == "qemu":
        images = job["actions"][0]["deploy"]["images"]
        assert cmdline in images["kernel"]["image_arg"]
        # the options the local runner gives every guest, accelerator first
        assert job["context"]["extra_options"] == \
            [" ".join(qemu.guest_options(ACCEL, 2))]
        assert ("scratch" in images) == bool(extra)
        if extra:
            assert "num-queues=1" in images["scratch"]["image_arg"]
            scratch = Path(images["scratch"]["url"][len("file://"):])
            assert len(__import__("gzip").decompress(
                scratch.read_bytes())) == 64 << 20
    else:
        assert job["context"]["extra_kernel_args"] == cmdline
    assert job["metadata"]["lab.scenario"] == "blk"


# LAVA's monitor matches its pattern against what the console has
# delivered so far: a pattern that may end anywhere in a line once read
# the unit "us" as "u" (a cold make check's LAVA test).  It waits for
# the line's end.
@pytest.mark.parametrize("template", ["qemu", "x86-ipxe"])
def test_result_pattern_waits_for_the_end_of_the_line(tmp_path, template):
    job = yaml.safe_load(render(tmp_path, template)[0])
    test = next(a["test"] for a in job["actions"] if "test" in a)
    pattern = re.compile(test["monitors"][0]["pattern"])
    line = "lab-result: cyclictest_t0_max pass 37 us"
    for cut in range(len(line)):
        assert not pattern.search(line[:cut])
    assert not pattern.search(line)
    # a serial console through a pty ends its lines in \r\r\n
    for end in ("\n", "\r\n", "\r\r\n"):
        found = pattern.search(f"x{end}{line}{end}lab-files: begin")
        assert found.group("units", "measurement") == ("us", "37")


def test_job_initrd_is_the_variants_with_the_plan_appended(tmp_path):
    text, run_dir = render(tmp_path)
    url = yaml.safe_load(text)["actions"][0]["deploy"]["images"][
        "initrd"]["url"]
    data = Path(url[len("file://"):]).read_bytes()
    assert data[:512] == b"\0" * 512
    listed = subprocess.run(["cpio", "-it", "--quiet"], input=data[512:],
                            capture_output=True).stdout.decode().split()
    assert listed == ["lab", "lab/plan.sh"]
    plan = (run_dir / "plan.sh").read_text()
    assert "DURATION='3'" in plan and plan.encode() in data


def test_a_disk_scenario_on_a_real_machine_is_refused(tmp_path):
    with pytest.raises(LabError, match="scenario blk needs a scratch disk"):
        render(tmp_path, "x86-ipxe", "disk = 64\n")


def test_a_template_field_the_lab_does_not_fill_is_named(tmp_path):
    bad = tmp_path / "mine.yaml"
    bad.write_text("device_type: qemu\njob_name: ${jobname}\n")
    with pytest.raises(LabError, match=r"mine.yaml: field \$\{jobname\}"):
        jobs.fill(bad, {"job_name": "x"})
    with pytest.raises(LabError, match="template 'nope' not found"):
        jobs.template_path("nope")


def shipped(files: dict) -> list:
    """Console lines as guest/init prints them around the result files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    blob = buf.getvalue()
    text = base64.encodebytes(blob).decode().splitlines()
    return (["lab-init: 6.1 at /init", "lab-result: plan-exit pass 0 code",
             f"lab-files: begin {len(blob)} bytes sha256 "
             f"{hashlib.sha256(blob).hexdigest()}"] + text +
            ["lab-files: end", "lab-init: plan exit 0"])


def as_log(lines):
    return [{"lvl": "info", "msg": "Boot command: qemu -x"}] + \
        [{"lvl": "target", "msg": line} for line in lines]


def test_result_files_come_out_of_the_job_log(tmp_path):
    log = as_log(shipped({"plan-exit": b"0\n", "cyclictest.json": b"{}"}))
    console, problem = collect.into_run_folder(log, tmp_path)
    assert problem == ""
    assert (tmp_path / "plan-exit").read_text() == "0\n"
    assert (tmp_path / "cyclictest.json").read_text() == "{}"
    assert console == (tmp_path / "console.log").read_text()
    assert "lab-init: plan exit 0" in console and "lab-files" not in console
    assert collect.qemu_facts(log)["command"] == "qemu -x"


def test_damaged_or_cut_result_files_are_named_not_unpacked(tmp_path):
    lines = shipped({"plan-exit": b"0\n"})
    damaged = lines[:3] + [lines[3][:-4] + "AAAA"] + lines[4:]
    assert "damaged" in collect.into_run_folder(as_log(damaged), tmp_path)[1]
    cut = lines[:4]
    assert "cut off" in collect.into_run_folder(as_log(cut), tmp_path)[1]
    assert not (tmp_path / "plan-exit").exists()


def test_only_flat_files_are_unpacked(tmp_path):
    log = as_log(shipped({"../escape": b"x", "ok": b"y"}))
    (tmp_path / "run").mkdir()
    collect.into_run_folder(log, tmp_path / "run")
    assert not (tmp_path / "escape").exists()
    assert (tmp_path / "run" / "ok").read_text() == "y"


def test_a_kernel_message_inside_the_block_is_taken_out(tmp_path):
    # as met: reboot's message while the tty still drained the block
    lines = shipped({"plan-exit": b"0\n" * 200})
    split = lines[4][:16], lines[4][16:]
    lines[4:5] = [split[0] + "[ 1154.395911] reboot: Restarting system",
                  split[1]]
    assert collect.into_run_folder(as_log(lines), tmp_path)[1] == ""
    assert (tmp_path / "plan-exit").read_text() == "0\n" * 200


def test_the_server_is_named_without_its_token():
    server = client.Server("https://me:s3cret@lava.example.org/RPC2")
    assert server.url == "https://lava.example.org"
    assert server.job_url(7) == "https://lava.example.org/scheduler/job/7"
    with pytest.raises(LabError) as failed:    # nothing listens there
        client.Server("http://me:s3cret@127.0.0.1:9/RPC2").check()
    assert "s3cret" not in str(failed.value)
    assert "`lavacli system version` failed" in str(failed.value)


def test_tokens_are_read_from_lava_server_manage_output():
    from lab.run.runners.lava.local import token_of
    assert token_of("Tokens for user 'lab':\n* " + "a1" * 32 + " ()\n") == \
        "a1" * 32
    assert token_of("hostname   : lab-worker\nstate      : Online\n"
                    "token      : wB0RTgGjNTgh\ndevices    : 1\n") == \
        "wB0RTgGjNTgh"
    assert token_of("Tokens for user 'lab':\n") == ""


def test_a_remote_server_needs_the_job_files_published():
    from lab.run.runners.lava import runner
    remote = runner.Lava(uri="https://me:t@lava.example.org/RPC2")
    with pytest.raises(LabError, match="publish .* over HTTP"):
        remote.check_reachable()
    runner.Lava(uri="https://me:t@lava.example.org/RPC2",
                   artifacts_url="https://here/lab").check_reachable()
    runner.Lava(uri="http://u:t@127.0.0.1:8800/RPC2").check_reachable()
