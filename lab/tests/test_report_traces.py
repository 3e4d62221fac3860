"""The report's trace part."""
from lab.report import traces as report_traces


def test_the_report_counts_traced_runs_that_agree():
    t = {"fs/a": {"agreed": 2, "mismatched": []},
         "fs/b": {"agreed": 1, "mismatched": ["boot 2: 5 windows, 9 "
                                              "samples"]}}
    line = " ".join(report_traces.agreement_line(t))
    assert line.startswith("Traces agree with cyclictest in 3 of 4 traced "
                           "runs (windows")
    # exact counts of the samples outside their windows
    t["fs/a"]["outside"] = [(0, 900), (3, 1000)]
    t["fs/b"]["outside"] = [(8, 500)]
    line = " ".join(x.strip() for x in report_traces.agreement_line(t))
    assert "in 3 of 4 traced runs; 1 of them with every sample inside " \
        "its window, 2 with 3-8 outside (11 of 1500 samples)" in line


def test_an_explanation_names_its_boot_and_whether_tracing_changed_it():
    c = {"boot_p99": {1: [32.0, 77.0], 2: [40.0, 44.0]}}
    assert report_traces.traced_from(c, 2) == \
        "boot 2, trace phase, p99 44 traced against 40 measured"
    assert report_traces.traced_from(c, 1).endswith(
        "p99 77 traced against 32 measured: from a run the trace changed")
    assert report_traces.agreement_line({"fs/a": {"agreed": 0,
                                                  "mismatched": []}}) == []


def test_accounting_averages_boots_and_leaves_out_small_vectors():
    boot = {"seconds": 10.0, "ksoftirqd_wakeups": 100, "stopped_early": 40,
            "handed_over": {"NET_RX": 30, "TIMER": 2},
            "cyclictest_cpu_percent": {"0": 100.0},
            "cpu_percent": {"NET_RX": {"inline": 40.0, "ksoftirqd": 10.0},
                            "TIMER": {"inline": 0.1, "ksoftirqd": 0.0}}}
    other = dict(boot, ksoftirqd_wakeups=300, stopped_early=0,
                 handed_over={}, cyclictest_cpu_percent={"0": 50.0,
                                                          "1": 50.0},
                 cpu_percent={
        "NET_RX": {"inline": 20.0, "ksoftirqd": 30.0}})
    a = report_traces.mean_accounting([boot, other])
    assert a["cpu_percent"]["NET_RX"] == {"inline": 30.0, "ksoftirqd": 20.0}
    assert a["ksoftirqd_wakeups_per_s"] == 20.0
    rows = report_traces.accounting_table({"nic/base": {"softirqs": a}},
                                          ["base"], ["nic"])
    assert "NET_RX inline %" in rows[2] and "TIMER" not in rows[2]
    assert a["stopped_early_per_s"] == 2.0
    assert a["handed_over_per_s"] == {"NET_RX": 1.5, "TIMER": 0.1}
    assert a["cyclictest_cpu_percent"] == {"0": 75.0, "1": 25.0}
    assert rows[4] == "| base | 2 | 30.0 | 20.0 | 20 | 2 | NET_RX 2 | 75 |"


def test_net_rx_end_reasons_add_up_over_traced_boots():
    ends = {"runs": 10, "drained": 1, "packet_budget": 0, "wakeup": 7,
            "time": 2}
    boot = {"seconds": 10.0, "ksoftirqd_wakeups": 0, "cpu_percent": {},
            "net_rx_ends": ends}
    a = report_traces.mean_accounting([boot, dict(boot, net_rx_ends=dict(
        ends, runs=5, drained=5, wakeup=0, time=0))])
    assert a["net_rx_ends"] == {"runs": 15, "drained": 6,
                                "packet_budget": 0, "wakeup": 7, "time": 2}
    quiet = report_traces.mean_accounting([dict(boot, net_rx_ends={})])
    rows = report_traces.net_rx_ends_table(
        {"nic/base": {"softirqs": a}, "idle/base": {"softirqs": quiet}},
        ["base"], ["idle", "nic"])
    assert rows[0] == "nic:" and rows[4] == "| base | 2 | 15 | 6 | 0 | 7 | 2 |"
    assert len(rows) == 6


def test_napi_polls_add_up_and_show_only_where_they_moved():
    boot = {"seconds": 10.0, "ksoftirqd_wakeups": 0, "cpu_percent": {},
            "napi_polls": {"polls": 4, "in_threads": 4,
                           "cpus": {"0": 1, "1": 3}}}
    threaded = report_traces.mean_accounting([boot, boot])
    assert threaded["napi_polls"] == {"polls": 8, "in_threads": 8,
                                      "cpus": {"0": 2, "1": 6}}
    plain = report_traces.mean_accounting([dict(boot, napi_polls={
        "polls": 5, "in_threads": 0, "cpus": {"0": 5}})])
    cells = {"nic/threaded": {"softirqs": threaded},
             "nic/plain": {"softirqs": plain},
             "idle/plain": {"softirqs": plain}}
    rows = report_traces.napi_polls_table(cells, ["plain", "threaded"],
                                          ["idle", "nic"])
    assert rows[0] == "nic:" and rows[4] == "| plain | 1 | 5 | 0 | 100 | 0 |"
    assert rows[5] == "| threaded | 2 | 8 | 100 | 25 | 75 |"
    # NET_RX on one CPU only, as every kernel without threaded NAPI
    assert report_traces.napi_polls_table(cells, ["plain"], ["nic"]) == []


def test_accounting_table_without_a_vector_has_no_empty_column():
    a = report_traces.mean_accounting([{
        "seconds": 10.0, "ksoftirqd_wakeups": 0,
        "cpu_percent": {"TIMER": {"inline": 0.1, "ksoftirqd": 0.0}}}])
    rows = report_traces.accounting_table({"idle/base": {"softirqs": a}},
                                          ["base"], ["idle"])
    assert rows[2] == ("| variant | boots | ksoftirqd wake-ups/s | "
                       "stopped early/s | handed over/s | "
                       "cyclictest on CPU0 % |")
    assert rows[4] == "| base | 1 | 0 | 0 | - | - |"


def test_handler_lengths_stand_beside_the_modules_spin():
    """The table shows how long the kernel's own handlers ran, next to
    the module's fixed spin; short vectors are left out."""
    boot = {"handler_us": {
        "BLOCK": {"runs": 40, "p50": 300.0, "p99": 1800.0, "max": 2400.0,
                  "over_1ms": 3},
        "TIMER": {"runs": 900, "p50": 5.0, "p99": 30.0, "max": 60.0,
                  "over_1ms": 0}}}
    merged = report_traces.merged_lengths([boot, boot])
    assert merged["BLOCK"] == {"runs": 80, "p50": 300.0, "p99": 1800.0,
                               "max": 2400.0, "over_1ms": 6}
    t = {"dev/baseline": {"softirqs": {"handler_us": merged}},
         "long/baseline": {"softirqs": {"handler_us": merged}}}
    table = report_traces.handler_table(
        t, ["baseline"], ["dev", "long"],
        {"long": "vector=block spin_us=5000 cpu=0"})
    assert table[0] == "dev (no test module: every handler is the " \
        "kernel's own):"
    assert "| baseline | BLOCK | 80 | 300 | 1800 | 2400 | 6 |" in table
    assert not any("TIMER" in line for line in table)
    assert "long (the module spins 5000 us a run):" in table
