# Scenario plan (one run of a scenario; see lab/scenario.py for the file
# format).  Parameters from the host: DURATION, CYCLICTEST, MODULE_ARGS,
# DISK, NBACKGROUND and BACKGROUND_0.., PROBE_ARGS, PROBE_MODULE_ARGS.
# Writes into $LAB: cyclictest.json (with histograms), affinity.txt,
# softirqs-before/after, ksoftirqd-before/after, bg-N.log, module-stats,
# probe.jsonl.
set -e
export DURATION		# background commands may use it
KO=/lib/modules/softirq_load.ko

# utime + stime, in clock ticks, of every ksoftirqd thread
ksoftirqd_ticks() {
	for d in /proc/[0-9]*; do
		read -r comm < "$d/comm" 2>/dev/null || continue
		case "$comm" in
		ksoftirqd/*)
			# fields 14 and 15 of stat, after the "(comm)" field
			set -- $(sed 's/.*) //' "$d/stat")
			echo "$comm $((${12} + ${13}))" ;;
		esac
	done
}

if [ "$DISK" != 0 ]; then
	mke2fs -q /dev/vda
	mkdir -p /mnt/disk
	mount -t ext4 /dev/vda /mnt/disk
fi
[ -z "$MODULE_ARGS" ] || insmod $KO $MODULE_ARGS

cat /proc/softirqs > "$LAB/softirqs-before"
ksoftirqd_ticks > "$LAB/ksoftirqd-before"

i=0
bg=""
while [ "$i" -lt "$NBACKGROUND" ]; do
	eval "cmd=\$BACKGROUND_$i"
	sh -c "$cmd" > "$LAB/bg-$i.log" 2>&1 &
	bg="$bg $!"
	i=$((i + 1))
done

# Threads are never pinned: Debian's cyclictest 2.4 pins each thread to a
# CPU even without -a, which hides the placement effect under test, so
# widen every thread's affinity as soon as the threads exist.
# shellcheck disable=SC2086
cyclictest $CYCLICTEST -m -q -D "$DURATION" -h 20000 \
	--json=/tmp/cyclictest.json > /tmp/cyclictest.out 2>&1 &
ct=$!
nthreads=$(echo " $CYCLICTEST " | sed -n 's/.* -t *\([0-9]*\) .*/\1/p')
want=$((${nthreads:-1} + 1))
tries=0
while [ "$(ls /proc/$ct/task | wc -l)" -lt "$want" ] && [ $tries -lt 200 ]; do
	usleep 1000
	tries=$((tries + 1))
done
for t in /proc/$ct/task/*; do
	taskset -p ff "${t##*/}" > /dev/null
done
for t in /proc/$ct/task/*; do
	echo "${t##*/} $(sed -n 's/Cpus_allowed_list:[[:space:]]*//p' "$t/status")"
done > "$LAB/affinity.txt"
wait $ct
cp /tmp/cyclictest.json "$LAB/cyclictest.json"

ksoftirqd_ticks > "$LAB/ksoftirqd-after"
cat /proc/softirqs > "$LAB/softirqs-after"
for p in $bg; do
	wait "$p" || echo "background $p failed" >&2
done
[ -z "$MODULE_ARGS" ] || { cat /sys/kernel/debug/softirq_load/stats > "$LAB/module-stats"; rmmod softirq_load; }

if [ -n "$PROBE_ARGS" ]; then
	# shellcheck disable=SC2086
	insmod $KO $PROBE_MODULE_ARGS
	# shellcheck disable=SC2086
	softirq_probe $PROBE_ARGS -o /tmp/probe.jsonl
	cp /tmp/probe.jsonl "$LAB/probe.jsonl"
	rmmod softirq_load
fi
dmesg > "$LAB/dmesg"
