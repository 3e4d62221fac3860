"""rtla timerlat's auto-analysis read back (lab/analyse/timerlat.py)."""
from lab.report import traces as report_traces
from lab.analyse import timerlat

# rtla 6.12 on the 6.1 baseline guest, long-block (stack trace left out)
HIT = """\
rtla timerlat hit stop tracing
## CPU 0 hit stop tracing, analyzing it ##
  IRQ handler delay:                                         0.00 us (0.00 %)
  IRQ latency:                                               4.96 us
  Timerlat IRQ duration:                                    91.42 us (1.94 %)
  Blocking thread:                                         347.74 us (7.37 %)
                       swapper/0:0                         347.74 us
  IRQ interference                                          40.26 us (0.85 %)
               local_timer:236                              32.10 us
      call_function_single:251                               8.15 us
  Softirq interference                                    4553.21 us (96.55 %)
                     BLOCK:4                              4553.21 us
------------------------------------------------------------------------
  Thread latency:                                         4715.84 us (100%)

Max timerlat IRQ latency from idle: 18.91 us in cpu 1
  Saving trace to timerlat_trace.txt
"""


def test_the_largest_part_is_the_cause_in_the_labs_words():
    r = timerlat.parse(HIT)
    assert r["hit"] and r["cpu"] == 0
    assert r["latency_us"] == 4715.84
    assert r["parts"]["Softirq interference"] == 4553.21
    assert r["sources"]["Softirq interference"] == "BLOCK"
    assert r["cause"] == "BLOCK softirq" and 0.96 < r["share"] < 0.97
    assert timerlat.agrees(r, "BLOCK softirq on the task's CPU")
    assert not timerlat.agrees(r, "hard irq on the task's CPU")
    assert report_traces.rtla_text(r) == "CPU0 4716 us, BLOCK softirq 97%"


def test_the_largest_source_names_the_cause_not_the_first():
    storm = HIT.replace(
        "                     BLOCK:4                              4553.21 us",
        "                        HI:0                               900.00 us\n"
        "                     BLOCK:4                              3653.21 us")
    assert timerlat.parse(storm)["cause"] == "BLOCK softirq"


def test_no_hit_and_a_failed_rtla_are_said():
    assert timerlat.parse("  0 #3000 | 7 4 7 34 |\n") == \
        {"hit": False, "error": ""}
    r = timerlat.parse("Could not enable timerlat tracer\n"
                       "rtla timerlat: exit 1\n")
    assert not r["hit"] and r["error"] == "rtla timerlat: exit 1"
    assert not timerlat.agrees(r, "BLOCK softirq on the task's CPU")


def test_a_thread_that_blocks_is_named():
    assert timerlat.cause("Blocking thread", "ksoftirqd/0") == \
        "softirq in ksoftirqd"
    assert timerlat.agrees({"hit": True, "cause": "softirq in ksoftirqd"},
                           "BLOCK softirq in ksoftirqd on the task's CPU")
    assert timerlat.cause("Thread interference", "kworker/0:1") == \
        "task kworker/0:1"



IRQ_STOP = """\
rtla timerlat hit stop tracing
## CPU 0 hit stop tracing, analyzing it ##
  IRQ handler delay:                                         0.00 us (0.00 %)
  IRQ latency:                                            4212.26 us
  Blocking thread:
                            rtla:125
------------------------------------------------------------------------
     IRQ latency:                                         4212.26 us (100%)

Max timerlat IRQ latency from idle: 5.28 us in cpu 0
"""


def test_a_stop_on_the_irq_is_the_whole_latency():
    """rtla from 6.12 on a 6.12 guest stopped on the timer IRQ itself
    (its threads in user space, no thread part): the lab once read that
    as 0 us."""
    r = timerlat.parse(IRQ_STOP)
    assert r["hit"] and r["cpu"] == 0
    assert r["latency_us"] == 4212.26 and r["cause"] == "IRQ latency"
    assert r["share"] == 1.0
