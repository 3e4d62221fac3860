# Flags plan: does the emulator compute the flags after cmpxchg8b and
# cmpxchg16b right (guest/flagcheck)?  Writes flagcheck.txt and
# flagcheck-exit (0: right) into $LAB.
rc=0
flagcheck > "$LAB/flagcheck.txt" || rc=$?
echo "$rc" > "$LAB/flagcheck-exit"
