// SPDX-License-Identifier: GPL-2.0
/*
 * flagcheck: are the flags right after cmpxchg8b and cmpxchg16b?
 *
 * QEMU 7.2's x86 translator called the helpers of these two instructions
 * without first writing back the flags state of the instructions before
 * them in the same translation block, so every flag but ZF came out of
 * a stale state (common/qemu/0003-*.patch).  Each check below sets CF,
 * ends the block, clears CF with an xor in the next block and then runs
 * the instruction: on a CPU, and in a QEMU that is right, CF is clear
 * afterwards.  Prints one line per instruction; exit 0 if both are right,
 * 1 if not.
 */
#include <stdint.h>
#include <stdio.h>

#define CF 0x1UL

static unsigned long after_cmpxchg8b(void)
{
	uint64_t mem = 0;
	unsigned long flags;

	asm volatile("stc\n\t"
		     "jmp 1f\n"
		     "1:\txor %%eax, %%eax\n\t"
		     "xor %%edx, %%edx\n\t"
		     "cmpxchg8b %1\n\t"
		     "pushf\n\t"
		     "pop %0"
		     : "=r" (flags), "+m" (mem)
		     : "b" (1), "c" (0)
		     : "rax", "rdx", "cc");
	return flags;
}

static unsigned long after_cmpxchg16b(void)
{
	unsigned __int128 mem __attribute__((aligned(16))) = 0;
	unsigned long flags;

	asm volatile("stc\n\t"
		     "jmp 1f\n"
		     "1:\txor %%eax, %%eax\n\t"
		     "xor %%edx, %%edx\n\t"
		     "cmpxchg16b %1\n\t"
		     "pushf\n\t"
		     "pop %0"
		     : "=r" (flags), "+m" (mem)
		     : "b" (1UL), "c" (0UL)
		     : "rax", "rdx", "cc");
	return flags;
}

static int report(const char *insn, unsigned long flags)
{
	int right = !(flags & CF);

	printf("%s flags=%#lx CF=%d %s\n", insn, flags, !right,
	       right ? "right" : "WRONG");
	return right;
}

int main(void)
{
	int right = report("cmpxchg8b", after_cmpxchg8b());

	right &= report("cmpxchg16b", after_cmpxchg16b());
	return right ? 0 : 1;
}
