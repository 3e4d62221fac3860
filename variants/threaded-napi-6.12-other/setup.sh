# Upstream's default: threads at SCHED_OTHER, left to the scheduler
lab-threaded-napi other 0 -
