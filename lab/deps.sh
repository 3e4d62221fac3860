#!/bin/sh
# Install the Debian packages the lab needs, only those missing; extra
# package names given as arguments too (the LAVA runner's).
# Plain sh: it must run on a fresh Debian 12 before python3 is there.
set -eu

# The second and third lines build the lab's QEMU (lab/build/qemubuild.py) from
# Debian's; the fourth rtla (lab/build/rtlabuild.py).  dwarves (pahole)
# builds the test module against Debian's packaged 6.12 headers, which
# ask BTF of modules (variants/debian-rt-6.12/).  The last line is the
# arm64 guest's (lab/docs/arm64.md): its cross compiler, its QEMU's
# package (whose source the lab's qemu-system-aarch64 is built from) and
# fdtput, which writes the CPU capacities into its device tree.
PACKAGES="linux-source-6.1 gcc make libc6-dev libelf-dev libssl-dev bc flex
dpkg-dev patch meson ninja-build libglib2.0-dev libpixman-1-dev libfdt-dev
libcap-ng-dev libattr1-dev libslirp-dev
linux-source-6.12 libtracefs-dev libtraceevent-dev pkg-config
bison cpio xz-utils git perl ccache qemu-system-x86 busybox-static rt-tests
stress-ng iperf3 trace-cmd sysstat dwarves b4 python3 python3-numpy python3-scipy python3-matplotlib
python3-pytest python3-pytest-xdist python3-hypothesis
gcc-aarch64-linux-gnu qemu-system-arm device-tree-compiler $*"

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -z "$missing" ]; then
	echo "deps: all $(echo $PACKAGES | wc -w) Debian packages present"
	exit 0
fi

echo "deps: installing$missing"
if [ "$(id -u)" -eq 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "deps: missing packages:$missing; run as root: apt-get install$missing" >&2
	exit 2
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; refresh once, then install.
$SUDO apt-get update -q >/dev/null || {
	echo "deps: apt-get update failed; are Debian's mirrors reachable?" >&2
	exit 2
}
# shellcheck disable=SC2086
if ! $SUDO apt-get install -y -q $missing >/dev/null; then
	echo "deps: apt-get install failed for:$missing (disk full? run it by hand to see why)" >&2
	exit 2
fi
echo "deps: installed$missing"
