# NAPI in kernel threads, set up as an RT user would: every device's
# NAPI instances polled by threads of their own (napi/<dev>-<id>, made
# by writing 1 to /sys/class/net/<dev>/threaded), the backlog's by
# backlog_napi/<cpu> (thread_backlog_napi on the command line, or
# PREEMPT_RT), all SCHED_FIFO 50: below the RT task under test
# (cyclictest at 99), level with interrupt threads.  Where they run is
# left to the scheduler.  Prints each thread's policy and priority.
for dev in /sys/class/net/*; do
	# a device without NAPI (lo) refuses the write
	[ -e "$dev/device" ] || continue
	echo 1 > "$dev/threaded"
	echo "${dev##*/} threaded $(cat "$dev/threaded")"
done
threads=0
for task in /proc/[0-9]*; do
	read -r comm < "$task/comm" 2> /dev/null || continue
	case "$comm" in
	napi/* | backlog_napi/*)
		pid=${task#/proc/}
		chrt -f -p 50 "$pid"
		echo "$comm $(chrt -p "$pid" | sed 's/.*: //' | tr '\n' ' ')"
		threads=$((threads + 1)) ;;
	esac
done
if [ "$threads" = 0 ]; then
	echo "no NAPI thread: is thread_backlog_napi on the command line?"
	exit 1
fi
