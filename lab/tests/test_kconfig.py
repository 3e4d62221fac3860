"""Fragment parsing and the check that .config honoured every request."""
import pytest

from lab.base import kconfig, paths
from lab.base.log import LabError


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_parse_set_unset_and_comments(tmp_path):
    frag = write(tmp_path, "f", "# comment\nCONFIG_A=y\n"
                 "# CONFIG_B is not set\nCONFIG_S=\"-x\"\nCONFIG_N=8\n")
    reqs = kconfig.parse_fragment(frag)
    assert [(r.option, r.value) for r in reqs] == [
        ("CONFIG_A", "y"), ("CONFIG_B", "n"), ("CONFIG_S", '"-x"'),
        ("CONFIG_N", "8")]
    assert reqs[0].where == f"{frag}:2"


def test_malformed_line_names_file_and_line(tmp_path):
    frag = write(tmp_path, "f", "CONFIG_A=y\nCONFIG_B y\n")
    with pytest.raises(LabError, match=r"f:2: not a Kconfig line"):
        kconfig.parse_fragment(frag)


def test_duplicate_option_in_one_fragment(tmp_path):
    frag = write(tmp_path, "f", "CONFIG_A=y\nCONFIG_A=n\n")
    with pytest.raises(LabError, match=r"f:2: CONFIG_A already set on "
                                       r"line 1"):
        kconfig.parse_fragment(frag)


def test_later_fragment_overrides(tmp_path):
    a = write(tmp_path, "a", "CONFIG_A=y\nCONFIG_B=y\n")
    b = write(tmp_path, "b", "# CONFIG_A is not set\n")
    reqs = {r.option: r for r in kconfig.merged_requests([a, b])}
    assert reqs["CONFIG_A"].value == "n"
    assert reqs["CONFIG_A"].where == f"{b}:1"
    assert reqs["CONFIG_B"].value == "y"


def test_dropped_option_is_reported_with_its_fragment_line(tmp_path):
    frag = write(tmp_path, "frag", "CONFIG_A=y\nCONFIG_GONE=y\n"
                 "# CONFIG_OFF is not set\nCONFIG_NUM=8\n")
    dotconfig = write(tmp_path, ".config", "CONFIG_A=y\nCONFIG_OFF=y\n"
                      "# CONFIG_GONE is not set\nCONFIG_NUM=64\n")
    bad = kconfig.mismatches(kconfig.read_config(dotconfig),
                             kconfig.parse_fragment(frag))
    assert len(bad) == 3
    assert bad[0].startswith(f"{frag}:2: CONFIG_GONE=y requested")
    assert "not set" in bad[0]
    assert bad[1].startswith(f"{frag}:3: CONFIG_OFF=n requested")
    assert bad[2].startswith(f"{frag}:4: CONFIG_NUM=8 requested") and \
        "has it 64" in bad[2]


def test_honoured_fragment_has_no_mismatch(tmp_path):
    frag = write(tmp_path, "frag", "CONFIG_A=y\n# CONFIG_B is not set\n")
    dotconfig = write(tmp_path, ".config", "CONFIG_A=y\n")
    assert kconfig.mismatches(kconfig.read_config(dotconfig),
                              kconfig.parse_fragment(frag)) == []


def test_repository_fragments_parse():
    assert len(kconfig.parse_fragment(paths.COMMON_CONFIG)) > 20


def test_changes_lists_each_option_whose_value_differs():
    before = {"CONFIG_PREEMPT": "y", "CONFIG_X86_PM_TIMER": "y",
              "CONFIG_HZ": "250"}
    after = {"CONFIG_PREEMPT_RT": "y", "CONFIG_X86_PM_TIMER": "y",
             "CONFIG_HZ": "250"}
    assert kconfig.changes(before, after) == [
        "CONFIG_PREEMPT: y -> n", "CONFIG_PREEMPT_RT: n -> y"]
    assert kconfig.changes(after, after) == []
