// SPDX-License-Identifier: GPL-2.0
/*
 * rtscope_lab: the test driver of heursch-2001 (§2.7, §3.1) for the rtscope kernel lab.
 *
 * The paper measured two things with hardware it controlled:
 *  - the interrupt response time (IRT): "the time in between an external peripheral device
 *    generates an interrupt and the first command of the interrupt service routine". A program
 *    wrote to the parallel port's output, a wire fed that bit back into the port's interrupt
 *    input, so the interrupt followed the outb() at once;
 *  - the process dispatch latency (PDLT) while a low-priority process runs the read() of a test
 *    driver "/dev/measure": a for-loop of 1200 iterations with N preemption points
 *    (`if (current->need_resched) schedule();` every 1200/(N+1) iterations), and an interrupt
 *    whose handler wakes a high-priority process (Figs. 3-8).
 *
 * Here the device is QEMU's emulated ISA parallel port (isa-parallel, I/O 0x378, IRQ 7). In its
 * software mode, writing the control register with SELECT and INIT set and STROBE clear, while
 * the interrupt-enable bit (INTEN) is already set, raises the port's interrupt line; reading the
 * status register lowers it. That is the paper's wire: an outb() raises a device interrupt.
 *
 * /dev/rtscope_lab answers three ioctls:
 *  RTL_IOC_IRT   raise the interrupt `count` times from process context and return, per sample,
 *                the clock read just before the outb() → the clock read by the handler's first
 *                statement (ns, CLOCK_MONOTONIC);
 *  RTL_IOC_RUN   the paper's driver call: a loop of `loops` iterations with `points` preemption
 *                points, raising the interrupt at iteration `raise_at` (0: never);
 *  RTL_IOC_WAIT  block until the next interrupt; return its raise and handler times and when
 *                this task ran again (the producer of the PDLT scan).
 *
 * The handler is registered with IRQF_NO_THREAD so it runs in hard interrupt context on
 * PREEMPT_RT as well (forced threading would otherwise move it into a thread), and wakes the
 * producer through a simple wait queue, whose raw spinlock may be taken there on PREEMPT_RT.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/interrupt.h>
#include <linux/ioport.h>
#include <linux/io.h>
#include <linux/swait.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/sched.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/cpumask.h>

static unsigned int io = 0x378;
module_param(io, uint, 0444);
MODULE_PARM_DESC(io, "parallel port base I/O address");
static unsigned int irq = 7;
module_param(irq, uint, 0444);
MODULE_PARM_DESC(irq, "parallel port interrupt line");

/* Register offsets and control bits of a PC parallel port. */
#define LPT_STATUS 1
#define LPT_CONTROL 2
#define CTR_STROBE 0x01
#define CTR_INIT 0x04
#define CTR_SELECT 0x08
#define CTR_INTEN 0x10
/* SELECT and INIT high, STROBE low, interrupts on: written again, it raises the interrupt. */
#define CTR_RAISE (CTR_SELECT | CTR_INIT | CTR_INTEN)

#define RTL_MAX_IRT 100000
#define RTL_MAX_LOOPS 100000000u
#define RTL_WAIT_MS 200

struct rtl_irt {
	__u32 count;	/* in: samples wanted */
	__u32 timeouts; /* out: raises whose handler did not run within 10 ms */
	__u64 samples;	/* in: user pointer to `count` u64 (ns) */
	__s32 cpu;	/* out: the CPU the samples were taken on */
	__u32 pad;
};

struct rtl_run {
	__u32 loops;	/* in */
	__u32 points;	/* in: preemption points, 0 ..= loops - 1 */
	__u32 raise_at; /* in: raise the interrupt at this iteration (1 ..= loops - 1), 0 = never */
	__u32 points_done; /* out: preemption points the loop passed */
	__u64 t_start;	/* out: ns before the first iteration */
	__u64 t_raise;	/* out: ns just before the outb() (0 if not raised) */
	__u64 t_end;	/* out: ns after the last iteration */
	__u64 sink;	/* out: the loop's result, so the compiler keeps the loop */
};

struct rtl_wait {
	__u64 t_raise; /* out: the raise this wake-up answers (as the raiser read it) */
	__u64 t_isr;   /* out: the handler's first clock read */
	__u64 t_woken; /* out: this task running again in the driver after schedule() */
	__u32 timed_out;
	__u32 pad;
};

#define RTL_IOC_IRT _IOWR('R', 1, struct rtl_irt)
#define RTL_IOC_RUN _IOWR('R', 2, struct rtl_run)
#define RTL_IOC_WAIT _IOWR('R', 3, struct rtl_wait)

static DECLARE_SWAIT_QUEUE_HEAD(rtl_wq);
static DEFINE_MUTEX(rtl_lock);
/* Written by the raiser before the outb(), read by the handler and the producer. */
static u64 rtl_t_raise;
/* Written by the handler. */
static u64 rtl_t_isr;
static atomic_t rtl_gen = ATOMIC_INIT(0);
static bool rtl_irq_ok;

static irqreturn_t rtl_isr(int i, void *dev)
{
	/* The first statement: the paper's "first command of the interrupt service routine". */
	u64 now = ktime_get_ns();

	/* Reading the status register lowers QEMU's line (and acknowledges a real port). */
	inb(io + LPT_STATUS);
	WRITE_ONCE(rtl_t_isr, now);
	/* Publish t_isr before the generation the waiters look at. */
	atomic_inc_return_release(&rtl_gen);
	swake_up_one(&rtl_wq);
	return IRQ_HANDLED;
}

static inline void rtl_raise(void)
{
	WRITE_ONCE(rtl_t_raise, ktime_get_ns());
	outb(CTR_RAISE, io + LPT_CONTROL);
}

/* Raise once and wait (interrupts on) until the handler ran or 10 ms passed; the raise time. */
static bool rtl_raise_and_wait(u64 *t_raise)
{
	int gen = atomic_read(&rtl_gen);
	u64 give_up;

	rtl_raise();
	*t_raise = READ_ONCE(rtl_t_raise);
	give_up = *t_raise + 10 * NSEC_PER_MSEC;
	/* The handler runs between two instructions of this loop. */
	while (atomic_read_acquire(&rtl_gen) == gen) {
		if (ktime_get_ns() > give_up)
			return false;
		cpu_relax();
	}
	return true;
}

static int rtl_irq_cpu = -1;

/*
 * Deliver the interrupt to the CPU that raises it, as the paper's single CPU did. On x86 an
 * I/O APIC line moves to its new CPU while its next interrupt is acknowledged (the redirection
 * entry is rewritten then), so one raise is spent on the move and none is measured with it;
 * the affinity is set only when the CPU changes.
 */
static void rtl_irq_here(void)
{
	int cpu = raw_smp_processor_id();
	u64 t;

	if (cpu == READ_ONCE(rtl_irq_cpu))
		return;
	irq_set_affinity(irq, cpumask_of(cpu));
	WRITE_ONCE(rtl_irq_cpu, cpu);
	rtl_raise_and_wait(&t);
}

static long rtl_irt(struct rtl_irt __user *uarg)
{
	struct rtl_irt a;
	u64 *buf;
	u32 i;
	long ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.count == 0 || a.count > RTL_MAX_IRT)
		return -EINVAL;
	buf = kvcalloc(a.count, sizeof(u64), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	a.timeouts = 0;
	a.cpu = raw_smp_processor_id();
	rtl_irq_here();
	for (i = 0; i < a.count; i++) {
		u64 t0;

		if (rtl_raise_and_wait(&t0)) {
			buf[i] = READ_ONCE(rtl_t_isr) - t0;
		} else {
			a.timeouts++;
			buf[i] = U64_MAX;
		}
		if (signal_pending(current)) {
			a.count = i + 1;
			break;
		}
		cond_resched();
	}
	if (copy_to_user(u64_to_user_ptr(a.samples), buf, (size_t)a.count * sizeof(u64)) ||
	    copy_to_user(uarg, &a, sizeof(a)))
		ret = -EFAULT;
	kvfree(buf);
	return ret;
}

/*
 * The test driver's call (heursch-2001 §2.7): `for (i = 1; i < loops; i++)` with a preemption
 * point at every multiple of loops / (points + 1). The paper's point is
 * `if (current->need_resched) schedule();`; cond_resched() is today's form of it (a no-op where
 * the kernel preempts by itself: preempt=full and PREEMPT_RT).
 */
static noinline long rtl_run(struct rtl_run __user *uarg)
{
	struct rtl_run a;
	u32 i, every, rem;
	u64 acc = 0x9e3779b97f4a7c15ull;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.loops < 2 || a.loops > RTL_MAX_LOOPS || a.points >= a.loops || a.raise_at >= a.loops)
		return -EINVAL;
	/*
	 * As in the paper, the modulo test runs in every iteration whatever the number of points
	 * ("i%1200 means no Preemption Point"), so the call's length does not depend on it.
	 */
	every = a.loops / (a.points + 1);
	a.points_done = 0;
	a.t_raise = 0;
	/* Before the clock starts: a move of the line raises one interrupt of its own. */
	rtl_irq_here();
	a.t_start = ktime_get_ns();
	for (i = 1; i < a.loops; i++) {
		if (i == a.raise_at) {
			rtl_raise();
			a.t_raise = READ_ONCE(rtl_t_raise);
		}
		/* The loop's work: a multiply-add the compiler cannot fold away. */
		acc = acc * 6364136223846793005ull + i;
		rem = i % every;
		/* Keep the division even where no point can follow (points = 0). */
		OPTIMIZER_HIDE_VAR(rem);
		if (rem == 0 && a.points_done < a.points) {
			a.points_done++;
			cond_resched();
		}
	}
	a.t_end = ktime_get_ns();
	a.sink = acc;
	if (copy_to_user(uarg, &a, sizeof(a)))
		return -EFAULT;
	return 0;
}

static long rtl_wait(struct rtl_wait __user *uarg)
{
	struct rtl_wait a = { 0 };
	int gen = atomic_read(&rtl_gen);
	long r;

	r = swait_event_interruptible_timeout_exclusive(rtl_wq, atomic_read_acquire(&rtl_gen) != gen,
							msecs_to_jiffies(RTL_WAIT_MS));
	a.t_woken = ktime_get_ns();
	if (r < 0)
		return r;
	if (r == 0) {
		a.timed_out = 1;
	} else {
		a.t_isr = READ_ONCE(rtl_t_isr);
		a.t_raise = READ_ONCE(rtl_t_raise);
	}
	if (copy_to_user(uarg, &a, sizeof(a)))
		return -EFAULT;
	return 0;
}

static long rtl_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	long r;

	switch (cmd) {
	case RTL_IOC_WAIT:
		/* The producer waits while the consumer holds the lock in RUN. */
		return rtl_wait((struct rtl_wait __user *)arg);
	case RTL_IOC_IRT:
	case RTL_IOC_RUN:
		if (mutex_lock_interruptible(&rtl_lock))
			return -EINTR;
		r = cmd == RTL_IOC_IRT ? rtl_irt((struct rtl_irt __user *)arg) :
					 rtl_run((struct rtl_run __user *)arg);
		mutex_unlock(&rtl_lock);
		return r;
	default:
		return -ENOTTY;
	}
}

static const struct file_operations rtl_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = rtl_ioctl,
};

static struct miscdevice rtl_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "rtscope_lab",
	.fops = &rtl_fops,
	.mode = 0600,
};

static int __init rtl_init(void)
{
	int r;

	if (!request_region(io, 3, "rtscope_lab")) {
		pr_err("rtscope_lab: I/O ports 0x%x-0x%x are taken\n", io, io + 2);
		return -EBUSY;
	}
	/* A port with nothing behind it reads 0xff; QEMU's keeps the written control bits. */
	outb(CTR_SELECT | CTR_INIT, io + LPT_CONTROL);
	if ((inb(io + LPT_CONTROL) & 0x1f) != (CTR_SELECT | CTR_INIT)) {
		pr_err("rtscope_lab: no parallel port at 0x%x\n", io);
		r = -ENODEV;
		goto out_region;
	}
	r = request_irq(irq, rtl_isr, IRQF_NO_THREAD, "rtscope_lab", &rtl_dev);
	if (r) {
		pr_err("rtscope_lab: IRQ %u: %d\n", irq, r);
		goto out_region;
	}
	rtl_irq_ok = true;
	/* Interrupts on; from now on each write of CTR_RAISE raises one. */
	outb(CTR_RAISE & ~CTR_STROBE, io + LPT_CONTROL);
	inb(io + LPT_STATUS);
	r = misc_register(&rtl_dev);
	if (r)
		goto out_irq;
	pr_info("rtscope_lab: parallel port 0x%x, IRQ %u\n", io, irq);
	return 0;
out_irq:
	outb(CTR_SELECT | CTR_INIT, io + LPT_CONTROL);
	free_irq(irq, &rtl_dev);
out_region:
	release_region(io, 3);
	return r;
}

static void __exit rtl_exit(void)
{
	misc_deregister(&rtl_dev);
	outb(CTR_SELECT | CTR_INIT, io + LPT_CONTROL);
	if (rtl_irq_ok)
		free_irq(irq, &rtl_dev);
	release_region(io, 3);
}

module_init(rtl_init);
module_exit(rtl_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rtscope lab: heursch-2001's test driver (PDLT with N preemption points) and a device interrupt for the interrupt response time");
