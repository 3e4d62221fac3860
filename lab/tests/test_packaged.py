"""Debian's packaged kernels as variants (lab/build/packaged.py): what
can be checked without fetching them.  The boot tests fetch and boot
them (test_boot_variants.py)."""
import subprocess

import pytest

from lab.base import variants
from lab.base.log import LabError
from lab.build import packaged
from lab.build.built import Built
from lab.run import health


def test_the_repository_has_debian_rt_and_stock_as_packages():
    rt, stock = variants.select("debian-rt,debian-stock")
    assert rt.package == "linux-image-6.1.0-57-rt-amd64"
    assert stock.package == "linux-image-6.1.0-57-amd64"
    assert not rt.patches and not rt.in_default_matrix


def test_drivers_load_after_what_they_need(tmp_path):
    dep = tmp_path / "modules.dep"
    dep.write_text(
        "kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs.ko\n"
        "kernel/net/9p/9pnet.ko:\n"
        "kernel/fs/netfs.ko:\n"
        "kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko "
        "kernel/drivers/virtio/virtio.ko\n"
        "kernel/drivers/virtio/virtio.ko:\n"
        "kernel/lib/crc32c-generic.ko:\n")
    order = packaged.load_order(dep, ("9pnet_virtio", "9p",
                                      "crc32c_generic"))
    assert order == ["kernel/net/9p/9pnet.ko",
                     "kernel/drivers/virtio/virtio.ko",
                     "kernel/net/9p/9pnet_virtio.ko", "kernel/fs/netfs.ko",
                     "kernel/fs/9p/9p.ko", "kernel/lib/crc32c-generic.ko"]
    with pytest.raises(LabError, match=r"modules.dep: no module ext4: the "
                       r"guest cannot reach its devices"):
        packaged.load_order(dep, ("ext4",))


def test_headers_dependencies_are_pinned_to_their_versions(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: linux-headers-6.1.0-57-rt-amd64\nVersion: 6.1.192-3\n"
        "Architecture: amd64\nMaintainer: x <x@example.org>\n"
        "Description: x\n"
        "Depends: linux-headers-6.1.0-57-common-rt (= 6.1.192-3), "
        "linux-kbuild-6.1 (>= 6.1.192-3), gcc-12\n")
    deb = tmp_path / "h.deb"
    subprocess.run(["dpkg-deb", "-b", str(pkg), str(deb)], check=True,
                   capture_output=True)
    assert packaged.depends(deb) == [
        "linux-headers-6.1.0-57-common-rt=6.1.192-3",
        "linux-kbuild-6.1=6.1.192-3"]


def test_a_packaged_kernel_proves_itself_by_its_package_version(tmp_path):
    built = Built("debian-rt", tmp_path, {
        "variant": "debian-rt", "release": "6.1.0-57-rt-amd64",
        "package": "linux-image-6.1.0-57-rt-amd64",
        "package_version": "6.1.192-3", "headers": "headers"})
    (tmp_path / "version").write_text(
        "Linux version 6.1.0-57-rt-amd64 (debian-kernel@lists.debian.org) "
        "#1 SMP PREEMPT_RT Debian 6.1.192-3 (2026-11-26)\n")
    assert health.packaged_identity(built, tmp_path,
                                    "6.1.0-57-rt-amd64") == []
    (tmp_path / "version").write_text(
        "Linux version 6.1.0-57-rt-amd64 #1 SMP PREEMPT_RT Debian "
        "6.1.170-1 (2026-01-01)\n")
    problems = health.packaged_identity(built, tmp_path, "6.1.0-56-amd64")
    assert len(problems) == 2 and "expected '6.1.0-57-rt-amd64'" in \
        problems[0] and "does not name Debian 6.1.192-3" in problems[1]
