"""Overload curves from a NIC sweep's runs."""
from lab.report import sweeps as report_sweeps
from lab.analyse import results
from lab.run import runfolder


def run(var, rate, boot, offered, read, rx=None):
    return {"status": "ok", "variant": var, "boot": boot,
            "scenario": f"sweep-{rate}", "sweep_of": "sweep",
            "nic_offered": {"asked_pps": rate, "host_kpps": offered,
                            "guest_kpps": offered},
            "metrics": {"nic_app_kpps": {"value": read},
                        "nic_rx_kpps": {"value": rx or read},
                        "nic_rcvbuf_drop_percent": {"value": 0.0}}}


def test_a_receiver_that_falls_off_an_edge_is_named(tmp_path):
    runs = []
    for boot in (1, 2, 3):
        for rate, offered, holds, falls in ((10, 10, 10, 10),
                                            (20, 20, 20, 19),
                                            (40, 40, 24, 12),
                                            (80, 79 + boot, 24, 3)):
            runs.append(run("base", rate, boot, offered, holds + boot / 10))
            runs.append(run("other", rate, boot, offered, falls))
    runs.append(dict(run("base", 10, 9, 10, 999), status="failed"))
    sweeps = report_sweeps.analyse(runs)
    base = sweeps["sweep"]["base"]
    assert [p["offered_kpps"] for p in base] == [10, 20, 40, 81]
    assert [p["boots"] for p in base] == [3, 3, 3, 3]   # failed left out
    s = report_sweeps.shape(sweeps["sweep"]["other"])
    assert (s["peak_kpps"], s["peak_at_kpps"], s["end_kpps"]) == (19, 20, 3)
    assert s["falls"]
    assert not report_sweeps.shape(base)["falls"]
    text = " ".join(" ".join(report_sweeps.text(sweeps, ["base", "other"]))
                    .split())
    assert "base: peaks at 24.2 kpps read with 40 kpps offered; at 81 " \
        "kpps offered it holds at 24.2 kpps." in text
    assert "other: peaks at 19 kpps read with 20 kpps offered; at 81 kpps " \
        "offered it falls to 3 kpps (16% of its peak)." in text
    assert report_sweeps.plots(sweeps, ["base", "other"], tmp_path) == \
        ["overload-sweep.png"]
    assert (tmp_path / "overload-sweep.png").stat().st_size > 1000


def test_runs_without_a_sweep_make_no_curve():
    r = run("base", 10, 1, 10, 10)
    r["sweep_of"] = ""
    assert report_sweeps.analyse([r]) == {}


def test_the_offered_rate_is_per_guest_second_of_the_whole_run(tmp_path):
    """The sender paces in host time; the x of a curve is what it sent
    per guest second, boot and every phase included."""
    (tmp_path / runfolder.NIC_SENT).write_text(
        '{"sent": 600000, "seconds": 30.0, "rate": 20000}\n')
    record = {"boot_to_init_s": 2.0,
              "phases_s": {"setup": 1.0, "measure": 10.0, "collect": 7.0}}
    got = results.nic_offered(tmp_path, record)
    assert got == {"asked_pps": 20000, "host_kpps": 20.0, "guest_kpps": 30.0}
    assert results.nic_offered(tmp_path / "none", record) == {}
