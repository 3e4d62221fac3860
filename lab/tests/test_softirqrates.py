"""Why a kernel stalls under a flood, from what it ran: each CPU's
softirq rates through the run (lab/analyse/softirqrates.py) and why each
NET_RX run ended (lab/analyse/trace.py net_rx_ends)."""
import pytest

from lab.analyse import softirqrates, trace
from lab.base.log import LabError
from lab.run import scenario

HEADER = ("10:00:01     CPU       HI/s    TIMER/s   NET_TX/s   NET_RX/s    "
          "BLOCK/s IRQ_POLL/s  TASKLET/s    SCHED/s  HRTIMER/s      RCU/s")


def row(stamp, cpu, net_rx, rcu):
    return (f"{stamp}       {cpu}       0.00      43.00       0.00  "
            f"{net_rx:9.2f}       0.00       0.00       0.00      42.00"
            f"       0.00  {rcu:9.2f}")


def mpstat(rows):
    """softirq-rates as the guest plan writes it: the uptime, then
    mpstat -I SCPU 1's output, with its averages."""
    return "\n".join(["uptime 8.50",
                      "Linux 6.1.192-zijlstra (lab) \t12/07/26 \t_x86_64_"
                      "\t(2 CPU)", "", HEADER, *rows,
                      "Average:       0       0.00      61.50       0.00"
                      "       0.00       0.00       0.00       0.00      "
                      "37.00       0.00     190.50"]) + "\n"


# CPU0 takes the flood; its RCU softirqs stop in the second second and
# come back in the fifth; CPU1 has no NET_RX and no RCU in the third.
FLOOD = mpstat([row(f"10:00:0{k + 2}", cpu, nr, rcu)
                for k, pairs in enumerate([((500, 12), (0, 108)),
                                           ((600, 0), (0, 84)),
                                           ((600, 0), (0, 0)),
                                           ((650, 0), (0, 90)),
                                           ((640, 9), (0, 80))])
                for cpu, (nr, rcu) in enumerate(pairs)])


def test_rates_are_read_per_cpu_and_vector():
    r = softirqrates.parse(FLOOD)
    assert r["start_s"] == 8.5 and r["interval_s"] == 1.0
    assert r["vectors"][3] == "NET_RX" and r["vectors"][-1] == "RCU"
    assert r["cpus"]["0"]["NET_RX"] == [500, 600, 600, 650, 640]
    assert r["cpus"]["0"]["RCU"] == [12, 0, 0, 0, 9]   # no Average: row
    assert r["cpus"]["1"]["RCU"] == [108, 84, 0, 90, 80]


def test_starvation_is_where_net_rx_ran_and_rcu_did_not():
    s = softirqrates.starved(softirqrates.parse(FLOOD))
    # CPU1's silent second had no NET_RX: not starvation
    assert s == {"vector": "RCU", "by": "NET_RX", "cpu": "0",
                 "seconds": 3.0, "from_s": 9.5, "to_s": 12.5}
    assert softirqrates.describe(s) == (
        "no RCU softirq on CPU0 for 3 s (9.5-12.5 s after boot) while "
        "NET_RX ran there")


def test_a_kernel_that_keeps_rcu_running_has_no_stretch():
    r = softirqrates.parse(mpstat([row("10:00:02", 0, 500, 3),
                                   row("10:00:03", 0, 600, 1)]))
    s = softirqrates.starved(r)
    assert s["seconds"] == 0
    assert "ran in every sample" in softirqrates.describe(s)


def test_the_interval_comes_from_the_stamps():
    r = softirqrates.parse(mpstat([row(f"10:00:{k:02d}", 0, 500, 0)
                                   for k in (2, 4, 6)]))
    assert r["interval_s"] == 2.0
    assert softirqrates.starved(r)["seconds"] == 6.0


@pytest.mark.parametrize("text, why", [
    ("", "first line is not 'uptime"),
    ("uptime 3.0\nmpstat: command not found\n", "no mpstat -I SCPU header"),
    ("uptime 3.0\n" + HEADER + "\n10:00:02 0 a b c d e f g h i j\n",
     "not a line of rates"),
])
def test_a_file_that_is_not_the_plans_is_named(text, why, tmp_path):
    (tmp_path / "softirq-rates").write_text(text)
    with pytest.raises(LabError, match=why) as e:
        softirqrates.read(tmp_path)
    assert str(tmp_path / "softirq-rates") in str(e.value)


def test_a_run_that_sampled_nothing_has_no_rates(tmp_path):
    assert softirqrates.read(tmp_path) is None


def test_the_scenario_key_reaches_the_plan_only_where_set(tmp_path):
    p = tmp_path / "flood.scenario"
    p.write_text("description = d\nduration = 40\nsoftirq_rates = 1\n")
    assert scenario.parse(p).plan_env()["SOFTIRQ_RATES"] == 1
    p.write_text("description = d\nduration = 40\n")
    assert "SOFTIRQ_RATES" not in scenario.parse(p).plan_env()
    p.write_text("description = d\nduration = 40\nsoftirq_rates = 0\n")
    with pytest.raises(LabError, match=r"flood.scenario:3: softirq_rates "
                       r"must be a whole number from 1 to 60"):
        scenario.parse(p)


def ev(ts, cpu, name, **args):
    return trace.Event(ts, cpu, "ksoftirqd/0", 14, name, args)


def net_rx_run(t, cpu, polls, raised=False, woke=False, raise_in_irq=False):
    """One NET_RX run on `cpu` from `t`: NAPI polls of `polls` packets,
    a raise of NET_RX by itself or by a nested interrupt, a wake-up."""
    out = [ev(t, cpu, "softirq_entry", vec="NET_RX")]
    out += [ev(t + 1e-5 * (k + 1), cpu, "napi_poll", work=w, budget=64)
            for k, w in enumerate(polls)]
    if raise_in_irq:
        out += [ev(t + 5e-4, cpu, "irq_handler_entry", irq="11"),
                ev(t + 5.1e-4, cpu, "softirq_raise", vec="NET_RX"),
                ev(t + 5.2e-4, cpu, "irq_handler_exit", irq="11")]
    if woke:
        out.append(ev(t + 6e-4, cpu, "sched_waking", target_cpu="000"))
    if raised:
        out.append(ev(t + 9e-4, cpu, "softirq_raise", vec="NET_RX"))
    return out + [ev(t + 1e-3, cpu, "softirq_exit", vec="NET_RX")]


def test_each_net_rx_run_ends_for_one_reason():
    events = (net_rx_run(1.0, 0, [64] * 5, raised=True)       # 320 packets
              + net_rx_run(1.01, 0, [64, 10], raised=True)     # time
              + net_rx_run(1.02, 0, [64], raised=True, woke=True)
              + net_rx_run(1.03, 0, [5], raise_in_irq=True)    # drained
              + net_rx_run(1.04, 1, [64, 64], raised=True,     # a wake-up
                           woke=False)
              + [ev(1.0405, 1, "sched_waking", target_cpu="000")])
    assert trace.net_rx_ends(sorted(events, key=lambda e: e.ts)) == {
        "runs": 5, "drained": 1, "packet_budget": 1, "wakeup": 1,
        "time": 2}


def test_napi_poll_lines_give_their_packets():
    line = ("     ksoftirqd/0-14    [000]   100.000100: napi_poll:            "
            "napi poll on napi struct 0xffff88800a2b0010 for device eth0 "
            "work 64 budget 64")
    (e,) = trace.parse(line)
    assert e.name == "napi_poll" and e.args == {"work": 64, "budget": 64}
