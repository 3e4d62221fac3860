"""A failed boot explained from its own console (lab/analyse/stalls.py):
the first stall, the CPU, task and softirq vector it blames, and the
whole console kept in the report's data/."""
import gzip
import json

from lab.analyse import stalls
from lab.report import publish
from lab.tests.test_matrix_report import fake_run

# zijlstra-6.12's 2-vCPU NIC flood (reports/2026-12-05-discussion-all-
# 5boots/set-aside/), cut to what the parser reads
SELF_DETECTED = """\
lab-init: 6.12.118-zijlstra-6.12 at /init after 6.12s with 2 CPUs
[   71.042406] rcu: INFO: rcu_preempt self-detected stall on CPU
[   71.042515] rcu: \t0-....: (1 GPs behind) idle=0fcc/1/0x40 softirq=432/432
[   71.042886] CPU: 0 UID: 0 PID: 14 Comm: ksoftirqd/0 Not tainted 6.12.118 #1
[   71.043076] RIP: 0010:try_fill_recv+0x432/0x870
[   71.043954] Call Trace:
[   71.043995]  virtnet_poll+0x3ac/0x640
[   71.044090]  __napi_poll+0x20/0x1b0
[   71.044160]  net_rx_action+0x164/0x290
[   71.044248]  handle_softirqs+0x135/0x350
[   71.044381]  run_ksoftirqd+0x18/0x20
[  129.062406] rcu: INFO: rcu_preempt self-detected stall on CPU
[  129.062707] CPU: 1 UID: 0 PID: 20 Comm: ksoftirqd/1 Not tainted
[  129.063494]  rcu_core+0x164/0x290
"""
OTHER_CPU = """\
[   29.100000] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:
[   29.100100] rcu: \t5-...!: (1 GPs behind) idle=c3a/1/0x40 softirq=12/13
[   29.100300] NMI backtrace for cpu 5
[   29.100400]  ? blk_done_softirq+0x20/0x40
"""


def test_the_first_stall_names_its_cpu_task_and_vector():
    assert stalls.first_stall(SELF_DETECTED) == {
        "line": "rcu: INFO: rcu_preempt self-detected stall on CPU",
        "at_s": 71.042406, "cpu": 0, "task": "ksoftirqd/0",
        "vector": "NET_RX", "handler": "net_rx_action"}
    other = stalls.first_stall(OTHER_CPU)
    assert (other["cpu"], other["task"], other["vector"]) == \
        (5, None, "BLOCK")
    assert stalls.first_stall("[ 1.0] all well\n") is None
    assert stalls.describe(stalls.first_stall(SELF_DETECTED)) == (
        "first stall at 71.0 s, CPU 0 (ksoftirqd/0), in NET_RX "
        "(net_rx_action): rcu: INFO: rcu_preempt self-detected stall on "
        "CPU")


# zijlstra-no-rcu-break's boot 2 in Qais Yousef's test at 8 vCPUs
# (reports/2026-12-07-zijlstra-family-8cpu-5boots/): the CPU was stopped
# in the handler itself, which only the RIP line names
IN_THE_HANDLER = """\
[   54.381752] rcu: INFO: rcu_preempt self-detected stall on CPU
[   54.381752] CPU: 0 PID: 11 Comm: ksoftirqd/0 Not tainted 6.1.192 #1
[   54.381752] RIP: 0010:net_rx_action+0x2f/0x230
[   54.381752] Call Trace:
[   54.381752]  <TASK>
[   54.381752]  ? __schedule+0x248/0x650
[   54.381752]  handle_softirqs+0x161/0x310
[   54.381752]  run_ksoftirqd+0x1a/0x20
"""


def test_a_stall_in_the_handler_itself_is_named_from_its_rip():
    stall = stalls.first_stall(IN_THE_HANDLER)
    assert (stall["cpu"], stall["vector"], stall["handler"]) == \
        (0, "NET_RX", "net_rx_action")


def test_a_failed_boots_whole_console_is_kept_and_its_stall_named(
        tmp_path):
    root, out = tmp_path / "res", tmp_path / "rep"
    for boot in (1, 2):
        fake_run(root, "baseline", "idle", boot, 40, 60, seed=boot)
    failed = fake_run(root, "baseline", "idle", 3, 40, 60, status="failed")
    (failed / "console.log").write_text(SELF_DETECTED)
    publish.write(root, out, {}, "test")
    kept = out / "data" / "baseline-idle-boot3.console.log.gz"
    assert gzip.decompress(kept.read_bytes()).decode() == SELF_DETECTED
    [f] = json.loads((out / "data" / "analysis.json").read_text())["failed"]
    assert f["stall"]["vector"] == "NET_RX" and \
        f["console"] == "data/baseline-idle-boot3.console.log.gz"
    text = " ".join((out / "report.txt").read_text().split())
    assert "first stall at 71.0 s, CPU 0 (ksoftirqd/0), in NET_RX" in text
    assert "its whole console: data/, the boot's .console.log.gz" in text
