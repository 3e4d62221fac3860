"""Stage 1: sources, kernels, the guest's initramfs, the lab's QEMU
and rtla, a posted series."""
