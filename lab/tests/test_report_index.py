"""reports/README.md: generated, current, and consistent with the tree."""
import pytest

from lab.report import index as report_index
from lab.base.log import LabError


def test_the_index_is_current():
    assert report_index.INDEX.read_text() == report_index.index(), \
        "reports/README.md is stale: run `python3 -m lab reports-index`"


def test_every_report_in_the_tree_has_a_declared_status():
    status = report_index.read_status()
    present = {p.name for p in report_index.REPORTS.iterdir()
               if p.is_dir() and report_index.FOLDER.match(p.name)}
    assert present <= set(status), sorted(present - set(status))
    assert sum(s.startswith("current") for s in status.values()) >= 1


def test_declarations_that_contradict_the_tree_are_named(tmp_path):
    (tmp_path / "2026-01-01-a").mkdir()
    (tmp_path / "2026-01-01-a" / "README.md").write_text("# A title\n")
    (tmp_path / "2026-01-01-b").mkdir()
    conf = tmp_path / "status.conf"
    conf.write_text("2026-01-01-a = removed abc1234\n"
                    "2026-01-01-c = superseded by 2026-01-01-z\n")
    with pytest.raises(LabError) as e:
        report_index.index(conf, tmp_path)
    text = str(e.value)
    assert "2026-01-01-a: declared removed but in the tree" in text
    assert "2026-01-01-c: not in the tree" in text
    assert "superseded by unknown 2026-01-01-z" in text
    conf.write_text("2026-01-01-a = current\n"
                    "2026-01-01-old = removed abc1234, superseded by "
                    "2026-01-01-a\n")
    out = report_index.index(conf, tmp_path)
    assert "| [2026-01-01-a](2026-01-01-a/) | A title | 0 | current |" in out
    assert "| [2026-01-01-b](2026-01-01-b/) | - | 0 | new |" in out
    assert "last in commit abc1234, superseded by 2026-01-01-a |" in out


def test_a_malformed_line_names_its_file_and_line(tmp_path):
    conf = tmp_path / "status.conf"
    conf.write_text("# comment\n\nnot a folder = current\n")
    with pytest.raises(LabError, match=r"status.conf:3: expected"):
        report_index.read_status(conf)


def test_published_data_names_no_path_of_the_host_that_made_it():
    """Run folders are relative to the results folder and the cache is
    $LAB_CACHE (lab/report/publish.py portable())."""
    import gzip
    import re
    host_path = re.compile(r'(?:"|\s)/(?:work|root|home|tmp)/')
    found = []
    for f in report_index.REPORTS.glob("20*/**/*.json*"):
        text = gzip.decompress(f.read_bytes()).decode() \
            if f.suffix == ".gz" else f.read_text()
        if host_path.search(text):
            found.append(str(f))
    assert not found, found[:5]
