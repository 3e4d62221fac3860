# Parallel-time plan: cpuspeed's loop rate on each CPU while BUSY of
# them run it at once, for each count in $BUSY (guest/cpuspeed, -b).
# Writes cpuspeed-b<N>.txt per count and cpuspeed-exit (0: all ran)
# into $LAB.
rc=0
for n in $BUSY; do
	cpuspeed -b "$n" > "$LAB/cpuspeed-b$n.txt" || rc=$?
done
echo "$rc" > "$LAB/cpuspeed-exit"
