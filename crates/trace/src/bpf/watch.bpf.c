// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// `rtscope watch`: the scheduling events of someone else's process, filtered in the kernel on
// its thread group (TGID). Only events that concern a watched task are written, so the cost to
// the rest of the machine is one hash lookup per wake-up and per context switch.
//
// Threads created later need nothing: a new thread has its creator's TGID, which is already in
// `targets`. A new *process* joins when it is a child of a watched one and `follow_children` is
// set (`watch -- CMD`), or when its name is `target_comm` (`watch --comm`): at fork (a child
// inherits its parent's comm) and at exec (the comm changes to the program's name).
//
// With `target_cgid` set (`watch --cgroup`), a task is also watched when it is a member of that
// cgroup-v2 cgroup (its default-hierarchy cgroup's kernfs id, the directory's inode number): the
// threads of processes moved into it later are watched from their first event there, and a
// thread moved out stops being watched, whatever its TGID.
//
// Timer lateness: a task sleeping on an hrtimer (clock_nanosleep, timerfd, the hrtimer of a
// POSIX timer) is woken from the timer's callback, which runs between hrtimer_expire_entry and
// hrtimer_expire_exit on the CPU that expired it. The entry program keeps the timer's
// `_softexpires` for its CPU; a sched_waking of a watched task on that CPU while the callback runs
// carries it. `_softexpires` is the instant the task asked for (hrtimer_set_expires_range_ns sets
// it to the requested time and `expires` to that time plus the task's timer slack), i.e. the
// `next` cyclictest subtracts from its clock read after the wake-up. All loads are direct BTF
// loads (no bpf_probe_read_kernel): they stay legal under kernel lockdown.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

// Keep in sync with src/watch.rs (W_*).
#define W_WAKING 1
#define W_SWITCH_IN 2
#define W_SWITCH_OUT 3
#define W_NEW_TASK 4
#define W_EXIT 5

// 48 bytes; decoded by src/watch.rs (`decode`).
struct wrec {
	__u64 ts;
	__u32 kind;
	__u32 pid;
	__u32 tgid;
	__u32 cpu;
	// W_WAKING: the waker (current); W_SWITCH_*: the other task of the switch; W_NEW_TASK: the
	// creator.
	__u32 other;
	// W_SWITCH_OUT: the other task's priority (kernel prio, < 100 real-time).
	__s32 other_prio;
	// W_WAKING: the hrtimer's soft expiry when woken from its callback, else 0;
	// W_SWITCH_OUT: prev_state (0: still runnable, i.e. preempted).
	__u64 x;
	// W_WAKING: the hrtimer's callback (kernel address), else 0; W_SWITCH_OUT: the switch's
	// `preempt` argument (1: preempted, the task stays on its run queue whatever its state).
	__u64 y;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

// Watched thread groups (TGID -> 1). Filled by user space before attach, and by fork/exec below.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

// The hrtimer whose callback is running on this CPU (0 when none).
struct cur_timer {
	__u64 timer;
	__u64 softexpires;
	__u64 function;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cur_timer);
} cur SEC(".maps");

// Records the ring buffer had no room for.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

// Set before load by user space.
const volatile __u8 follow_children = 0;
const volatile __u8 by_comm = 0;
const volatile char target_comm[16] = {};
const volatile __u64 target_cgid = 0;

static __always_inline int watched(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

// The task's cgroup-v2 id: task->cgroups->dfl_cgrp->kn->id, direct BTF loads.
static __always_inline __u64 cgroup_of(struct task_struct *p)
{
	struct css_set *cs = p->cgroups;
	if (!cs)
		return 0;
	struct cgroup *cg = cs->dfl_cgrp;
	if (!cg)
		return 0;
	struct kernfs_node *kn = cg->kn;
	if (!kn)
		return 0;
	return kn->id;
}

static __always_inline int watched_task(struct task_struct *p)
{
	if (watched(p->tgid))
		return 1;
	return target_cgid && p->pid && cgroup_of(p) == target_cgid;
}

static __always_inline void put(__u32 kind, __u32 pid, __u32 tgid, __u32 other, __s32 other_prio,
				__u64 x, __u64 y)
{
	struct wrec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&dropped, &zero);
		if (n)
			*n += 1;
		return;
	}
	r->ts = bpf_ktime_get_ns();
	r->kind = kind;
	r->pid = pid;
	r->tgid = tgid;
	r->cpu = bpf_get_smp_processor_id();
	r->other = other;
	r->other_prio = other_prio;
	r->x = x;
	r->y = y;
	bpf_ringbuf_submit(r, 0);
}

static __always_inline int comm_matches(struct task_struct *p)
{
	for (int i = 0; i < 16; i++) {
		char c = p->comm[i];
		if (c != target_comm[i])
			return 0;
		if (!c)
			return 1;
	}
	return 1;
}

static __always_inline void add_target(__u32 tgid)
{
	__u8 one = 1;
	bpf_map_update_elem(&targets, &tgid, &one, BPF_NOEXIST);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(watch_hrt_entry, struct hrtimer *timer, ktime_t *now)
{
	__u32 zero = 0;
	struct cur_timer *c = bpf_map_lookup_elem(&cur, &zero);
	if (!c)
		return 0;
	c->timer = (__u64)timer;
	c->softexpires = (__u64)timer->_softexpires;
	c->function = (__u64)timer->function;
	return 0;
}

// A hard-IRQ hrtimer expiring inside a soft-IRQ one's callback overwrites the slot and clears it
// at its exit: a watched task woken later in the outer callback is then seen as woken without a
// timer (its wake-up latency is still measured; its timer lateness is not).
SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(watch_hrt_exit, struct hrtimer *timer)
{
	__u32 zero = 0;
	struct cur_timer *c = bpf_map_lookup_elem(&cur, &zero);
	if (c && c->timer == (__u64)timer)
		c->timer = 0;
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(watch_waking, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	if (!watched_task(p))
		return 0;
	__u32 zero = 0;
	struct cur_timer *c = bpf_map_lookup_elem(&cur, &zero);
	__u64 soft = 0, fn = 0;
	if (c && c->timer) {
		soft = c->softexpires;
		fn = c->function;
	}
	struct task_struct *cur_task = (struct task_struct *)bpf_get_current_task_btf();
	put(W_WAKING, p->pid, tgid, cur_task->pid, 0, soft, fn);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(watch_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 ptgid = prev->tgid;
	__u32 ntgid = next->tgid;
	// The idle task (pid 0) has TGID 0, which is never watched.
	if (watched_task(prev))
		put(W_SWITCH_OUT, prev->pid, ptgid, next->pid, next->prio, (__u64)prev_state,
		    preempt);
	if (watched_task(next))
		put(W_SWITCH_IN, next->pid, ntgid, prev->pid, prev->prio, 0, 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(watch_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ctgid = child->tgid;
	__u32 ptgid = parent->tgid;
	if (ctgid != ptgid && !watched(ctgid)) {
		if ((follow_children && watched(ptgid)) || (by_comm && comm_matches(child)))
			add_target(ctgid);
	}
	if (watched_task(child))
		put(W_NEW_TASK, child->pid, ctgid, parent->pid, 0, 0, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(watch_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	if (by_comm && !watched(tgid) && comm_matches(p)) {
		add_target(tgid);
		put(W_NEW_TASK, p->pid, tgid, 0, 0, 0, 0);
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(watch_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	if (watched_task(p))
		put(W_EXIT, p->pid, tgid, 0, 0, 0, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
