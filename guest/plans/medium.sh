# Medium plan: what the emulator's virtual time gives a guest.
# cpuspeed's loop rate on each CPU while BUSY of them run it at once, for
# each count in $BUSY (guest/cpuspeed, -b), then the round trip of a
# store between CPU0 and CPU1 (guest/pingpong).  Writes
# cpuspeed-b<N>.txt per count, pingpong.txt and medium-exit (0: all
# ran) into $LAB.
rc=0
for n in $BUSY; do
	cpuspeed -b "$n" > "$LAB/cpuspeed-b$n.txt" || rc=$?
done
pingpong -n 2000 > "$LAB/pingpong.txt" || rc=$?
echo "$rc" > "$LAB/medium-exit"
