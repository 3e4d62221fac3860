# Scenario plan (one run of a scenario; see lab/run/scenario.py for the file
# format).  Background commands see DURATION and CPUS (the online
# CPUs).  Parameters from the host: DURATION, CYCLICTEST, MODULE_ARGS,
# DISK, NBACKGROUND and BACKGROUND_0.. (loads that run through every
# phase and are stopped when the phases end), PROBE_ARGS,
# PROBE_MODULE_ARGS, TRACE (non-empty: a trace phase of TRACE_DURATION
# seconds), TIMERLAT (non-empty: an rtla timerlat phase with
# auto-analysis at this many us), PIN (a CPU: cyclictest's threads are
# pinned there instead of set free), PHASE_US and BG_PHASE_US (waits that
# give each boot its own phase between the periodic loads,
# lab/run/scenario.py), SETUP (the variant's setup.sh, run first:
# guest/bin/lab-setup), SOFTIRQ_RATES (seconds between samples of each
# CPU's softirq rates through the measurement), CAPACITIES (each CPU's
# capacity as the kernel must have it: guest/bin/lab-capacities), SYSCTL
# (name=value settings made before any load).
# Writes into $LAB: cyclictest.json (with histograms), cyclictest.out
# (every sample, -v), cyclictest-start.txt, affinity.txt,
# softirqs-before/after, ksoftirqd-before/after, net-before/after (the
# network's and the scratch disk's counters), softirq-rates (with
# SOFTIRQ_RATES),
# bg-N.log, module-stats, setup.log (with SETUP),
# probe.jsonl, measurements; with TRACE also the same cyclictest files
# named cyclictest-traced.*, trace.dat and trace-stats.
set -e
KO=/lib/modules/softirq_load.ko
# The background loads run through every phase (measurement, trace,
# timerlat) and the plan stops them when the phases end: the phases take
# more guest time than their cyclictest (its start, its output, the
# copies to the 9p share, trace-cmd), so a load that ran for a fixed time
# ended before them (a 3 s measurement with a trace phase under a UDP
# flood took 36 s).  DURATION only bounds a load the plan never stops,
# and the guest's clock jumps while its vCPUs wait on I/O (a 60 s
# measurement under filesystem noise once spanned 2275 s of guest time),
# so the bound is a day: a plan that never ends meets the watchdog first.
MEASURE=$DURATION
DURATION=86400
# the guest's CPUs (the scenario's cpus), for loads sized to the guest
CPUS=$(nproc)
export DURATION CPUS
EVENTS="-e irq:softirq_raise -e irq:softirq_entry -e irq:softirq_exit
-e irq:irq_handler_entry -e irq:irq_handler_exit -e sched:sched_waking
-e sched:sched_wakeup -e sched:sched_switch -e sched:sched_migrate_task
-e irq_vectors:local_timer_entry -e irq_vectors:local_timer_exit
-e irq_vectors:reschedule_entry -e irq_vectors:reschedule_exit
-e irq_vectors:call_function_single_entry
-e irq_vectors:call_function_single_exit -e timer:hrtimer_start
-e timer:hrtimer_expire_entry"
# the packets each NAPI poll took: why each NET_RX run ended
# (lab/analyse/trace.py net_rx_ends), where the kernel has the event
[ ! -d /sys/kernel/tracing/events/napi/napi_poll ] ||
	EVENTS="$EVENTS -e napi:napi_poll"
# the events this kernel has: irq_vectors is x86's alone
have=""
for e in $EVENTS; do
	[ "$e" = -e ] || [ ! -d "/sys/kernel/tracing/events/${e%%:*}/${e#*:}" ] ||
		have="$have -e $e"
done
EVENTS=$have

# The end of a phase, in guest seconds since boot: run.json's phases_s.
mark() {
	read -r up _ < /proc/uptime
	echo "$1 $up" >> "$LAB/phases"
}

# Nanoseconds on a CPU of every ksoftirqd thread (schedstat's first field)
ksoftirqd_ns() {
	for d in /proc/[0-9]*; do
		read -r comm < "$d/comm" 2>/dev/null || continue
		case "$comm" in
		ksoftirqd/*)
			{ read -r ns _ < "$d/schedstat"; } 2>/dev/null || continue
			echo "$comm $ns" ;;
		esac
	done
}

# Receive counters of every network interface, UDP's, softnet_stat's and
# the scratch disk's, with the time read: the loads' metrics over
# cyclictest's run alone (lab/analyse/results.py counter_metrics).
net_counters() {
	read -r up _ < /proc/uptime
	echo "uptime $up"
	for d in /sys/class/net/*; do
		read -r n < "$d/statistics/rx_packets" &&
			echo "rx_packets ${d##*/} $n"
		read -r n < "$d/statistics/rx_bytes" &&
			echo "rx_bytes ${d##*/} $n"
	done
	grep '^Udp:' /proc/net/snmp
	sed 's/^/softnet /' /proc/net/softnet_stat
	[ ! -f /sys/block/vda/stat ] || sed 's/^/disk vda /' /sys/block/vda/stat
}

[ -z "${CAPACITIES:-}" ] || lab-capacities $CAPACITIES > "$LAB/capacities"
for s in ${SYSCTL:-}; do
	sysctl -w "$s" >> "$LAB/sysctl.txt"
done
SETUP=${SETUP:-} lab-setup
if [ "$DISK" != 0 ]; then
	mke2fs -q /dev/vda
	mkdir -p /mnt/disk
	mount -t ext4 /dev/vda /mnt/disk
fi
[ -z "$MODULE_ARGS" ] || insmod $KO $MODULE_ARGS
[ -z "$PHASE_US" ] || usleep "$PHASE_US"

i=0
bg=""
while [ "$i" -lt "$NBACKGROUND" ]; do
	eval "cmd=\$BACKGROUND_$i"
	# its own process group, so that stopping it stops all it started;
	# a load that ends by itself leaves its exit code in /tmp
	setsid sh -c "$cmd; echo \$? > /tmp/bg-$i.ended" \
		> "$LAB/bg-$i.log" 2>&1 &
	bg="$bg $!"
	i=$((i + 1))
done
[ -z "$BG_PHASE_US" ] || usleep "$BG_PHASE_US"
mark setup

# cyclictest for $1 seconds, every sample printed (-v, unbuffered) to
# /tmp/cyclictest.out, JSON to $2; prints its pid's thread ids with their
# allowed CPUs, and writes to $3 how many samples each thread had
# printed when they were set free (lab/analyse/cyclictest.py drops those).
# Debian's cyclictest 2.4 pins each thread to a CPU even without -a,
# which hides the placement effect under test, so every thread's
# affinity is widened (or pinned to $PIN) once the threads have pinned
# themselves: each sets its affinity, then SCHED_FIFO.  No -h: with a
# histogram cyclictest gives every thread the same interval and ignores
# -d; the lab's statistics read the samples (-v).
run_cyclictest() {
	secs=$1 json=$2 startfile=$3
	# shellcheck disable=SC2086
	cyclictest $CYCLICTEST -m -q -v -u -D "$secs" \
		--json="$json" > /tmp/cyclictest.out 2>&1 &
	ct=$!
	# Until the threads are set free this shell runs just below them: a
	# UDP flood on both CPUs otherwise holds it (and its taskset and awk)
	# off for the whole run, and no sample would count.
	chrt -f -p 98 $$ > /dev/null 2>&1 || true
	# Few forks while cyclictest starts: in single-threaded TCG and under
	# -icount a busy vCPU can hold the other one off for milliseconds
	# (lab/docs/fidelity.md), and that would land in the first samples.
	# So the wait reads /proc with shell builtins only.
	nthreads=$(echo " $CYCLICTEST " | sed -n 's/.* -t *\([0-9]*\) .*/\1/p')
	tries=0
	while [ $tries -lt 200 ]; do
		fifo=0
		for t in /proc/$ct/task/*; do
			{ read -r st < "$t/stat"; } 2> /dev/null || continue
			# shellcheck disable=SC2086
			set -- $st
			if [ "${41:-0}" = 1 ]; then fifo=$((fifo + 1)); fi
		done
		[ $fifo -lt "${nthreads:-1}" ] || break
		usleep 1000
		tries=$((tries + 1))
	done
	mask=ff
	[ -z "$PIN" ] || mask=$(printf '%x' $((1 << PIN)))
	# one thread may still pin itself after the call: call again
	tries=0
	while [ $tries -lt 50 ]; do
		taskset -a -p "$mask" $ct > /dev/null 2>&1 || true
		[ -z "$PIN" ] || break
		grep -h Cpus_allowed_list /proc/$ct/task/*/status 2> /dev/null |
			grep -q -v '[-,]' || break
		usleep 2000
		tries=$((tries + 1))
	done
	# the record is taken a little later, so a late self-pinning shows
	usleep 100000
	grep -H Cpus_allowed_list /proc/$ct/task/*/status 2> /dev/null |
		sed 's|/proc/[0-9]*/task/\([0-9]*\)/status:Cpus_allowed_list:[[:space:]]*|\1 |'
	# Count what is printed now, not to the file's end: at 8 vCPUs under
	# icount awk reads slower than 8 threads print, so it chased the
	# file to cyclictest's end and every sample counted as before.
	size=$(stat -c %s /tmp/cyclictest.out)
	head -c "$size" /tmp/cyclictest.out |
		awk -F: '$1 ~ /^ *[0-9]+$/ && $2 ~ /^ *[0-9]+$/ { n[$1 + 0]++ }
		END { for (t in n) print t, n[t] }' > "$startfile"
	chrt -o -p 0 $$ > /dev/null 2>&1 || true
	# lab/analyse/trace.py explains only samples after this point (later than
	# the counts above: lab/analyse/cyclictest.py drops 50 ms more)
	echo "lab: affinity widened" 2> /dev/null \
		> /sys/kernel/tracing/trace_marker || true
	wait $ct || true
}

# cyclictest's own min/avg/max per thread, from its JSON ($2), as "name
# value unit" lines for $LAB/measurements (a LAVA job reports them as
# test cases; the host computes everything else from the samples).
latency_measurements() {
	awk -v run="$1" '
		/"thread": *[{]/ { threads = 1; next }
		threads && /^ *"[0-9]+": *[{]/ { t = $1; gsub(/[^0-9]/, "", t) }
		threads && /^ *"(min|avg|max)":/ {
			k = $1; gsub(/[^a-z]/, "", k)
			printf "%s-t%d-%s %d us\n", run, t, k, $2
		}' "$2"
}

# the module's counters over the measurement alone (module-stats covers
# the module's whole life)
SL=/sys/kernel/debug/softirq_load
[ -z "$MODULE_ARGS" ] || echo 1 > $SL/reset
# The counters are read next to cyclictest's run and kept in /tmp until
# it ends: under icount with sleep=off the guest's clock jumps ahead
# while both vCPUs idle, as they do while the plan waits on the 9p share
# (for seconds, with QEMU's I/O thread busy with a NIC flood).
cat /proc/softirqs > /tmp/softirqs-before
ksoftirqd_ns > /tmp/ksoftirqd-before
net_counters > /tmp/net-before
# Each CPU's softirqs per second, every vector, through the measurement:
# which vector stopped running where, when a flood stalls a kernel.
# mpstat writes to tmpfs and flushes when SIGINT ends it (it sets its own
# handler when run without a count); its first line is the uptime at start.
if [ -n "${SOFTIRQ_RATES:-}" ]; then
	read -r up _ < /proc/uptime
	echo "uptime $up" > /tmp/softirq-rates
	LC_ALL=C mpstat -I SCPU "$SOFTIRQ_RATES" >> /tmp/softirq-rates 2>&1 &
	rates=$!
fi
run_cyclictest "$MEASURE" /tmp/cyclictest.json /tmp/cyclictest-start.txt \
	> /tmp/affinity.txt
if [ -n "${SOFTIRQ_RATES:-}" ]; then
	kill -INT $rates 2> /dev/null || true
	wait $rates || true
fi
net_counters > /tmp/net-after
ksoftirqd_ns > /tmp/ksoftirqd-after
cat /proc/softirqs > /tmp/softirqs-after
[ -z "$MODULE_ARGS" ] || cat $SL/stats > "$LAB/module-stats-measured"
cp /tmp/cyclictest.json /tmp/cyclictest.out /tmp/cyclictest-start.txt \
	/tmp/affinity.txt /tmp/net-before /tmp/net-after \
	/tmp/softirqs-before /tmp/softirqs-after /tmp/ksoftirqd-before \
	/tmp/ksoftirqd-after "$LAB/"
[ -z "${SOFTIRQ_RATES:-}" ] || cp /tmp/softirq-rates "$LAB/"
latency_measurements cyclictest /tmp/cyclictest.json > /tmp/measurements
mark measure

# Trace phase, same load: cyclictest again, for TRACE_DURATION seconds
# (the measurement's unless the scenario is longer than the ring buffer
# holds), with the events traced into a ring buffer that holds the whole
# phase (24 MB per CPU; measured: 2 MB for 10 s of long-block, while 8 MB
# lost up to 80,000 of 300,000 events in 10 s of net-noise).  Its latencies
# against the untraced run give the tracing overhead; lab/analyse/trace.py finds
# the worst wake-ups in the trace and explains them.  The trace clock is
# CLOCK_MONOTONIC, cyclictest's: the default per-CPU clock drifts from it
# by a millisecond across a 5 ms softirq when the TSC is unstable.
if [ -n "$TRACE" ]; then
	# shellcheck disable=SC2086
	trace-cmd start -C mono -b 24576 $EVENTS > /dev/null
	run_cyclictest "$TRACE_DURATION" /tmp/traced.json \
		/tmp/traced-start.txt > /dev/null
	trace-cmd stop > /dev/null
	# the ring buffer's own account: overruns and dropped events per CPU
	for f in /sys/kernel/tracing/per_cpu/cpu*/stats; do
		echo "${f%/stats}" | sed 's|.*/|# |'
		cat "$f"
	done > "$LAB/trace-stats" 2>/dev/null || true
	cp /tmp/traced.json "$LAB/cyclictest-traced.json"
	cp /tmp/cyclictest.out "$LAB/cyclictest-traced.out"
	cp /tmp/traced-start.txt "$LAB/cyclictest-traced-start.txt"
	latency_measurements cyclictest-traced /tmp/traced.json >> /tmp/measurements
	trace-cmd extract -o /tmp/trace.dat > /dev/null 2>&1
	cp /tmp/trace.dat "$LAB/trace.dat"
	trace-cmd reset > /dev/null
	mark trace
fi

# rtla's second opinion (lab/docs/traces.md): timerlat's threads, one
# per CPU and pinned, under the same module load, stopped at the first
# latency over $TIMERLAT us and explained by its auto-analysis.  Only the
# analysis is kept (--aa-only, not -a): the lab reads nothing else, and
# rtla's per-sample summary made the phase three times longer (long-block:
# 9.9 s of host time against 3.1 s).
if [ -n "$TIMERLAT" ]; then
	(cd /tmp && rtla timerlat top -q --aa-only "$TIMERLAT" \
		-d "${MEASURE}s") \
		> "$LAB/timerlat.txt" 2>&1 || echo "rtla timerlat: exit $?" \
		>> "$LAB/timerlat.txt"
	mark timerlat
fi

# The phases are over: stop the loads.  One that had already ended did
# not load every phase, and the run fails (below) once all is kept.
ended=$(cd /tmp && for f in bg-*.ended; do
	[ ! -f "$f" ] || echo "${f%.ended}.log (exit $(cat "$f"))"
done)
# The shell of each load dies at once; wait for its whole process group
# (the load itself finishes its batch and prints what it did), for 5 s
# at most, then kill what is left: a load still running would overlap
# the probe phase, and its last lines would miss the log.
for p in $bg; do
	kill -TERM "-$p" 2> /dev/null || true
	tries=0
	while kill -0 "-$p" 2> /dev/null && [ $tries -lt 500 ]; do
		usleep 10000
		tries=$((tries + 1))
	done
	kill -KILL "-$p" 2> /dev/null || true
	wait "$p" || true
done
[ -z "$MODULE_ARGS" ] || { cat /sys/kernel/debug/softirq_load/stats > "$LAB/module-stats"; rmmod softirq_load; }

if [ -n "$PROBE_ARGS" ]; then
	# shellcheck disable=SC2086
	insmod $KO $PROBE_MODULE_ARGS
	# shellcheck disable=SC2086
	softirq_probe $PROBE_ARGS -o /tmp/probe.jsonl
	cp /tmp/probe.jsonl "$LAB/probe.jsonl"
	rmmod softirq_load
	mark probe
fi
cp /tmp/measurements "$LAB/measurements"
dmesg > "$LAB/dmesg"
mark collect
if [ -n "$ended" ]; then
	echo "a background load ended before the phases did:" $ended >&2
	exit 1
fi
