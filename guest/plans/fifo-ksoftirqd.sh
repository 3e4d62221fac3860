# SCHED_FIFO ksoftirqd plan: give ksoftirqd/0 the SCHED_FIFO priority
# $KSOFTIRQD_PRIO (as audio and RT set-ups do), load softirq_load with
# $MODULE_ARGS (periodic triggers on CPU0) for $DURATION seconds, and keep
# ksoftirqd/0's CPU time, the module's counters and /proc/softirqs.
set -e
D=/sys/kernel/debug/softirq_load
pid=""
for d in /proc/[0-9]*; do
	read -r comm < "$d/comm" 2>/dev/null || continue
	[ "$comm" = ksoftirqd/0 ] && pid=${d#/proc/}
done
[ -n "$pid" ] || { echo "no ksoftirqd/0"; exit 1; }
chrt -f -p "$KSOFTIRQD_PRIO" "$pid"
chrt -p "$pid" > "$LAB/ksoftirqd-policy"
read -r before _ < "/proc/$pid/schedstat"
cat /proc/softirqs > "$LAB/softirqs-before"
# shellcheck disable=SC2086
insmod /lib/modules/softirq_load.ko $MODULE_ARGS
sleep "$DURATION"
read -r after _ < "/proc/$pid/schedstat"
cat $D/stats > "$LAB/module-stats"
cat $D/vectors > "$LAB/module-vectors"
cat /proc/softirqs > "$LAB/softirqs-after"
rmmod softirq_load
echo "ksoftirqd/0 $((after - before)) ns in $DURATION s" > "$LAB/ksoftirqd-ns"
dmesg > "$LAB/dmesg"
