import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def guest_variants() -> list:
    """The variants the guest tests build, boot and run the mechanism
    tests in: the default matrix's of baseline's source generation, or
    LAB_TEST_VARIANTS (`make check-all` and `make check VARIANTS=...` set
    it).  A fresh machine's `make check` must fit in an hour on 2 cores:
    the 6.1 kernels share one tree and build in about 34 min together,
    while the 6.12 pair of the default matrix needs a second tree built
    twice (PREEMPT_RT changes the config), another 22 min.  Every
    variant's series is still applied and checked without a build
    (test_variant_series.py)."""
    import os
    from lab.base import variants
    names = os.environ.get("LAB_TEST_VARIANTS", "")
    if names:
        return variants.select(names)
    first = variants.select("baseline")[0].source
    return [v for v in variants.default_matrix() if v.source == first]


def mechanism_variants() -> list:
    """Names of the guest variants whose mechanisms are tested, for
    parametrized tests: a control boots its base's kernel, whose own
    tests are its (it would only skip them, having no expect file)."""
    return [v.name for v in guest_variants() if v.get("role") != "control"]


@pytest.fixture(autouse=True)
def _no_report_figures(request, monkeypatch):
    """A report's survival, tails and histogram figures cost matplotlib
    seconds a report and most tests read only its text and data: they
    are drawn in the tests marked `figures`, which check them, and in
    every guest test."""
    if request.node.get_closest_marker("figures") or \
            request.node.get_closest_marker("guest"):
        return
    from lab.report import publish
    monkeypatch.setattr(publish.report_plots, "plots",
                        lambda runs, a, out: [])


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "guest: builds kernels, applies series in the shared "
        "trees or boots guests (slow); runs after the unit tests, `make "
        "test` leaves it out")
    config.addinivalue_line(
        "markers", "figures: draws a report's figures (most unit tests "
        "leave them out: conftest.py)")
    # known without pytest-xdist too (`make test` does not need it)
    config.addinivalue_line(
        "markers", "xdist_group(name): run on one pytest-xdist worker")
    config.addinivalue_line(
        "markers", "host_alone: needs the host to itself (a NIC fed from "
        "the host); `make check` runs it after the others, alone")


def pytest_collection_modifyitems(items):
    """Unit tests first: a broken host side shows in seconds."""
    items.sort(key=lambda item: item.get_closest_marker("guest") is not None)


@pytest.fixture
def variant_root(tmp_path):
    """An empty variants/ folder to fill with test variants."""
    root = tmp_path / "variants"
    root.mkdir()
    return root


def make_variant(root, name, series="", patches=None, config="",
                 readme="# x\n"):
    folder = root / name
    folder.mkdir()
    (folder / "series").write_text(series)
    (folder / "config").write_text(config)
    (folder / "README.md").write_text(readme)
    for pname, text in (patches or {}).items():
        (folder / pname).write_text(text)
    return folder


@pytest.fixture(scope="session")
def all_variants():
    """The guest variants (guest_variants), not every variant."""
    return guest_variants()


@pytest.fixture(scope="session")
def built(all_variants):
    """The guest variants' kernels (cached: built only if their inputs
    changed), each with its test module built right after it, while the
    shared tree still holds it: built later, each module switched the
    tree back to its variant, 2 min a variant on a cold `make check`.
    A kernel or module that fails to build fails the fixture, so every
    guest test errors with the build's message."""
    from lab.build import guestbuild, kernel
    return kernel.build_all(all_variants, then=guestbuild.module)


@pytest.fixture(scope="session")
def accel(built):
    from lab.run import accelerator
    return accelerator.choose(built["baseline"].image)
