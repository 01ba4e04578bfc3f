// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// The kernel half of PRAcTISE (lelli-2014 thesis §2.3.9, Fig. 2.24): the duration of every call
// of the kernel's own cpudl_set / cpudl_find (kernel/sched/cpudeadline.c) and cpupri_set /
// cpupri_find (kernel/sched/cpupri.c), fentry to fexit, in per-function histograms.
//
// A duration includes the fentry and fexit trampolines and these programs (the kernel's
// function alone is shorter); user space reports that beside the numbers.
//
// One start slot per function and CPU is enough: the four functions run with interrupts off —
// the *_set ones under rq->lock (cpudl_set also takes cp->lock with irqsave), the *_find ones
// under rq->lock or p->pi_lock (select_task_rq_*, raw_spin_lock_irqsave) — so a call cannot be
// preempted or interrupted by another call of the same function on the same CPU, and the
// trampoline's recursion guard keeps a program from nesting into itself.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

// Keep in sync with src/kfuncs.rs (FUNCS, BUCKET_NS, BUCKETS).
#define F_CPUDL_SET 0
#define F_CPUDL_FIND 1
#define F_CPUPRI_SET 2
#define F_CPUPRI_FIND 3
#define NFUNCS 4
#define BUCKET_NS 10
#define BUCKETS 1000 // 10 ns wide: 0..10 us; longer calls go to `above`

struct fstats {
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns; // 0 = no call yet
	__u64 max_ns;
	__u64 above; // calls of BUCKETS * BUCKET_NS or longer
	__u64 missed; // fexit without a start (attached mid-call)
	__u64 buckets[BUCKETS];
};

// Per CPU: no atomics, no shared cache line; user space sums the CPUs.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NFUNCS);
	__type(key, __u32);
	__type(value, struct fstats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NFUNCS);
	__type(key, __u32);
	__type(value, __u64);
} start SEC(".maps");

static __always_inline void enter(__u32 f)
{
	__u64 *t = bpf_map_lookup_elem(&start, &f);
	if (t)
		*t = bpf_ktime_get_ns();
}

static __always_inline void leave(__u32 f)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 *t = bpf_map_lookup_elem(&start, &f);
	struct fstats *s = bpf_map_lookup_elem(&stats, &f);
	if (!t || !s)
		return;
	if (*t == 0 || now < *t) {
		s->missed++;
		return;
	}
	__u64 d = now - *t;
	*t = 0;
	s->count++;
	s->sum_ns += d;
	if (s->min_ns == 0 || d < s->min_ns)
		s->min_ns = d ? d : 1;
	if (d > s->max_ns)
		s->max_ns = d;
	__u64 b = d / BUCKET_NS;
	if (b < BUCKETS)
		s->buckets[b]++;
	else
		s->above++;
}

SEC("fentry/cpudl_set")
int BPF_PROG(cpudl_set_entry) { enter(F_CPUDL_SET); return 0; }
SEC("fexit/cpudl_set")
int BPF_PROG(cpudl_set_exit) { leave(F_CPUDL_SET); return 0; }
SEC("fentry/cpudl_find")
int BPF_PROG(cpudl_find_entry) { enter(F_CPUDL_FIND); return 0; }
SEC("fexit/cpudl_find")
int BPF_PROG(cpudl_find_exit) { leave(F_CPUDL_FIND); return 0; }
SEC("fentry/cpupri_set")
int BPF_PROG(cpupri_set_entry) { enter(F_CPUPRI_SET); return 0; }
SEC("fexit/cpupri_set")
int BPF_PROG(cpupri_set_exit) { leave(F_CPUPRI_SET); return 0; }
SEC("fentry/cpupri_find")
int BPF_PROG(cpupri_find_entry) { enter(F_CPUPRI_FIND); return 0; }
SEC("fexit/cpupri_find")
int BPF_PROG(cpupri_find_exit) { leave(F_CPUPRI_FIND); return 0; }

char LICENSE[] SEC("license") = "Dual BSD/GPL";
