"""Failed-patch reporting and rebuild skipping, on small real git trees."""
import json
import subprocess

import pytest

from lab.build import cachelock, kernel, source
from lab.base import arches, paths, variants
from lab.base.log import LabError
from lab.tests.conftest import make_variant

GOOD = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A Developer <a@example.org>
Date: Mon, 1 Jan 2024 00:00:00 +0000
Subject: [PATCH] demo: change line three

Signed-off-by: A Developer <a@example.org>
---
 demo.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/demo.c b/demo.c
--- a/demo.c
+++ b/demo.c
@@ -1,5 +1,5 @@
 one
 two
-three
+THREE
 four
 five
"""

# Second hunk's context does not exist in the tree.
BROKEN = GOOD.replace("change line three", "touch two places") + """\
@@ -20,3 +20,3 @@
 twenty
-twenty-one
+TWENTY-ONE
 twenty-two
"""


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "tree"
    t.mkdir()
    (t / "demo.c").write_text("one\ntwo\nthree\nfour\nfive\n")
    source.git(t, "init", "-q")
    source.git(t, "add", "demo.c")
    source.git(t, "commit", "-q", "-m", "base")
    source.git(t, "tag", source.BASE_TAG)
    return t


def test_series_applies_with_git_am(tree, variant_root):
    v = variants.load(make_variant(variant_root, "good", "good.patch\n",
                                   {"good.patch": GOOD}))
    kernel.apply_series(v, tree)
    assert "THREE" in (tree / "demo.c").read_text()
    log = source.git(tree, "log", "--format=%an|%s", "-1").stdout.strip()
    assert log == "A Developer|demo: change line three"


def test_failed_patch_names_variant_patch_file_and_hunk(tree, variant_root):
    v = variants.load(make_variant(
        variant_root, "mine", "broken.patch\n", {"broken.patch": BROKEN}))
    with pytest.raises(LabError) as e:
        kernel.apply_series(v, tree)
    msg = str(e.value)
    assert "variant mine: patch 1/1 broken.patch does not apply" in msg
    assert "demo.c hunk #2 (@@ -20,3 +20,3 @@)" in msg
    # The tree is left clean for the next attempt: no am in progress.
    assert not (tree / ".git" / "rebase-apply").exists()


def test_reapplying_resets_to_the_packaged_commit(tree, variant_root):
    v = variants.load(make_variant(variant_root, "good", "good.patch\n",
                                   {"good.patch": GOOD}))
    kernel.apply_series(v, tree)
    kernel.apply_series(v, tree)      # would conflict if not reset first
    count = source.git(tree, "rev-list", "--count", "HEAD").stdout.strip()
    assert count == "2"


def test_up_to_date_variant_is_not_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(source, "unpacked_source",
                        lambda *a: (tmp_path, "digest", "6.1.192"))

    def no_make(*a, **k):
        raise AssertionError("make was called for an up-to-date variant")
    monkeypatch.setattr(kernel, "_make", no_make)
    v = variants.load(paths.VARIANTS_DIR / "baseline")
    h = v.content_hash("digest", arches.X86_64.recipe)
    folder = paths.cache_dir() / "kernels" / h[:16]
    folder.mkdir(parents=True)
    (folder / "bzImage").write_bytes(b"kernel")
    (folder / "build.json").write_text(json.dumps(
        {"hash": h, "release": "6.1.192-baseline"}))
    got = kernel.build(v)
    assert got.image == folder / "bzImage"
    # Any change of input misses the cache and reaches make.
    monkeypatch.setattr(source, "unpacked_source",
                        lambda *a: (tmp_path, "other-digest", "6.1.192"))
    monkeypatch.setattr(kernel, "_worktree", lambda repo: tmp_path)
    monkeypatch.setattr(kernel, "checkout_series", lambda v, t: None)
    monkeypatch.setattr(kernel, "mark_tree", lambda t, h: None)
    with pytest.raises(AssertionError, match="make was called"):
        kernel.build(v)


def test_failed_hunk_for_missing_file(tmp_path):
    p = tmp_path / "x.patch"
    p.write_text(GOOD)
    assert kernel.failed_hunk(p, "error: demo.c: does not exist in index") \
        == "demo.c: file not in the tree"


def test_git_am_is_the_tool(tree, variant_root):
    """The series format is plain git: format-patch output round-trips."""
    v = variants.load(make_variant(variant_root, "good", "good.patch\n",
                                   {"good.patch": GOOD}))
    kernel.apply_series(v, tree)
    out = subprocess.run(["git", "-C", str(tree), "format-patch", "-1",
                          "--stdout"], capture_output=True, text=True).stdout
    assert "Subject: [PATCH] demo: change line three" in out


def test_full_disk_is_refused_before_building(tmp_path, monkeypatch):
    class Usage:
        free = 512 * 2**20
    monkeypatch.setattr(kernel.shutil, "disk_usage", lambda p: Usage)
    with pytest.raises(LabError, match=r"not enough disk space in .*: 0.5 "
                                       r"GB free, a variant build needs"):
        kernel.check_disk(tmp_path, kernel.NEEDED_GB)


def test_tree_left_elsewhere_is_reset_to_the_series(tree, variant_root,
                                                    monkeypatch):
    made = []
    monkeypatch.setattr(kernel, "configure", lambda v, t, o, log: None)
    monkeypatch.setattr(kernel, "_make", lambda *a, **k: made.append(a))
    v = variants.load(make_variant(variant_root, "good", "good.patch\n",
                                   {"good.patch": GOOD}))
    objdir = tree.parent / "obj"
    (objdir / "include/config").mkdir(parents=True)
    (objdir / "include/config/kernel.release").write_text("6.1.192-good\n")
    built = kernel.Built("good", tree, {"hash": "h1", "tree": str(tree),
                                       "objdir": str(objdir)})
    kernel.ensure_tree(v, built)              # no mark yet: applies
    assert "THREE" in (tree / "demo.c").read_text()
    broken = variants.load(make_variant(variant_root, "bad", "b.patch\n",
                                        {"b.patch": BROKEN}))
    with pytest.raises(LabError):
        kernel.apply_series(broken, tree)     # leaves the tree reset
    kernel.ensure_tree(v, built)              # so the series goes back
    assert "THREE" in (tree / "demo.c").read_text()
    kernel.mark_tree(tree, "other")
    source.git(tree, "reset", "-q", "--hard", source.BASE_TAG)
    kernel.ensure_tree(v, built)              # another variant's mark
    assert "THREE" in (tree / "demo.c").read_text()
    assert len(made) == 3                    # and each time made again
    kernel.ensure_tree(v, built)              # its own mark: nothing to do
    assert len(made) == 3


def test_builds_in_one_tree_are_serialised(tmp_path, monkeypatch):
    import fcntl
    monkeypatch.setenv("LAB_CACHE", str(tmp_path))
    with cachelock.locked("v1"):
        with open(tmp_path / "locks" / "v1.lock", "w") as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with cachelock.locked("v2"):          # other trees are not held up
            pass
    with open(tmp_path / "locks" / "v1.lock", "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_checkout_rewrites_only_the_files_that_change(tree, variant_root,
                                                      monkeypatch):
    """A one-line change to a patch must not touch the other files the
    series patches: their mtimes decide what make recompiles."""
    monkeypatch.setenv("LAB_CACHE", str(tree.parent / "cache"))
    (tree / "header.h").write_text("int x;\n")
    source.git(tree, "add", "header.h")
    source.git(tree, "commit", "-q", "-m", "header")
    source.git(tree, "tag", "-f", source.BASE_TAG)
    header = GOOD.replace("demo.c", "header.h").replace(
        "@@ -1,5 +1,5 @@\n one\n two\n-three\n+THREE\n four\n five\n",
        "@@ -1 +1 @@\n-int x;\n+int y;\n")
    v1 = variants.load(make_variant(variant_root, "v1", "h.patch\ng.patch\n",
                                    {"h.patch": header, "g.patch": GOOD}))
    kernel.checkout_series(v1, tree)
    assert (tree / "header.h").read_text() == "int y;\n"
    assert "THREE" in (tree / "demo.c").read_text()
    before = (tree / "header.h").stat()
    v2 = variants.load(make_variant(
        variant_root, "v2", "h.patch\ng.patch\n",
        {"h.patch": header, "g.patch": GOOD.replace("+THREE", "+3")}))
    kernel.checkout_series(v2, tree)
    assert "3" in (tree / "demo.c").read_text()
    after = (tree / "header.h").stat()                  # left alone:
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino,
                                                 before.st_mtime_ns)


def test_a_readme_edit_rebuilds_no_guest_code(tmp_path):
    from lab.build import guestbuild
    (tmp_path / "x.c").write_text("int x;\n")
    (tmp_path / "README.md").write_text("# x\n")
    before = guestbuild.source_hash(tmp_path)
    (tmp_path / "README.md").write_text("# x, explained better\n")
    assert guestbuild.source_hash(tmp_path) == before
    (tmp_path / "x.c").write_text("int y;\n")
    assert guestbuild.source_hash(tmp_path) != before
