# Health plan: prove which kernel booted and what the guest can see.
# Writes kernel-release, version (/proc/version), cpus-online, nproc, the
# kernel command line and the booted kernel's own .config (from
# /proc/config.gz, where the kernel has it: Debian's do not) into $LAB,
# and the variant's set-up's output (setup.log) where it has one.
set -e
uname -r > "$LAB/kernel-release.tmp"
cat /proc/version > "$LAB/version.tmp"
cat /sys/devices/system/cpu/online > "$LAB/cpus-online.tmp"
nproc > "$LAB/nproc.tmp"
cat /proc/cmdline > "$LAB/cmdline.tmp"
for f in kernel-release version cpus-online nproc cmdline; do
	mv "$LAB/$f.tmp" "$LAB/$f"
done
if [ -f /proc/config.gz ]; then
	zcat /proc/config.gz > "$LAB/booted-config.tmp"
	mv "$LAB/booted-config.tmp" "$LAB/booted-config"
fi
SETUP=${SETUP:-} lab-setup
