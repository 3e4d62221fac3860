# Threads at SCHED_FIFO 50, left to the scheduler (README.md)
lab-threaded-napi fifo 50 -
