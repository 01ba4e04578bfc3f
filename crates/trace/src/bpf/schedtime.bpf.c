// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// Time spent in the scheduler before it gives the CPU to a SCHED_FIFO thread: heursch-2001 §4,
// Table 3, which read the TSC in the first lines of schedule() and again just before schedule()
// switched to the SCHED_FIFO process.
//
// The start is the entry of the scheduler's traceable entry points: schedule() (a task blocks,
// or is preempted on its way back to user space), schedule_idle() (the idle task) and
// preempt_schedule_irq() (kernel code preempted on interrupt return). __schedule() itself,
// where they all meet, is `notrace`: no BPF trampoline can attach to it. The end is the
// sched_switch tracepoint, which __schedule() fires just before context_switch().
//
// One start slot per CPU: the scheduler does not nest on a CPU (it runs with preemption off and
// interrupt handlers never enter it). The slot is cleared at every sched_switch and at the exit
// of every entry point (fexit runs when the task that entered returns, so a call that picked
// the same task again leaves no stale start). A switch reached through preempt_schedule()
// (notrace, from preempt_enable() under a preemptible model) has no start: it is counted in
// `missed`, not timed. Under PREEMPT_RT that is nearly every switch: the trampoline calls
// migrate_disable() before the start program, and the preempt_enable() in it is where the
// pending switch happens (__schedule <- preempt_schedule <- migrate_disable <-
// __bpf_prog_enter_recur <- bpf_trampoline <- schedule).
//
// A duration includes the fentry trampoline and the start program (a constant), not the switch.
//
// Under PREEMPT_RT the start therefore comes from elsewhere (user space chooses; the other
// programs are not loaded): the preemptirq tracepoints. `preempt_disable` fires only when the
// count goes 0 → 1 and `preempt_enable` only when it goes 1 → 0, so the last 0 → 1 on a CPU with
// no 1 → 0 since is the disable the scheduler runs under until it switches: the
// preempt_disable() right before __schedule() in schedule() and preempt_schedule_irq() (the
// paper's "first lines of schedule()"). Every `preempt_disable` starts, every `preempt_enable`
// clears; a switch through preempt_schedule() (notrace: its disable has no event) follows a
// clearing enable and is counted missed. A tracepoint program runs without the trampoline's
// migrate_disable(), so it adds no preemption point. (The tracepoint's caller address is no
// help to filter on: on the scheduler's path it names schedule()'s caller.) The idle task's
// schedule_idle() disables nothing (the idle task always runs with preemption off), so its
// fentry stays: with preemption off the trampoline's preempt_enable() cannot switch there.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define SCHED_FIFO_POLICY 1

// Set by user space before attach: [CFG_TGID] the measured process, [CFG_CPU] its CPU.
// Keep in sync with src/schedtime.rs.
#define CFG_TGID 0
#define CFG_CPU 1
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} cfg SEC(".maps");

static __always_inline __u32 cfg_of(__u32 k)
{
	__u32 *v = bpf_map_lookup_elem(&cfg, &k);
	return v ? *v : 0xffffffff;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} start SEC(".maps");

// Keep in sync with src/schedtime.rs (C_MISSED, C_DROPPED).
#define C_MISSED 0
#define C_DROPPED 1
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

// Every duration, in ns, drained by user space after each load level.
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 65536);
	__type(value, __u64);
} samples SEC(".maps");

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);
	if (v)
		(*v)++;
}

static __always_inline void enter(void)
{
	__u32 k = 0;
	if (bpf_get_smp_processor_id() != cfg_of(CFG_CPU))
		return;
	__u64 *t = bpf_map_lookup_elem(&start, &k);
	if (t)
		*t = bpf_ktime_get_ns();
}

static __always_inline void leave(void)
{
	__u32 k = 0;
	__u64 *t = bpf_map_lookup_elem(&start, &k);
	if (t)
		*t = 0;
}

SEC("fentry/schedule")
int BPF_PROG(schedule_entry) { enter(); return 0; }
SEC("fexit/schedule")
int BPF_PROG(schedule_exit) { leave(); return 0; }
SEC("fentry/schedule_idle")
int BPF_PROG(schedule_idle_entry) { enter(); return 0; }
SEC("fexit/schedule_idle")
int BPF_PROG(schedule_idle_exit) { leave(); return 0; }
SEC("fentry/preempt_schedule_irq")
int BPF_PROG(preempt_schedule_irq_entry) { enter(); return 0; }
SEC("fexit/preempt_schedule_irq")
int BPF_PROG(preempt_schedule_irq_exit) { leave(); return 0; }

SEC("tp_btf/preempt_disable")
int BPF_PROG(rt_preempt_off, unsigned long ip, unsigned long parent_ip) { enter(); return 0; }
SEC("tp_btf/preempt_enable")
int BPF_PROG(rt_preempt_on, unsigned long ip, unsigned long parent_ip) { leave(); return 0; }

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 k = 0;
	__u64 now = bpf_ktime_get_ns();
	if (bpf_get_smp_processor_id() != cfg_of(CFG_CPU))
		return 0;
	__u64 *t = bpf_map_lookup_elem(&start, &k);
	if (!t)
		return 0;
	__u64 s = *t;
	*t = 0;
	if ((__u32)next->tgid != cfg_of(CFG_TGID) || next->policy != SCHED_FIFO_POLICY)
		return 0;
	if (s == 0 || now < s) {
		count(C_MISSED);
		return 0;
	}
	__u64 d = now - s;
	if (bpf_map_push_elem(&samples, &d, 0))
		count(C_DROPPED);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
