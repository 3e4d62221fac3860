"""Every parser a user feeds, fuzzed (issue 53): whatever the input, the
result is a parsed value or the lab's one-line error (LabError), never
another exception.  Hypothesis draws the inputs; each test keeps to a
few hundred examples so that `make test` stays quick."""
import contextlib
import json
import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("hypothesis", reason="python3-hypothesis (make deps "
                    "installs it)")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from lab.base import predictions, unresolved, variants
from lab.base.log import LabError
from lab.build import series
from lab.report import publish
from lab.run import scenario
from lab.tests.test_matrix_report import fake_run

# the same draws in every run (CI stays deterministic), no example
# database in the tree
QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
FAST = settings(max_examples=150, deadline=None, database=None,
                derandomize=True, suppress_health_check=QUIET)

# lines that look like the files' own, so that the parsers get past their
# first check, mixed with any text at all
KEYS = sorted(scenario.KEYS | set(variants.CONF_DEFAULTS) | {"x"})
WORDS = st.sampled_from(KEYS + ["=", "#", "-t", "-Ma", "-rh100", "--", "5",
                                "\u00b2", "0x10", "baseline", "idle", "p99",
                                "lower", "same", "yes", "6.1", "'", '"'])
LINE = st.one_of(st.text(max_size=40),
                 st.lists(WORDS, max_size=6).map(" ".join))
TEXT = st.lists(LINE, max_size=12).map("\n".join)


def parsed_or_refused(parse, *args):
    """parse(*args), or None where the lab refused it in one line."""
    try:
        return parse(*args)
    except LabError as e:
        assert "\n" not in str(e).strip(), str(e)
        return None


@contextlib.contextmanager
def scratch():
    """A folder of one example's own (pytest's tmp_path is one for all
    of a test's examples)."""
    folder = Path(tempfile.mkdtemp())
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def written(folder: Path, name: str, text: str) -> Path:
    (folder / name).write_text(text, errors="surrogateescape")
    return folder / name


@FAST
@given(TEXT)
def test_a_scenario_file_is_parsed_or_refused(text):
    with scratch() as folder:
        parsed_or_refused(scenario.parse,
                          written(folder, "fuzz.scenario", text))


@FAST
@given(st.lists(WORDS, max_size=8).map(" ".join) | st.text(max_size=30))
def test_a_cyclictest_line_is_taken_or_refused(line):
    parsed_or_refused(scenario._check_cyclictest, line, "fuzz.scenario:3")


@FAST
@given(TEXT)
def test_a_variant_conf_is_parsed_or_refused(text):
    with scratch() as folder:
        written(folder, "variant.conf", text)
        parsed_or_refused(variants.parse_conf, folder)
        parsed_or_refused(variants.parse_series,
                          written(folder, "series", text))
        parsed_or_refused(variants.parse_expect,
                          written(folder, "expect", text))


@FAST
@given(TEXT)
def test_the_unresolved_and_predictions_files_are_parsed_or_refused(text):
    with scratch() as folder:
        path = written(folder, "declared.txt", text)
        parsed_or_refused(unresolved.load, path)
        parsed_or_refused(predictions.load, path)


MAIL = st.builds(
    lambda subject, body, raw: (
        f"From x@y Mon Jan  1 00:00:00 2024\nSubject: {subject}\n"
        f"From: a <a@b>\n\n{body}\n").encode("utf-8", "surrogateescape")
    + raw,
    st.sampled_from(["[PATCH 1/2] x: y", "[PATCH 2/2] x: z", "[PATCH 0/2] c",
                     "[PATCH] one", "Re: [PATCH 1/2] x", "no tag", ""]),
    st.text(max_size=80), st.binary(max_size=20))


@FAST
@given(st.lists(MAIL, max_size=4))
def test_an_mbox_or_a_folder_of_patches_is_checked_or_refused(mails):
    """As `variant add` reads them, up to b4 (which the series tests
    run): an mbox, or a folder of *.patch files made into one, checked,
    its bytes checked, unfolded for b4."""
    with scratch() as here:
        path = here / "series.mbox"
        path.write_bytes(b"".join(mails))
        folder = here / "folder"
        folder.mkdir()
        for k, mail in enumerate(mails):
            (folder / f"{k:04d}.patch").write_bytes(mail.split(b"\n", 1)[1])
        boxes = [path]
        made = parsed_or_refused(series.as_mbox, folder, here / "f.mbox")
        boxes += [made] if made else []
        for box in boxes:
            if parsed_or_refused(series.check_mbox, box, str(box)):
                parsed_or_refused(series.check_bytes, box, str(box))
                parsed_or_refused(series.unfolded, box,
                                  box.with_suffix(".unfolded"))


JSON = st.recursive(st.none() | st.booleans() | st.integers() |
                    st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) |
                    st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=6)
RUN_FIELDS = ["variant", "status", "boot", "cpus", "variant_conf", "reason",
              "scenario", "plan_env", "kernel", "qemu"]


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=QUIET)
@given(st.dictionaries(st.sampled_from(RUN_FIELDS), JSON, min_size=1,
                       max_size=3))
def test_a_stored_run_record_is_read_or_left_out(changed):
    """A run.json with any of its fields changed to any JSON value: the
    run is analysed with the others, or left out with a line; never a
    traceback of the whole compare."""
    with scratch() as root:
        for boot in (1, 2):
            fake_run(root, "baseline", "idle", boot, 40, 60, seed=boot)
        bad = root / "baseline" / "idle" / "boot-2" / "run.json"
        record = json.loads(bad.read_text())
        record.update(changed)
        bad.write_text(json.dumps(record))
        # the whole report (its figures aside: conftest.py)
        parsed_or_refused(publish.write, root, root / "report", {}, "fuzz")



@FAST
@given(st.text(max_size=120))
def test_a_report_name_stays_inside_reports_or_is_refused(name):
    """Issue 61: any --name is one folder directly under reports/, or
    refused when the argument is read."""
    import argparse
    from lab.__main__ import report_name
    try:
        taken = report_name(name)
    except argparse.ArgumentTypeError as e:
        assert "\n" not in str(e)
        return
    if taken:
        out = publish.default_folder(taken)
        assert out.parent == publish.default_folder("x").parent
        assert out.name.endswith(taken) and "/" not in taken


@FAST
@given(st.text(min_size=1, max_size=20).filter(
    lambda s: "/" not in s and s.isprintable() and s not in (".", "..")),
       TEXT)
def test_a_scenario_file_given_by_path_is_parsed_or_refused(folder, text):
    """A scenario named by its path, in a folder of any printable name
    (blanks and all): parsed, or refused in one line (a comma splits a
    list; a newline in a path would print as two)."""
    with scratch() as root:
        where = root / folder
        try:
            where.mkdir()
        except OSError:
            return          # a name the file system refuses
        path = written(where, "fuzz.scenario", text)
        parsed_or_refused(scenario.select, str(path))


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=QUIET)
@given(st.sampled_from(["baseline", "stultz-v5"]),
       st.sampled_from(["idle", "long"]), st.integers(1, 3))
def test_a_run_is_read_only_where_its_record_says_it_ran(variant, scen,
                                                        boot):
    """A run.json whose variant, scenario or boot is not its folder's is
    refused in one line; one that agrees is read."""
    from lab.analyse import analysis
    with scratch() as root:
        fake_run(root, "baseline", "idle", 1, 40, 60)
        f = root / "baseline" / "idle" / "boot-1" / "run.json"
        record = json.loads(f.read_text())
        record.update(variant=variant, boot=boot)
        record["scenario"]["name"] = scen
        f.write_text(json.dumps(record))
        got = parsed_or_refused(analysis.load, root)
        assert (got is not None) == ((variant, scen, boot) ==
                                     ("baseline", "idle", 1))
