"""Scenario mechanisms, in a guest: a short run of the real scenario file
through the local runner, asserting the mechanism the scenario exists
for (not a latency, which the matrix measures)."""
import json
import re

import pytest

from lab.run import matrix, runfolder, scenario
from lab.base import paths, store
from lab.analyse import results, trace
from lab.run.runners import local
from lab.tests.test_guest_module import by_name, initrd_for

pytestmark = pytest.mark.guest


def short(name: str, tmp_path, seconds: int = 3,
          extra: tuple = ()) -> scenario.Scenario:
    """common/scenarios/<name>.scenario, `seconds` long, no trace phase
    unless `extra` lines ask for one."""
    text = (scenario.SCENARIO_DIR / f"{name}.scenario").read_text()
    lines = [line for line in text.splitlines()
             if not line.startswith(("duration", "trace", "timerlat"))]
    path = tmp_path / f"{name}.scenario"
    path.write_text("\n".join(lines + [f"duration = {seconds}", *extra]) +
                    "\n")
    return scenario.parse(path)


def run_short(name, tmp_path, all_variants, built, accel, extra=(),
              seconds=3):
    v = by_name(all_variants, "baseline")
    cell = matrix.Cell(v, short(name, tmp_path, seconds, extra), 1)
    root = paths.BUILD_DIR / "test-runs" / "scenarios"
    record = local.run_cell(cell, built[v.name], initrd_for(v, built),
                            accel, root)
    assert record["status"] == "ok", record["reason"]
    return cell.folder(root)


def per_cpu(path, vector: str) -> list:
    """One vector's /proc/softirqs counts, per CPU."""
    for line in path.read_text().splitlines():
        if line.split()[0] == vector + ":":
            return [int(c) for c in line.split()[1:]]
    raise AssertionError(f"{vector} not in {path}")


@pytest.mark.host_alone
def test_nic_rx_runs_net_rx_from_the_virtio_driver(tmp_path, all_variants,
                                                   built, accel):
    """The host's frames reach udpsink through virtio-net's NAPI polls,
    which run in NET_RX on CPU0, where the receive interrupt is steered."""
    run_dir = run_short("nic-rx", tmp_path, all_variants, built, accel)
    got = {k: m["value"] for k, m in results.counter_metrics(run_dir).items()}
    sent = json.loads((run_dir / runfolder.NIC_SENT).read_text())
    before, after = (per_cpu(run_dir / f"softirqs-{w}", "NET_RX")
                     for w in ("before", "after"))
    net_rx = [a - b for a, b in zip(after, before)]
    print(f"nic-rx: {got}, NET_RX per CPU {net_rx}, host sent {sent}")
    assert got["nic_rx_kpps"] > 1 and got["nic_app_kpps"] > 1, got
    # every frame the driver took was polled in NET_RX on CPU0
    assert net_rx[0] > 1000 and net_rx[1] < net_rx[0] / 100, net_rx
    assert sent["sent"] >= got["nic_rx_kpps"] * 1000 * 3, sent
    # the receiver ran until the phases ended, then the plan stopped it
    # (its own bound is a day) and it reported what it read
    phases = dict(line.split() for line in
                  (run_dir / "phases").read_text().splitlines())
    assert float(phases["collect"]) - float(phases["measure"]) < 10, phases
    assert "datagrams " in (run_dir / "bg-0.log").read_text()


def test_net_noise_loads_every_phase(tmp_path, all_variants, built, accel):
    """The UDP flood and the block reads run from before cyclictest starts
    until the trace phase ends: the plan stops them then (a load that
    ended by itself would fail the run).  Their work over the measurement
    comes from the kernel's counters, and the trace phase, which ends
    later, still sees NET_RX (loopback's backlog) and BLOCK softirqs in
    its last second."""
    run_dir = run_short("net-noise", tmp_path, all_variants, built, accel,
                        extra=("trace = 100",))
    got = {k: m["value"] for k, m in results.counter_metrics(run_dir).items()}
    print(f"net-noise: {got}")
    assert got["udp_rx_mbit_s"] > 10 and got["block_read_mb_s"] > 10, got
    events = trace.parse(trace.report_text(run_dir / "trace.dat"))
    last = events[-1].ts
    late = {e.args.get("vec") for e in events
            if e.name == "softirq_entry" and e.ts > last - 1}
    assert {"NET_RX", "BLOCK"} <= late, late


def cyclictest_cycles(run_dir) -> list:
    ct = json.loads((run_dir / "cyclictest.json").read_text())
    return [ct["thread"][str(t)]["cycles"] for t in range(ct["num_threads"])]


def test_cover_letter_staggers_threads_under_fs_noise(tmp_path,
                                                      all_variants, built,
                                                      accel):
    """One cyclictest thread per CPU, the second's interval 500 us longer
    (-i 1000 -d 500), while the filesystem noise writes to the scratch
    disk and its completions raise BLOCK softirqs."""
    run_dir = run_short("cover-letter", tmp_path, all_variants, built, accel)
    cycles = cyclictest_cycles(run_dir)
    got = {k: m["value"] for k, m in results.counter_metrics(run_dir).items()}
    blocks = [a - b for a, b in zip(
        *(per_cpu(run_dir / f"softirqs-{w}", "BLOCK")
          for w in ("after", "before")))]
    print(f"cover-letter: cycles {cycles}, {got}, BLOCK per CPU {blocks}")
    intervals = [int(m) for m in re.findall(
        r"^T:.* I:\s*(\d+)", (run_dir / "cyclictest.out").read_text(), re.M)]
    # The busy guest may skip a period now and then, so the cycle counts
    # only have to show that both threads kept running.
    assert intervals == [1000, 1500], intervals
    assert len(cycles) == 2 and min(cycles) > 1000, cycles
    assert got["block_write_mb_s"] > 1 and sum(blocks) > 20, (got, blocks)


def test_qais_runs_three_threads_under_udp_and_block_load(tmp_path,
                                                          all_variants,
                                                          built, accel):
    """Qais Yousef's test: cyclictest -t 3, the loopback UDP flood and
    the block reads both moving data over the measurement."""
    run_dir = run_short("qais", tmp_path, all_variants, built, accel)
    cycles = cyclictest_cycles(run_dir)
    got = {k: m["value"] for k, m in results.counter_metrics(run_dir).items()}
    print(f"qais: cycles {cycles}, {got}")
    assert len(cycles) == 3 and min(cycles) > 1000, cycles
    assert got["udp_rx_mbit_s"] > 10 and got["block_read_mb_s"] > 10, got


def test_rt_busy_hog_owns_cpu0(tmp_path, all_variants, built, accel):
    """rt-busy's FIFO 49 hog is CPU0's current task: on baseline the
    module's BLOCK handler runs inline on top of an RT task, and when it
    is left to ksoftirqd (SCHED_OTHER) it waits behind the hog, up to RT
    throttling's window, far longer than the 20 ms period."""
    run_dir = run_short("rt-busy", tmp_path, all_variants, built, accel)
    got = {k: m["value"] for k, m in results.module_metrics(
        run_dir, results.measured_seconds(run_dir)).items()}
    print(f"rt-busy: {got}")
    assert got["softirq_over_rt_percent"] > 10, got
    assert got["softirq_wait_max_us"] > 100_000, got


def test_a_four_cpu_scenario_boots_a_four_cpu_guest(tmp_path, all_variants,
                                                    built, accel):
    """cpus = 4 reaches QEMU, the guest brings all four CPUs online
    before the plan (under icount it boots with one), and a background
    command sees the guest's size as $CPUS."""
    run_dir = run_short("null-hog-4cpu", tmp_path, all_variants, built,
                        accel, extra=(
                            "background = echo cpus $CPUS online "
                            "$(cat /sys/devices/system/cpu/online); "
                            "sleep $DURATION",))
    record = store.read_json(run_dir / "run.json")
    assert record["cpus"] == 4 and record["memory_mb"] == 1024
    assert "-smp 4 " in record["qemu"]["command"]
    assert (run_dir / "bg-1.log").read_text().split() == \
        ["cpus", "4", "online", "0-3"]
    # the hogs stayed on CPUs 1-3, cyclictest pinned to CPU0 as asked
    assert results.summarize(run_dir)["affinity"]["as_asked"]


def test_eight_threads_are_set_free_early_in_an_eight_cpu_guest(
        tmp_path, all_variants, built, accel):
    """The cover letter's 8 threads at 8 vCPUs under filesystem noise are
    set free (their affinity widened) early in the run, so most of their
    samples count.  Counting each thread's samples at that moment once
    read to cyclictest's end (awk read slower than 8 threads printed),
    and every sample of stultz-v5's 5 boots was dropped."""
    run_dir = run_short("cover-letter-8cpu", tmp_path, all_variants, built,
                        accel, seconds=8)
    summary = results.summarize(run_dir)
    threads = summary["cyclictest_threads"]
    print("cover-letter-8cpu, kept of cycles per thread: " + ", ".join(
        f"{t['kept']}/{t['cycles']}" for t in threads.values()))
    assert len(threads) == 8
    assert all(t["kept"] > t["cycles"] / 2 for t in threads.values()), \
        threads
    assert summary["affinity"]["as_asked"]


def test_dev_block_gets_long_block_softirqs_from_the_driver(
        tmp_path, all_variants, built, accel):
    """With no test module loaded, blkbatch's batched completions on the
    virtio disk make BLOCK handler runs of over a millisecond (baseline's
    traced 10 s in reports/2026-12-05-scale-5boots/: p50 343 us, max 4.3
    ms, 138 of 7311 runs over 1 ms)."""
    run_dir = run_short("dev-block", tmp_path, all_variants, built, accel,
                        extra=("trace = 100",))
    assert not (run_dir / "module-stats-measured").exists()
    block = results.summarize(run_dir)["trace"]["softirqs"]["handler_us"][
        "BLOCK"]
    print(f"dev-block: BLOCK handler runs {block}")
    assert block["runs"] > 100 and block["over_1ms"] >= 1, block
    assert "batches " in (run_dir / "bg-0.log").read_text()
