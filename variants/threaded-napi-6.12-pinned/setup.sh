# Threads at SCHED_FIFO 50, each NIC's on CPU0, where its interrupt goes
lab-threaded-napi fifo 50 0
