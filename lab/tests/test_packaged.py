"""Debian's packaged kernels as variants (lab/build/packaged.py): what
can be checked without fetching them.  The boot tests fetch and boot
them (test_boot_variants.py)."""
import json
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
    # Debian's 6.12 builds virtio_pci in and compresses its modules
    (tmp_path / "modules.builtin").write_text(
        "kernel/drivers/virtio/virtio_pci.ko\n")
    dep.write_text("kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz\n"
                   "kernel/fs/jbd2/jbd2.ko.xz:\n")
    assert packaged.load_order(dep, ("virtio_pci", "ext4")) == [
        "kernel/fs/jbd2/jbd2.ko.xz", "kernel/fs/ext4/ext4.ko.xz"]


def test_headers_dependencies_are_pinned_to_their_versions(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: linux-headers-6.1.0-57-rt-amd64\nVersion: 6.1.192-3\n"
        "Architecture: amd64\nMaintainer: x <x@example.org>\n"
        "Description: x\n"
        "Depends: linux-base (>= 4.12~), "
        "linux-headers-6.1.0-57-common-rt (= 6.1.192-3), "
        "linux-image-6.1.0-57-rt-amd64 (= 6.1.192-3) | "
        "linux-image-6.1.0-57-rt-amd64-unsigned (= 6.1.192-3), "
        "linux-kbuild-6.1 (>= 6.1.192-3), linux-kbuild-6.1.192, gcc-12\n")
    deb = tmp_path / "h.deb"
    subprocess.run(["dpkg-deb", "-b", str(pkg), str(deb)], check=True,
                   capture_output=True)
    assert packaged.depends(deb) == [
        "linux-headers-6.1.0-57-common-rt=6.1.192-3",
        "linux-kbuild-6.1=6.1.192-3", "linux-kbuild-6.1.192=6.1.192-3"]


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


def packaged_variant(root, conf):
    from lab.tests.conftest import make_variant
    make_variant(root, "baseline")
    folder = make_variant(root, "debian-x")
    (folder / "variant.conf").write_text(conf)
    return folder


def test_a_package_names_its_version(tmp_path):
    assert variants.select("debian-rt")[0].package_version == "6.1.192-3"
    folder = packaged_variant(tmp_path,
                              "package = linux-image-6.1.0-57-rt-amd64\n")
    with pytest.raises(LabError, match=r"debian-x/variant.conf: package = "
                       r"linux-image-6.1.0-57-rt-amd64 without "
                       r"package_version.*apt-cache policy"):
        variants.load(folder)
    (folder / "variant.conf").write_text(
        "package = linux-image-6.1.0-57-rt-amd64\npackage_version = x y\n")
    with pytest.raises(LabError, match=r"package_version = 'x y': a Debian "
                       r"version"):
        variants.load(folder)


def test_a_version_the_archive_lacks_says_so_and_the_way_out(tmp_path):
    """apt-get download of a version apt does not know fails at once,
    without the network: the error names the version and package_debs."""
    folder = packaged_variant(
        tmp_path, "package = linux-image-6.1.0-57-rt-amd64\n"
        "package_version = 6.1.1-0lab\n")
    v = variants.load(folder)
    with pytest.raises(LabError) as e:
        packaged.download([f"{v.package}={v.package_version}"], tmp_path, v)
    last = str(e.value).splitlines()[-1]
    assert "variant debian-x: linux-image-6.1.0-57-rt-amd64 6.1.1-0lab " \
        "is not in the archive apt reads" in last
    assert f"name it in {folder}/variant.conf as `package_debs = " \
        f"<folder>`" in last


def fake_deb(folder, package, version):
    pkg = folder / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True, exist_ok=True)
    (pkg / "DEBIAN" / "control").write_text(
        f"Package: {package}\nVersion: {version}\nArchitecture: amd64\n"
        f"Maintainer: x <x@example.org>\nDescription: x\n")
    deb = folder / f"{package}_{version}_amd64.deb"
    subprocess.run(["dpkg-deb", "-b", str(pkg), str(deb)], check=True,
                   capture_output=True)
    return deb


def test_package_debs_supplies_the_version_from_a_folder(tmp_path):
    folder = packaged_variant(
        tmp_path, "package = linux-image-6.1.0-57-rt-amd64\n"
        "package_version = 6.1.1-0lab\npackage_debs = debs\n")
    (folder / "debs").mkdir()
    deb = fake_deb(folder / "debs", "linux-image-6.1.0-57-rt-amd64",
                   "6.1.1-0lab")
    v = variants.load(folder)
    assert packaged.download([f"{v.package}=6.1.1-0lab"], tmp_path, v) == \
        [deb]
    assert packaged.field(deb, "Version") == "6.1.1-0lab"
    with pytest.raises(LabError, match=r"debian-x/variant.conf: "
                       r"package_debs has 0 file\(s\) "
                       r"linux-headers-6.1.0-57-rt-amd64_6.1.1-0lab_\*.deb"
                       r" in .*/debs, not one"):
        packaged.download(["linux-headers-6.1.0-57-rt-amd64=6.1.1-0lab"],
                          tmp_path, v)


def test_the_cache_keys_an_unpacked_package_by_its_version(tmp_path,
                                                           monkeypatch):
    """An unpacked 6.1.1-0lab is not what a variant asking 6.1.2-0lab
    boots: that one is fetched (here from package_debs, which lacks it)."""
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    old = tmp_path / "cache/packaged/linux-image-6.1.0-57-rt-amd64_6.1.1-0lab"
    old.mkdir(parents=True)
    (old / "build.json").write_text(json.dumps(
        {"recipe": packaged.RECIPE, "package_version": "6.1.1-0lab"}))
    folder = packaged_variant(
        tmp_path, "package = linux-image-6.1.0-57-rt-amd64\n"
        "package_version = 6.1.1-0lab\npackage_debs = debs\n")
    (folder / "debs").mkdir()
    assert packaged.fetch(variants.load(folder)).folder == old
    (folder / "variant.conf").write_text(
        "package = linux-image-6.1.0-57-rt-amd64\n"
        "package_version = 6.1.2-0lab\npackage_debs = debs\n")
    with pytest.raises(LabError, match=r"package_debs has 0 file\(s\) "
                       r"linux-image-6.1.0-57-rt-amd64_6.1.2-0lab_"):
        packaged.fetch(variants.load(folder))
