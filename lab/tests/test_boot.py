"""Judging a guest run: panic, hang, early stop, plan failure, success."""
import subprocess

import pytest

from lab.run import accelerator, boot, qemu, runfolder
from lab.base.log import LabError


def outcome(tmp_path, console, status="exited", code=0):
    c = tmp_path / "console.log"
    c.write_text(console)
    return qemu.Outcome(status, code, 1.0, c)


def test_panic_is_reported_with_its_lines(tmp_path):
    o = outcome(tmp_path, "booting\nsoftirq: oops\nKernel panic - not "
                          "syncing: Fatal exception in interrupt\n---[ end\n")
    reason = boot.judge(o, tmp_path, 60)
    assert reason.startswith("guest kernel panic:")
    assert "Fatal exception in interrupt" in reason and "softirq: oops" \
        in reason


def test_hang_is_reported_with_console_tail(tmp_path):
    o = outcome(tmp_path, "line1\nrcu: INFO: rcu_preempt self-detected "
                          "stall\n", status="timeout", code=-9)
    reason = boot.judge(o, tmp_path, 60)
    assert reason.startswith("guest hung: killed by the watchdog after 60 "
                             "s; the kernel reported: rcu: INFO: "
                             "rcu_preempt self-detected stall;")
    assert reason.endswith("line1\nrcu: INFO: rcu_preempt self-detected "
                           "stall")


def test_guest_that_stops_before_plan_end(tmp_path):
    o = outcome(tmp_path, "lab-init: cannot mount the 9p share 'lab'\n")
    assert "before the plan finished" in boot.judge(o, tmp_path, 60)


def test_plan_failure_quotes_plan_log(tmp_path):
    (tmp_path / "plan-exit").write_text("3\n")
    (tmp_path / "plan.log").write_text("insmod: can't insert: Invalid "
                                       "argument\n")
    reason = boot.judge(outcome(tmp_path, "ok\n"), tmp_path, 60)
    assert reason.startswith("plan failed with exit 3")
    assert "Invalid argument" in reason


def test_kernel_trouble_fails_a_finished_run_with_its_lines(tmp_path):
    (tmp_path / "plan-exit").write_text("0\n")
    console = ("lab-init: ok\n[   12.5] NOHZ tick-stop error: local "
               "softirq work is pending, handler #08!!!\n"
               "[   20.1] rcu: INFO: rcu_preempt detected stalls on "
               "CPUs/tasks:\n[   30.0] INFO: task kworker/0:1:12 blocked "
               "for more than 120 seconds.\nlab: plan done\n")
    reason = boot.judge(outcome(tmp_path, console), tmp_path, 60)
    assert reason.startswith("kernel reported trouble:")
    assert "NOHZ tick-stop error" in reason and "detected stalls" in reason
    assert "blocked for more than 120 seconds" in reason
    assert "plan done" not in reason
    many = "WARNING: CPU: 0 PID: 1 at x\n" * 7
    assert "(and 2 more)" in runfolder.kernel_trouble(many)


def test_success(tmp_path):
    (tmp_path / "plan-exit").write_text("0\n")
    assert boot.judge(outcome(tmp_path, "fine\n"), tmp_path, 60) == ""


def test_watchdog_kills_a_hung_qemu_and_keeps_the_console(tmp_path,
                                                          monkeypatch):
    exe = tmp_path / "fake-qemu"
    exe.write_text("#!/bin/sh\necho 'Linux version 6.1.192'\nexec sleep 60\n")
    exe.chmod(0o755)
    monkeypatch.setenv("LAB_QEMU", str(exe))
    m = qemu.Machine(kernel=tmp_path / "k", initrd=tmp_path / "i",
                     share=tmp_path, accel=accelerator.tcg("test"))
    o = qemu.run(m, tmp_path / "console.log", timeout=1)
    assert o.status == "timeout" and o.seconds < 5
    assert "Linux version" in (tmp_path / "console.log").read_text()


def test_plan_parameters_are_quoted_shell_variables(tmp_path):
    plan = tmp_path / "p.sh"
    plan.write_text('echo "$SPIN_US $NOTE"\n')
    script = runfolder.plan_script(plan, {"SPIN_US": 5000, "NOTE": "it's"})
    out = subprocess.run(["sh", "-c", script], capture_output=True,
                         text=True).stdout
    assert out == "5000 it's\n"


def test_plan_parameter_names_are_checked(tmp_path):
    plan = tmp_path / "p.sh"
    plan.write_text("true\n")
    with pytest.raises(LabError, match="bad parameter name 'A B'"):
        runfolder.plan_script(plan, {"A B": 1})


def test_phase_seconds_come_from_the_plans_marks(tmp_path):
    (tmp_path / "phases").write_text("setup 2.50\nmeasure 12.75\n"
                                     "trace 23.00\ncollect 23.4")
    assert runfolder.phases(tmp_path, 2.0) == {
        "setup": 0.5, "measure": 10.25, "trace": 10.25, "collect": 0.4}
    (tmp_path / "phases").write_text("setup 2.5\nmeas")
    assert runfolder.phases(tmp_path, 2.0) == {"setup": 0.5}
    assert runfolder.phases(tmp_path / "none", 0) == {}
