"""Stage 3: read the run folders: cyclictest, traces, per-boot
values, verdicts, replication."""
