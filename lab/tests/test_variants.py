"""Series parsing, variant discovery and the content hash."""
import shutil

import pytest

from lab import paths, variants
from lab.log import LabError
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
    from lab.variants import parse_expect
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
