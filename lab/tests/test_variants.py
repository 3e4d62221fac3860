"""Series parsing, variant discovery and the content hash."""
import shutil

import pytest

from lab.base import paths, variants
from lab.base.log import LabError
from lab.tests.conftest import make_variant


def test_series_order_comments_and_blank_lines(variant_root):
    folder = make_variant(
        variant_root, "v1",
        series="# comment\n\nb.patch -p1\na.patch  # trailing comment\n",
        patches={"a.patch": "A", "b.patch": "B"})
    v = variants.load(folder)
    assert [p.name for p in v.patches] == ["b.patch", "a.patch"]


def test_missing_patch_names_file_and_line(variant_root):
    folder = make_variant(variant_root, "v1", series="# c\nnope.patch\n")
    with pytest.raises(LabError, match=r"series:2: patch 'nope.patch' not"):
        variants.load(folder)


def test_duplicate_patch_is_refused(variant_root):
    folder = make_variant(variant_root, "v1", series="a.patch\na.patch\n",
                          patches={"a.patch": "A"})
    with pytest.raises(LabError, match=r"series:2: 'a.patch' already listed"
                                       r" on line 1"):
        variants.load(folder)


def test_unknown_series_option_is_refused(variant_root):
    folder = make_variant(variant_root, "v1", series="a.patch -p0\n",
                          patches={"a.patch": "A"})
    with pytest.raises(LabError, match=r"series:1: unsupported option"):
        variants.load(folder)


def test_variant_missing_files_named(variant_root):
    (variant_root / "half").mkdir()
    (variant_root / "half" / "series").write_text("")
    with pytest.raises(LabError, match=r"variant 'half': missing config, "
                                       r"README.md"):
        variants.discover(variant_root)


def test_bad_variant_name(variant_root):
    make_variant(variant_root, "Bad Name")
    with pytest.raises(LabError, match="name must match"):
        variants.discover(variant_root)


def test_new_variant_is_just_a_folder(variant_root):
    for v in variants.discover():
        shutil.copytree(v.folder, variant_root / v.name)
    shutil.copytree(paths.VARIANTS_DIR / "baseline", variant_root / "mine")
    names = [v.name for v in variants.discover(variant_root)]
    assert names[0] == "baseline" and "mine" in names


def test_select_unknown_variant(variant_root):
    make_variant(variant_root, "baseline")
    with pytest.raises(LabError, match=r"unknown variant 'x'; known: "
                                       r"baseline"):
        variants.select("x", variant_root)


def test_repository_variants_load():
    names = [v.name for v in variants.discover()]
    assert names[:1] == ["baseline"] and "stultz-v5" in names
    stultz = variants.select("stultz-v5")[0]
    assert len(stultz.patches) == 3


def test_content_hash_follows_inputs(variant_root):
    folder = make_variant(variant_root, "v1", series="a.patch\n",
                          patches={"a.patch": "A"}, config="CONFIG_X=y\n")
    v = variants.load(folder)
    base = v.content_hash("src", "r1")
    assert v.content_hash("src", "r1") == base
    assert v.content_hash("src2", "r1") != base       # packaged source
    assert v.content_hash("src", "r2") != base        # build recipe
    (folder / "series").write_text("# only a comment changed\na.patch\n")
    assert variants.load(folder).content_hash("src", "r1") == base
    (folder / "a.patch").write_text("A changed")
    assert variants.load(folder).content_hash("src", "r1") != base
    (folder / "a.patch").write_text("A")
    (folder / "config").write_text("CONFIG_X=n\n")
    assert variants.load(folder).content_hash("src", "r1") != base


def test_a_half_made_variant_stops_only_what_asks_for_it(variant_root):
    make_variant(variant_root, "baseline", "", {})
    (variant_root / "half").mkdir()
    assert [v.name for v in variants.select("baseline", variant_root)] == \
        ["baseline"]
    with pytest.raises(LabError, match=r"variant 'half': missing .*finish "
                                       r"it .*or name the variants"):
        variants.select("", variant_root)
    with pytest.raises(LabError, match="unknown variant 'nope'; known: "
                                       "baseline, half"):
        variants.select("nope", variant_root)


def test_expectations_are_data_in_the_variants_folder(tmp_path):
    from lab.base.variants import parse_expect
    f = tmp_path / "expect"
    f.write_text("# comment\nlong-handler moved_max 0.05\n"
                 "budget-idle seen yes  # measured\n")
    assert parse_expect(f) == {"long-handler": {"moved_max": 0.05},
                               "budget-idle": {"seen": True}}
    f.write_text("long-handler moved_max\n")
    with pytest.raises(LabError, match=r"expect:1: expected 'test key"):
        parse_expect(f)
    f.write_text("a b c\n")
    with pytest.raises(LabError, match=r"expect:1: 'c' is neither"):
        parse_expect(f)
    assert parse_expect(tmp_path / "none") == {}
    assert variants.select("zijlstra")[0].expect("budget-rt") == \
        {"seen": True}


def test_variant_conf_says_source_boot_parameters_and_role(variant_root):
    make_variant(variant_root, "baseline")
    folder = make_variant(variant_root, "irqthreads")
    (folder / "variant.conf").write_text(
        "# boots baseline's kernel with threaded irqs\n"
        "kernel = baseline\nappend = threadirqs\nrole = reference\n"
        "default = no\n")
    v = variants.load(folder)
    assert (v.append, v.get("role"), v.source) == \
        ("threadirqs", "reference", "6.1")
    assert not v.in_default_matrix
    assert v.kernel_variant().name == "baseline"
    assert v.described()["kernel"] == "baseline"
    assert v.tarball.name == "linux-source-6.1.tar.xz"
    plain = variants.load(variant_root / "baseline")
    assert plain.kernel_variant() is plain and plain.in_default_matrix
    assert "setup" not in plain.described()


def test_a_setup_script_reaches_the_plan_and_the_record(variant_root):
    """setup.sh goes to the guest as SETUP and into run.json; a change
    to it is a change of the variant."""
    from lab.run import matrix, scenario
    make_variant(variant_root, "baseline")
    folder = make_variant(variant_root, "napi")
    (folder / "setup.sh").write_text("echo 1 > /sys/class/net/eth0/x\n")
    v = variants.load(folder)
    assert v.described()["setup"] == "echo 1 > /sys/class/net/eth0/x\n"
    idle = scenario.select("idle")[0]
    assert matrix.Cell(v, idle, 1).plan_env()["SETUP"] == v.setup
    plain = variants.load(variant_root / "baseline")
    assert "SETUP" not in matrix.Cell(plain, idle, 1).plan_env()


@pytest.mark.parametrize("text, error", [
    ("colour = red\n", r"variant.conf:1: unknown key 'colour'; known: "),
    ("just words\n", r"variant.conf:1: expected 'key = value', got "),
    ("role = maybe\n", r"variant.conf:1: role = 'maybe': one of"),
    ("source = six\n", r"variant.conf:1: source = 'six': a kernel"),
    ("kernel = nowhere\n", r"variant.conf:1: kernel = 'nowhere': name"),
    ("append = a\nappend = b\n", r"variant.conf:2: append given twice"),
    ("source = 6.12\n", r"variant.conf: base = 'baseline' is built from "
     r"6.1, this variant from 6.12"),
    ("base = nowhere\n", r"variant.conf: base = 'nowhere': no such"),
    ("base = mid\n", r"base = 'mid', but that variant is compared with "
     r"'baseline' itself"),
    ("package = linux-image-rt-amd64\n", r"variant.conf: package = "
     r"'linux-image-rt-amd64': a Debian kernel image package, "
     r"linux-image-<abi>-<flavour>"),
    ("kernel = mid\npackage = linux-image-6.1.0-57-amd64\n",
     r"variant.conf: kernel and package both given"),
    ("handler_scale = 1\n", r"variant.conf:1: handler_scale = '1': a "
     r"factor over 0, at most 4 and not 1"),
    ("handler_scale = 0.8\n", r"variant.conf: handler_scale changes the "
     r"load, not the kernel"),
])
def test_a_bad_variant_conf_names_file_and_line(variant_root, text, error):
    make_variant(variant_root, "baseline")
    make_variant(variant_root, "mid")
    folder = make_variant(variant_root, "bad")
    (folder / "variant.conf").write_text(text)
    with pytest.raises(LabError, match=error):
        variants.load(folder)


def test_a_generation_has_its_own_base(variant_root):
    make_variant(variant_root, "baseline")
    (make_variant(variant_root, "base-6.12") / "variant.conf").write_text(
        "source = 6.12\nbase = base-6.12\n")
    (make_variant(variant_root, "rt-6.12") / "variant.conf").write_text(
        "source = 6.12\nbase = base-6.12\n")
    assert [(v.name, v.base) for v in variants.discover(variant_root)] == \
        [("baseline", "baseline"), ("base-6.12", "base-6.12"),
         ("rt-6.12", "base-6.12")]
    # what `lab variant add --source` writes into a new variant.conf
    assert variants.generation_base("6.12", variant_root) == "base-6.12"
    assert variants.generation_base("6.1", variant_root) == "baseline"
    with pytest.raises(LabError, match="no variant in .* is the base of "
                       "source 7.0"):
        variants.generation_base("7.0", variant_root)


def test_a_base_named_for_a_report_is_checked(variant_root):
    """`--base VARIANT=BASE`: a proposal on top of the RT kernel compared
    with it; a pair that is malformed, names a variant the report does
    not have, crosses generations or loops is refused in one line."""
    make_variant(variant_root, "baseline")
    for name in ("base-6.12", "rt-6.12", "rt-plus"):
        (make_variant(variant_root, name) / "variant.conf").write_text(
            "source = 6.12\nbase = base-6.12\n")
    chosen = variants.discover(variant_root)
    assert variants.named_bases("rt-plus=rt-6.12", chosen) == \
        {"rt-plus": "rt-6.12"}
    for text, error in (
            ("rt-plus", "write VARIANT=BASE"),
            ("rt-plus=", "write VARIANT=BASE"),
            ("rt-plus=other", "other is not among the report's variants"),
            ("rt-plus=baseline", "baseline is built from 6.1, rt-plus "
             "from 6.12"),
            ("rt-plus=rt-plus", "compared with itself"),
            ("base-6.12=rt-6.12", "or with a variant compared with it"),
            ("rt-plus=rt-6.12,rt-6.12=base-6.12",
             "a named base is compared with another itself")):
        with pytest.raises(LabError, match=error):
            variants.named_bases(text, chosen)


def test_a_boot_only_variant_has_no_patches_of_its_own(variant_root):
    make_variant(variant_root, "baseline")
    folder = make_variant(variant_root, "mixed",
                          config="CONFIG_FOO=y\n")
    (folder / "variant.conf").write_text("kernel = baseline\n")
    with pytest.raises(LabError, match="boots another's kernel or a "
                       "package's, or builds"):
        variants.load(folder)
    (folder / "variant.conf").write_text(
        "package = linux-image-6.1.0-57-rt-amd64\n")
    with pytest.raises(LabError, match=r"variant.conf: package = "
                       r"linux-image-6.1.0-57-rt-amd64, but mixed has"):
        variants.load(folder)


def test_a_generation_not_installed_names_its_package(tmp_path,
                                                     monkeypatch):
    from lab.build import source
    monkeypatch.setenv("LAB_CACHE", str(tmp_path))
    with pytest.raises(LabError, match=r"linux-source-9.9.tar.xz not found"
                       r".*Debian has no package linux-source-9.9"):
        source.unpacked_source(generation="9.9")


def test_all_names_every_variant():
    assert [v.name for v in variants.select("all")] == \
        [v.name for v in variants.discover()]


def test_a_variant_list_of_separators_names_none(variant_root):
    make_variant(variant_root, "one")
    with pytest.raises(LabError, match=r"the variant list ' , ' names no "
                       r"variant"):
        variants.select(" , ", variant_root)
    assert [v.name for v in variants.select("one,one", variant_root)] == \
        ["one"]
