"""Scenario files: parsing, and errors that name the file and line."""
import pytest

from lab.run import scenario
from lab.base.log import LabError


def write(tmp_path, text, name="s.scenario"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_full_scenario(tmp_path):
    s = scenario.parse(write(tmp_path, """\
# comment
description = a test load
duration = 20
cyclictest = -t 2 -p 99 -i 500
module = vector=block spin_us=5000 period_us=20000 cpu=0
background = stress-ng --cpu 1
background = lab-fsnoise $DURATION /mnt/disk
disk = 64
probe = -n 10 -c 0
probe_module = vector=block cpu=0
"""))
    assert (s.name, s.duration, s.disk) == ("s", 20, 64)
    assert s.background == ["stress-ng --cpu 1",
                            "lab-fsnoise $DURATION /mnt/disk"]
    env = s.plan_env()
    assert env["NBACKGROUND"] == 2 and env["BACKGROUND_1"].startswith("lab-")
    assert env["CYCLICTEST"] == "-t 2 -p 99 -i 500"


def test_defaults(tmp_path):
    s = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"))
    assert s.cyclictest == "-t 1 -p 99 -i 1000" and s.background == []
    assert s.disk == 0 and s.module == ""


@pytest.mark.parametrize("text, line, words", [
    ("description = x\nduration = 5\nfoo = 1\n", 3, "unknown key 'foo'"),
    ("description = x\nduration = five\n", 2, "whole number from 1"),
    ("description = x\nduration = 5\nduration = 6\n", 3,
     "already set on line 2"),
    ("description = x\nduration = 5\njust words\n", 3, "expected 'key = "),
    ("description = x\nduration = 5\nmodule = vector=block bogus=1\n", 3,
     "'bogus=1' is not a softirq_load parameter"),
    ("description = x\nduration = 5\ncyclictest = -t 1 -a 0\n", 3,
     "-a is set by the lab"),
    ("description = x\nduration = 5\ncyclictest = -t 1 --json=x\n", 3,
     "--json is set by the lab"),
    ("description = x\nduration = 5\ncyclictest = -t 1 -a0\n", 3,
     "-a is set by the lab"),
    ("description = x\nduration = 5\ncyclictest = -t1 -D5\n", 3,
     "-D is set by the lab"),
    # options bundled as getopt reads them (issue 53: -Ma is -M -a)
    ("description = x\nduration = 5\ncyclictest = -t 1 -Ma\n", 3,
     "-a is set by the lab"),
    ("description = x\nduration = 5\ncyclictest = -t 1 -rh100\n", 3,
     "-h is set by the lab"),
    ("description = x\nduration = 5\ncyclictest = -t 1 -Mz\n", 3,
     "-z is not an option"),
    ("description = x\nduration = 5\ncyclictest = -t 1 -d \u00b2\n", 3,
     "is not ASCII"),
    ("description = x\nduration = 5\ndisk = 1\n", 3, "from 16 to 65536"),
    ("description = x\nduration = 5\ncyclictest = -t 1 -z 3\n", 3,
     "-z is not an option of the guest's cyclictest"),
    ("description = x\nduration = 5\ncyclictest = -t 1 --intervall=5\n",
     3, "--intervall is not an option"),
    ("description =\nduration = 5\n", 1, "description has no value"),
    # digits of other scripts are digits to str.isdigit, not to int()
    # (issue 53: a ValueError stopped every command that read scenarios)
    ("description = x\nduration = \u00b2\n", 2, "whole number from 1"),
    ("description = x\nduration = \u0663\n", 2, "whole number from 1"),
    ("description = x\nduration = 5\nnic = 1\u00b2\n", 3,
     "nic must be packets per second"),
])
def test_errors_name_file_and_line(tmp_path, text, line, words):
    p = write(tmp_path, text)
    with pytest.raises(LabError) as e:
        scenario.parse(p)
    assert str(e.value).startswith(f"{p}:{line}: ")
    assert words in str(e.value)


def test_missing_required_key(tmp_path):
    p = write(tmp_path, "description = x\n")
    with pytest.raises(LabError, match=r"missing 'duration = \.\.\.'"):
        scenario.parse(p)


def test_probe_needs_its_module(tmp_path):
    p = write(tmp_path, "description = x\nduration = 5\nprobe = -n 1\n")
    with pytest.raises(LabError, match="probe and probe_module go together"):
        scenario.parse(p)


def test_bad_name(tmp_path):
    with pytest.raises(LabError, match="scenario name"):
        scenario.parse(write(tmp_path, "description = x\nduration = 1\n",
                             name="Bad_Name.scenario"))


def test_repository_scenarios_parse():
    names = {s.name for s in scenario.discover()}
    assert {"idle", "fs-noise", "net-noise", "long-block", "short-storm",
            "all-busy", "cost"} <= names


def test_select_unknown(tmp_path):
    write(tmp_path, "description = x\nduration = 1\n", "a.scenario")
    with pytest.raises(LabError, match="unknown scenario 'b'; known: a"):
        scenario.select("b", tmp_path)


def test_append_takes_plain_kernel_parameters(tmp_path):
    s = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                                       "append = idle=poll nohz=off\n"))
    assert s.append == "idle=poll nohz=off"
    bad = write(tmp_path, "description = x\nduration = 5\n"
                          "append = console=tty0\n", "bad.scenario")
    with pytest.raises(LabError, match=r"bad\.scenario:3: append: "
                                       r"'console=tty0' is set by the lab"):
        scenario.parse(bad)


def test_select_mixes_names_and_files(tmp_path):
    root = tmp_path / "scenarios"
    root.mkdir()
    write(root, "description = a\nduration = 5\n", "a.scenario")
    mine = write(tmp_path, "description = mine\nduration = 3\n",
                 "mine.scenario")
    chosen = scenario.select(f"{mine},a", root)
    assert [s.name for s in chosen] == ["mine", "a"]
    with pytest.raises(LabError, match=r"scenario file .*nope\.scenario "
                                       r"not found"):
        scenario.select(str(tmp_path / "nope.scenario"), root)


def test_pinned_threads_and_a_random_phase_per_boot(tmp_path):
    s = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "pin = 1\nmodule = vector=block period_us="
                             "10000\ntrace = 100\ntimerlat = 1000\n"
                             "probe = -n 1\nprobe_module = vector=block\n"))
    env = s.plan_env(seed=7)
    assert env["TRACE"] and env["TIMERLAT"] and env["PROBE_ARGS"]
    assert env["PIN"] == 1 and env["PHASE_SEED"] == 7
    assert 0 <= env["PHASE_US"] < 10000 and 0 <= env["BG_PHASE_US"] < 10000
    assert s.plan_env(seed=7) == env                  # the seed decides
    assert s.plan_env(seed=8)["PHASE_US"] != env["PHASE_US"]
    later = s.plan_env(seed=7, explained=False)
    assert later["TRACE"] == later["TIMERLAT"] == later["PROBE_ARGS"] == ""
    free = scenario.parse(write(tmp_path, "description = x\nduration = 5\n",
                                "f.scenario")).plan_env()
    assert free["PIN"] == "" and "PHASE_US" not in free
    with pytest.raises(LabError, match=r"s.scenario:3: pin must be a whole "
                                       r"number from 0 to 7"):
        scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "pin = 8\n"))


def test_a_trace_phase_shorter_than_the_measurement(tmp_path):
    s = scenario.parse(write(tmp_path, "description = x\nduration = 60\n"
                             "trace = 100\ntrace_duration = 10\n"))
    assert s.plan_env()["TRACE_DURATION"] == 10
    plain = scenario.parse(write(tmp_path, "description = x\nduration = 60"
                                 "\ntrace = 100\n", "p.scenario"))
    assert plain.plan_env()["TRACE_DURATION"] == 60
    with pytest.raises(LabError, match=r"s.scenario:3: trace_duration "
                                       r"without trace"):
        scenario.parse(write(tmp_path, "description = x\nduration = 60\n"
                             "trace_duration = 10\n"))


def test_both_busy_is_yes_or_no(tmp_path):
    s = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "both_busy = yes\n"))
    assert s.both_busy
    with pytest.raises(LabError, match=r"s.scenario:3: both_busy must be "
                                       r"yes or no"):
        scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "both_busy = 2\n"))


def test_threads_placed_as_the_scenario_asked(tmp_path):
    from lab.analyse import results
    (tmp_path / "affinity.txt").write_text("41 0\n42 0\n")
    assert results.affinity(tmp_path, 0)["as_asked"]
    assert not results.affinity(tmp_path, "")["as_asked"]
    (tmp_path / "affinity.txt").write_text("41 0-1\n42 0-1\n")
    assert results.affinity(tmp_path, "")["as_asked"]
    assert not results.affinity(tmp_path, 0)["as_asked"]


def test_a_scenario_can_stay_out_of_the_default_matrix(tmp_path):
    (tmp_path / "a.scenario").write_text("description = a\nduration = 1\n")
    (tmp_path / "b.scenario").write_text(
        "description = b\nduration = 1\ndefault = no\n")
    assert [s.name for s in scenario.select("", tmp_path)] == ["a"]
    assert [s.name for s in scenario.select("all", tmp_path)] == ["a", "b"]
    assert [s.name for s in scenario.select("b", tmp_path)] == ["b"]
    (tmp_path / "c.scenario").write_text(
        "description = c\nduration = 1\ndefault = maybe\n")
    with pytest.raises(LabError, match=r"c.scenario:3: default must be yes "
                       r"or no"):
        scenario.select("c", tmp_path)


def test_a_nic_is_a_rate_or_flood_and_runs_alone(tmp_path):
    base = "description = x\nduration = 5\n"
    assert scenario.parse(write(tmp_path, base)).nic is None
    assert not scenario.parse(write(tmp_path, base)).alone
    flood = scenario.parse(write(tmp_path, base + "nic = flood\n"))
    assert flood.nic == 0 and flood.alone
    assert scenario.parse(write(tmp_path, base + "nic = 5000\n")).nic == 5000
    with pytest.raises(LabError, match=r"s.scenario:3: nic must be packets "
                                       r"per second"):
        scenario.parse(write(tmp_path, base + "nic = fast\n"))



def test_a_guest_size_of_up_to_eight_cpus(tmp_path):
    s = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"))
    assert (s.cpus, s.memory) == (2, 1024)
    s = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "cpus = 8\nmemory = 2048\npin = 7\n"))
    assert (s.cpus, s.memory, s.pin) == (8, 2048, 7)
    with pytest.raises(LabError, match=r"s.scenario:3: cpus must be a "
                       r"whole number from 1 to 8, got '16'"):
        scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "cpus = 16\n"))
    # pin names a CPU the guest has
    with pytest.raises(LabError, match=r"s.scenario:3: pin = 2, but the "
                       r"guest has 2 CPUs"):
        scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "pin = 2\n"))


def test_a_scenario_leads_with_a_latency_metric(tmp_path):
    s = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"))
    assert s.lead == "p99"
    s = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "lead = max\n"))
    assert s.lead == "max"
    with pytest.raises(LabError, match=r"s.scenario:3: lead must be a "
                       r"latency metric of lab/base/metrics.py \(p50, p99, "):
        scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "lead = missed\n"))


def test_a_nic_sweep_is_one_scenario_per_rate(tmp_path):
    root = tmp_path / "scen"
    root.mkdir()
    write(root, "description = x\nduration = 5\nnic = 10000 2500 flood\n"
          "default = no\n", "sweep.scenario")
    every = scenario.discover(root)
    assert [(s.name, s.nic, s.sweep_of) for s in every] == [
        ("sweep-10k", 10000, "sweep"), ("sweep-2500", 2500, "sweep"),
        ("sweep-flood", 0, "sweep")]
    assert len({s.digest for s in every}) == 3
    assert all(s.alone for s in every)
    # the sweep's name selects every rate; a rate's name, that one
    assert [s.name for s in scenario.select("sweep", root)] == \
        [s.name for s in every]
    assert [s.name for s in scenario.select("sweep-flood", root)] == \
        ["sweep-flood"]
    with pytest.raises(LabError, match=r"sweep.scenario:3: nic names a "
                       r"rate twice"):
        scenario.parse(write(root, "description = x\nduration = 5\n"
                             "nic = 100 100\n", "sweep.scenario"))


def test_a_list_of_separators_is_an_error_and_twice_is_once(tmp_path,
                                                             capsys):
    root = tmp_path / "scen"
    root.mkdir()
    for name in ("idle", "busy"):
        write(root, "description = x\nduration = 5\n", f"{name}.scenario")
    with pytest.raises(LabError, match=r"the scenario list ',' names no "
                       r"scenario"):
        scenario.select(",", root)
    assert [s.name for s in scenario.select("idle,,idle", root)] == ["idle"]
    assert "scenario named more than once, kept once: idle" in \
        capsys.readouterr().err


def test_a_scenario_that_is_not_utf8_names_its_line(tmp_path):
    p = tmp_path / "s.scenario"
    p.write_bytes(b"description = x\nduration = 5\n# caf\xe9\n")
    with pytest.raises(LabError, match=r"s.scenario:3: not UTF-8 text "
                       r"\(byte 0xe9\)"):
        scenario.parse(p)


def test_a_background_program_the_guest_lacks_is_refused_before_a_build(
        tmp_path):
    from lab.build import guestbuild
    assert guestbuild.programs_in(
        "for f in /x/*; do echo 2 > $f; done 2>/dev/null; X=1 taskset 2 "
        "lab-fsnoise $D | awk '{print}' && stres-ng -c 1") == \
        ["taskset", "lab-fsnoise", "awk", "stres-ng"]
    # what a wrapper or a shell runs must be there too (issue 53)
    assert guestbuild.programs_in('sh -c "no-such-program -x; ls"') == \
        ["sh", "no-such-program", "ls"]
    assert guestbuild.programs_in("timeout -s KILL 5 no-such-program") == \
        ["timeout", "no-such-program"]
    assert guestbuild.programs_in("nice -n 5 chrt -f 50 dd if=/dev/zero") \
        == ["nice", "chrt", "dd"]
    assert guestbuild.programs_in("sh -ec 'x; y'") == ["sh", "x", "y"]
    # acting on a running process, a wrapper runs nothing
    assert guestbuild.programs_in("chrt -f -p 50 1234; taskset -p 2 99") \
        == ["chrt", "taskset"]
    # issue 61: the shell's exec and eval, time's -p (its output format)
    # and env -S (a command line as one word) hid the program they run
    for command in ("exec stres-ng -c 1", "exec -a x stres-ng",
                    "eval stres-ng -c 1", "time -p stres-ng -c 1"):
        assert "stres-ng" in guestbuild.programs_in(command), command
    for command in ("env -S 'stres-ng -c 1'", "env -S'stres-ng -c 1'",
                    "env --split-string='stres-ng -c 1'"):
        assert guestbuild.programs_in(command) == ["env", "stres-ng"]
    ok = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                              "background = stress-ng --cpu 1\n"))
    guestbuild.check_background([ok])
    bad = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                               "background = stres-ng --cpu 1\n"))
    with pytest.raises(LabError, match=r"background: 'stres-ng' is not a "
                       r"program in the guest"):
        guestbuild.check_background([bad])


def test_a_scenario_asks_for_more_boots_and_gets_them_last(tmp_path):
    from lab.run import matrix
    few = scenario.parse(write(tmp_path, "description = x\nduration = 5\n",
                               "few.scenario"))
    many = scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                                "boots = 4\n", "many.scenario"))
    assert (few.boots, many.boots) == (0, 4)
    runs = [(c.scenario.name, c.boot) for c in
            matrix.plan(["v"], [few, many], boots=2)]
    assert runs == [("few", 1), ("many", 1), ("few", 2), ("many", 2),
                    ("many", 3), ("many", 4)]
    # --boots above the scenario's: every cell gets --boots
    assert len(matrix.plan(["v"], [few, many], boots=5)) == 10
    with pytest.raises(LabError, match=r"s.scenario:3: boots must be a "
                       r"whole number from 1 to 100, got '0'"):
        scenario.parse(write(tmp_path, "description = x\nduration = 5\n"
                             "boots = 0\n"))


def test_a_scenario_file_whose_path_has_a_blank_is_taken_whole(tmp_path):
    """Issue 61: it was reported as an unknown scenario named by its
    first word."""
    folder = tmp_path / "my loads"
    folder.mkdir()
    mine = write(folder, "description = mine\nduration = 5\n",
                 "mine.scenario")
    got = scenario.select(f"{mine},idle")
    assert [s.name for s in got] == ["mine", "idle"]
    assert [s.name for s in scenario.select(str(mine))] == ["mine"]
