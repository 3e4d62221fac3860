# NAPI in kernel threads, set up as an RT user would: every device's
# NAPI instances polled by threads of their own (napi/<dev>-<id>, made
# by writing 1 to /sys/class/net/<dev>/threaded), the backlog's by
# backlog_napi/<cpu> (thread_backlog_napi on the command line, or
# PREEMPT_RT), all SCHED_FIFO 50: below the RT task under test
# (cyclictest at 99), level with interrupt threads.  Where they run is
# left to the scheduler.
#
# Then it checks what it set, since a write the kernel ignores would
# leave a run that measures mainline-6.12 under this variant's name:
# each NIC's `threaded` reads back 1, each NIC has a napi/<dev>-* thread
# and each CPU a backlog_napi/<cpu> thread, every one at SCHED_FIFO 50.
# It prints what it found, one line a device or thread, and fails on
# the first check that does not hold, naming it.
nics=""
for dev in /sys/class/net/*; do
	# a device without NAPI (lo) refuses the write
	[ -e "$dev/device" ] || continue
	nic=${dev##*/}
	echo 1 > "$dev/threaded"
	threaded=$(cat "$dev/threaded")
	echo "$nic threaded $threaded"
	nics="$nics $nic"
done
threads=" "
for task in /proc/[0-9]*; do
	read -r comm < "$task/comm" 2> /dev/null || continue
	case "$comm" in
	napi/* | backlog_napi/*)
		pid=${task#/proc/}
		chrt -f -p 50 "$pid"
		got=$(chrt -p "$pid" | sed 's/.*: //' | tr '\n' ' ')
		echo "$comm $got"
		if [ "$got" != "SCHED_FIFO 50 " ]; then
			echo "setup check failed: $comm is at $got, not SCHED_FIFO 50"
			exit 1
		fi
		threads="$threads$comm " ;;
	esac
done
for nic in $nics; do
	if [ "$(cat "/sys/class/net/$nic/threaded")" != 1 ]; then
		echo "setup check failed: $nic's threaded reads" \
			"$(cat "/sys/class/net/$nic/threaded") after writing 1"
		exit 1
	fi
	case "$threads" in
	*" napi/$nic-"*) ;;
	*)
		echo "setup check failed: no napi/$nic-* thread:" \
			"$nic's NAPI is not threaded"
		exit 1 ;;
	esac
done
cpu=0
while [ "$cpu" -lt "$(nproc)" ]; do
	case "$threads" in
	*" backlog_napi/$cpu "*) ;;
	*)
		echo "setup check failed: no backlog_napi/$cpu thread:" \
			"is thread_backlog_napi on the command line?"
		exit 1 ;;
	esac
	cpu=$((cpu + 1))
done
echo "setup check passed: threaded NAPI on${nics:- no NIC};" \
	"$(echo $threads | wc -w) threads at SCHED_FIFO 50"
