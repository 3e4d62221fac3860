# Probe plan: load softirq_load with $MODULE_ARGS, run softirq_probe with
# $PROBE_ARGS, and keep the samples, the module's counters, /proc/softirqs
# before and after, and the kernel log.  Both variables come from the host.
set -e
D=/sys/kernel/debug/softirq_load
cat /proc/softirqs > "$LAB/softirqs-before"
# shellcheck disable=SC2086
insmod /lib/modules/softirq_load.ko $MODULE_ARGS
# shellcheck disable=SC2086
softirq_probe $PROBE_ARGS -o /tmp/probe.jsonl
cp /tmp/probe.jsonl "$LAB/probe.jsonl.tmp"
mv "$LAB/probe.jsonl.tmp" "$LAB/probe.jsonl"
cat $D/stats > "$LAB/module-stats"
cat $D/vectors > "$LAB/module-vectors"
cat $D/batch_hist > "$LAB/batch-hist"
cat /proc/softirqs > "$LAB/softirqs-after"
rmmod softirq_load
dmesg > "$LAB/dmesg"
