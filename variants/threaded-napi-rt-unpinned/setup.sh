# Threads at SCHED_FIFO 50, left to the scheduler
lab-threaded-napi fifo 50 -
