# Health plan: prove which kernel booted and what the guest can see.
# Writes kernel-release, cpus-online, nproc, the kernel command line and
# the booted kernel's own .config (from /proc/config.gz) into $LAB.
set -e
uname -r > "$LAB/kernel-release.tmp"
cat /sys/devices/system/cpu/online > "$LAB/cpus-online.tmp"
nproc > "$LAB/nproc.tmp"
zcat /proc/config.gz > "$LAB/booted-config.tmp"
cat /proc/cmdline > "$LAB/cmdline.tmp"
for f in kernel-release cpus-online nproc booted-config cmdline; do
	mv "$LAB/$f.tmp" "$LAB/$f"
done
