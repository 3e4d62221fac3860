# Module-load plan: load softirq_load with $MODULE_ARGS (periodic triggers),
# optionally run $HOG (a command line, e.g. an RT CPU hog) alongside, wait
# $DURATION seconds, and keep the module's counters and /proc/softirqs.
set -e
D=/sys/kernel/debug/softirq_load
cat /proc/softirqs > "$LAB/softirqs-before"
# shellcheck disable=SC2086
insmod /lib/modules/softirq_load.ko $MODULE_ARGS
if [ -n "$HOG" ]; then
	# shellcheck disable=SC2086
	$HOG > /tmp/hog.log 2>&1 &
	hog=$!
fi
sleep "$DURATION"
cat $D/stats > "$LAB/module-stats.tmp"
mv "$LAB/module-stats.tmp" "$LAB/module-stats"
cat $D/vectors > "$LAB/module-vectors"
cat $D/batch_hist > "$LAB/batch-hist"
cat /proc/softirqs > "$LAB/softirqs-after"
if [ -n "$HOG" ]; then
	wait "$hog" || true
	cp /tmp/hog.log "$LAB/hog.log"
fi
rmmod softirq_load
dmesg > "$LAB/dmesg"
