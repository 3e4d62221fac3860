"""The guest's initramfs: cached by content, safe to build side by side."""
import subprocess
from concurrent.futures import ThreadPoolExecutor

from lab.build import initramfs


def test_processes_building_one_archive_at_once_all_get_it(tmp_path,
                                                            monkeypatch):
    """pytest workers and JOBS guests may ask for the same archive at the
    same moment: each stages in a folder of its own, none loses a file."""
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    extra = tmp_path / "payload"
    extra.write_bytes(b"x" * (4 << 20))
    with ThreadPoolExecutor(6) as pool:
        outs = list(pool.map(
            lambda _: initramfs.build({"usr/bin/payload": extra}, "race"),
            range(6)))
    assert len(set(outs)) == 1
    listing = subprocess.run(["cpio", "-t", "--quiet"], input=outs[0]
                             .read_bytes(), capture_output=True).stdout
    names = listing.decode().split()
    assert "usr/bin/payload" in names and "bin/busybox" in names
    # nothing left behind but the archive
    assert [p.name for p in outs[0].parent.iterdir()] == [outs[0].name]
