// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// rtscope kernel event capture (issue 4). One record per tracepoint hit on a measured CPU,
// written into that CPU's own region of a memory-mapped array that user space drains on a
// timer: no lock, no shared cache line, no wake-up of the reader on the traced CPU.
//
// Per-CPU lock-free slots (instead of one BPF ring buffer): bpf_ringbuf_reserve takes the
// ring's spinlock with IRQs off and every CPU writes the same producer position, so each event
// paid a lock and a cross-CPU cache-line transfer. Here an event costs one atomic add on a
// CPU-local counter, the stores, and an atomic exchange that commits it:
//   i = fetch_add(&heads[cpu], 1)              claim slot i (safe against nesting: IRQ in a
//                                              softirq program, NMI anywhere)
//   rec = &recs[cpu << slot_bits | (i & mask)] fill it
//   xchg(&rec->seq, i + 1)                     commit (fully ordered: fields are visible first)
// The reader copies slot t only when seq == t + 1, and re-checks seq after the copy: a slot
// overwritten by a writer one lap ahead (reader too slow) is counted as lost, never torn.
//
// tp_btf (BTF-typed raw tracepoints) rather than classic tracepoints: the handler receives the
// tracepoint's raw arguments, so the kernel does not first format the trace-event record.
//
// Names (IRQ action names, comms) are not copied per event: IRQ names come from /proc/interrupts
// in user space; comms go into a hash map filled at sched_switch (prev is `current`, so
// bpf_get_current_comm() is exact) and read once at the end.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

// Keep in sync with src/bpf.rs (KIND_*).
#define K_IRQ_ENTRY 1
#define K_IRQ_EXIT 2
#define K_SOFTIRQ_RAISE 3
#define K_SOFTIRQ_ENTRY 4
#define K_SOFTIRQ_EXIT 5
#define K_VEC_ENTRY 6
#define K_VEC_EXIT 7
#define K_NMI 8
#define K_HRT_ENTRY 9
#define K_HRT_EXIT 10
#define K_WAKING 11
#define K_WAKEUP 12
#define K_SWITCH 13
#define K_MIGRATE 14
#define K_IDLE 15
#define K_BACKGROUND 16

// Left-out events further apart start a new Background record (src/reduce.rs SPLIT_NS).
#define BG_SPLIT_NS 10000

// Vector ids (field `a` of K_VEC_*), keep in sync with src/bpf.rs.
#define V_LOCAL_TIMER 1
#define V_RESCHEDULE 2
#define V_CALL_FUNCTION 3
#define V_CALL_FUNCTION_SINGLE 4
#define V_IRQ_WORK 5
#define V_ERROR_APIC 6
#define V_SPURIOUS_APIC 7
#define V_THERMAL_APIC 8
#define V_X86_PLATFORM_IPI 9

#define MAX_CPUS 1024

// 48 bytes; layout documented in src/bpf.rs (`decode_rec`). `seq` = slot index + 1 once the
// record is complete (written last).
struct rec {
	__u64 ts;
	__u32 cpu;
	__u16 kind;
	__u16 pad;
	__u32 a;
	__u32 b;
	__u64 c;
	__u64 d;
	__u64 seq;
};

// Slots per region (keep in sync with src/bpf.rs SLOT_BITS): 131072 × 48 B = 6 MiB, i.e. 1.3 s
// of a CPU at 100 k records/s if the reader is held off (it drains every 10 ms).
#define SLOT_BITS 17
#define SLOT_MASK ((1u << SLOT_BITS) - 1)

// recs[region << SLOT_BITS | (i & SLOT_MASK)]: one region per measured CPU plus one shared by
// all other CPUs (cross-CPU wake-ups and migrations aimed at a measured CPU). max_entries
// (regions << SLOT_BITS) is set before load. Memory-mapped read-only by the reader.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rec);
} recs SEC(".maps");

// heads[region]: slots claimed so far in that region (monotonic). Memory-mapped by the reader.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, __u64);
} heads SEC(".maps");

// cpu_filter[cpu]: TRACED set = a measured CPU (record its events); RELEVANT set = apply the
// relevance filter (below); the low 16 bits are 1 + the index of the slot region this CPU writes
// into (0: none).
#define TRACED (1u << 31)
#define RELEVANT (1u << 30)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, __u32);
} cpu_filter SEC(".maps");

// Records that could not be written (a CPU without a region), per CPU.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

// Relevance filter (src/reduce.rs has the same rules in user space, and the argument): a
// sched_switch between two SCHED_OTHER tasks (prio >= 100, neither the idle task) is not
// recorded at once but held here, per CPU; the next record this CPU writes first writes the held
// switch with its own timestamp; a newer held switch replaces an older one (counted in
// `filtered`). Wake-ups of SCHED_OTHER tasks are not recorded (counted). So at every recorded
// event the current task is what the full stream says.
//
// Concurrency: `held` is only filled by sched_switch, which runs with IRQs off and cannot be
// interrupted except by an NMI, whose program does not flush. A flusher claims the held record
// with an atomic exchange of `valid`, so an IRQ program interrupting a softirq program's flush
// finds it already claimed; the fields cannot change meanwhile (no switch can run inside a BPF
// program on this CPU).
struct held_sw {
	__u64 valid;
	__u64 ts;
	__u32 a;
	__u32 b;
	__u64 c;
	__u64 d;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct held_sw);
} held SEC(".maps");

// The current burst of left-out events of this CPU (consecutive ones < BG_SPLIT_NS apart):
// written as one K_BACKGROUND record (ts = first, c = last - first, a = count) before the CPU's
// next record, or when the next left-out event comes BG_SPLIT_NS or more later. It keeps the
// proof that the guest ran, so the filter never creates an eventless stretch. Updated only with
// IRQs off (waking, switch); a flusher reads first/last before claiming `count` by exchange.
struct bg_burst {
	__u64 first;
	__u64 last;
	__u64 count;
	// Time of this CPU's last record written by emit_on_f (not markers, held switches, NMIs).
	__u64 last_rec;
	// What the records say about idleness, as attribution reads them: IDLE_ENTERED (an idle
	// entry since the last switch to a task) and ON_IDLE_TASK (the last switch went to pid 0).
	// While either is set a SCHED_OTHER -> SCHED_OTHER switch is recorded at once, not held:
	// only a lost switch away from the idle task gets there, and this switch is then the first
	// record saying the CPU is busy (reduce.rs has the same rule).
	__u64 idle_bits;
};

#define IDLE_ENTERED 1
#define ON_IDLE_TASK 2

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bg_burst);
} bgs SEC(".maps");

// Events left out by the relevance filter, per CPU.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} filtered SEC(".maps");

struct comm_val {
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct comm_val);
} comms SEC(".maps");

static __always_inline __u32 cpu_flags(__u32 cpu)
{
	__u32 *v = bpf_map_lookup_elem(&cpu_filter, &cpu);
	return v ? *v : 0;
}

// Add one to a one-entry per-CPU u64 counter map (lost, filtered, nested_recs).
static __always_inline void bump(void *counter)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(counter, &zero);
	if (n)
		*n += 1;
}

// `flags` = cpu_flags(cpu) of the current CPU (it names the region written into).
static __always_inline void write_rec(__u32 cpu, __u32 flags, __u64 ts, __u16 kind, __u32 a,
				      __u32 b, __u64 c, __u64 d)
{
	__u32 region = flags & 0xffff;
	if (!region) {
		bump(&lost);
		return;
	}
	region -= 1;
	__u64 *h = bpf_map_lookup_elem(&heads, &region);
	if (!h) {
		bump(&lost);
		return;
	}
	__u64 i = __sync_fetch_and_add(h, 1);
	__u32 k = (region << SLOT_BITS) | ((__u32)i & SLOT_MASK);
	struct rec *r = bpf_map_lookup_elem(&recs, &k);
	if (!r) {
		bump(&lost);
		return;
	}
	r->ts = ts;
	r->cpu = cpu;
	r->kind = kind;
	r->pad = 0;
	r->a = a;
	r->b = b;
	r->c = c;
	r->d = d;
	__sync_lock_test_and_set(&r->seq, i + 1);
}

// Write this CPU's held switch, if any, before the record that follows it.
static __always_inline void flush_held(__u32 cpu, __u32 flags)
{
	if (!(flags & RELEVANT))
		return;
	__u32 zero = 0;
	struct held_sw *h = bpf_map_lookup_elem(&held, &zero);
	if (!h || !h->valid)
		return;
	if (!__sync_lock_test_and_set(&h->valid, 0))
		return;
	write_rec(cpu, flags, h->ts, K_SWITCH, h->a, h->b, h->c, h->d);
}

// Write the burst (`now` = the time of the record about to follow it, 0 when a quiet stretch
// follows instead). A burst between two records less than BG_SPLIT_NS apart is not written: that
// stretch is shorter than any gap the marker protects (inside an interrupt, the hrtimers between
// its entry and the waking), which saves the record.
static __always_inline void flush_bg(__u32 cpu, __u32 flags, __u64 now)
{
	__u32 zero = 0;
	struct bg_burst *b = bpf_map_lookup_elem(&bgs, &zero);
	if (!b || !b->count)
		return;
	__u64 first = b->first;
	__u64 last = b->last;
	__u64 r0 = b->last_rec;
	__u64 n = __sync_lock_test_and_set(&b->count, 0);
	if (!n)
		return;
	if (now && r0 && now >= r0 && now - r0 < BG_SPLIT_NS)
		return;
	// A burst updated from soft-IRQ context (hrtimers) can be interrupted half-way by a
	// hard-IRQ program that starts its own: never write a negative span.
	if (last < first)
		first = last;
	write_rec(cpu, flags, first, K_BACKGROUND, (__u32)n, 0, last - first, 0);
}

// A left-out event at `ts` on a measured CPU (`flags` has TRACED): extend the burst, or write
// it and start a new one.
static __always_inline void note_background(__u32 cpu, __u32 flags, __u64 ts)
{
	__u32 zero = 0;
	struct bg_burst *b = bpf_map_lookup_elem(&bgs, &zero);
	if (!b)
		return;
	if (b->count && ts - b->last >= BG_SPLIT_NS)
		flush_bg(cpu, flags, 0);
	if (!b->count)
		b->first = ts;
	b->last = ts;
	b->count += 1;
}

// Record an event now: the burst and the held switch first (the NMI program passes flush = 0).
static __always_inline void emit_on_f(__u32 cpu, __u32 flags, __u16 kind, __u32 a, __u32 b,
				      __u64 c, __u64 d, int flush)
{
	__u64 ts = bpf_ktime_get_ns();
	int rel = flush && (flags & TRACED) && (flags & RELEVANT);
	if (rel) {
		flush_bg(cpu, flags, ts);
		flush_held(cpu, flags);
	}
	write_rec(cpu, flags, ts, kind, a, b, c, d);
	if (rel) {
		__u32 zero = 0;
		struct bg_burst *bb = bpf_map_lookup_elem(&bgs, &zero);
		if (bb)
			bb->last_rec = ts;
	}
}

static __always_inline void emit_on(__u32 cpu, __u32 flags, __u16 kind, __u32 a, __u32 b, __u64 c,
				    __u64 d)
{
	emit_on_f(cpu, flags, kind, a, b, c, d, 1);
}

static __always_inline void emit(__u16 kind, __u32 a, __u32 b, __u64 c, __u64 d)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 f = cpu_flags(cpu);
	if (!(f & TRACED))
		return;
	emit_on(cpu, f, kind, a, b, c, d);
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irq_entry, int irq, struct irqaction *action)
{
	emit(K_IRQ_ENTRY, irq, 0, 0, 0);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irq_exit, int irq, struct irqaction *action, int ret)
{
	emit(K_IRQ_EXIT, irq, ret, 0, 0);
	return 0;
}

SEC("tp_btf/softirq_raise")
int BPF_PROG(softirq_raise, unsigned int vec_nr)
{
	emit(K_SOFTIRQ_RAISE, vec_nr, 0, 0, 0);
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(softirq_entry, unsigned int vec_nr)
{
	emit(K_SOFTIRQ_ENTRY, vec_nr, 0, 0, 0);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(softirq_exit, unsigned int vec_nr)
{
	emit(K_SOFTIRQ_EXIT, vec_nr, 0, 0, 0);
	return 0;
}

#define VEC_PROGS(name, id)                                   \
	SEC("tp_btf/" #name "_entry")                         \
	int BPF_PROG(name##_entry, int vector)                \
	{                                                     \
		emit(K_VEC_ENTRY, id, vector, 0, 0);          \
		return 0;                                     \
	}                                                     \
	SEC("tp_btf/" #name "_exit")                          \
	int BPF_PROG(name##_exit, int vector)                 \
	{                                                     \
		emit(K_VEC_EXIT, id, vector, 0, 0);           \
		return 0;                                     \
	}

VEC_PROGS(local_timer, V_LOCAL_TIMER)
VEC_PROGS(reschedule, V_RESCHEDULE)
VEC_PROGS(call_function, V_CALL_FUNCTION)
VEC_PROGS(call_function_single, V_CALL_FUNCTION_SINGLE)
VEC_PROGS(irq_work, V_IRQ_WORK)
VEC_PROGS(error_apic, V_ERROR_APIC)
VEC_PROGS(spurious_apic, V_SPURIOUS_APIC)
VEC_PROGS(thermal_apic, V_THERMAL_APIC)
VEC_PROGS(x86_platform_ipi, V_X86_PLATFORM_IPI)

SEC("tp_btf/nmi_handler")
int BPF_PROG(nmi_handler, void *handler, s64 delta_ns, int handled)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 f = cpu_flags(cpu);
	if (!(f & TRACED))
		return 0;
	emit_on_f(cpu, f, K_NMI, handled, 0, (__u64)delta_ns, (__u64)handler, 0);
	return 0;
}

// hrtimer_expire_entry/exit fire with IRQs enabled when a soft-IRQ hrtimer expires; a hard-IRQ
// hrtimer expiring meanwhile hits the same tracepoint while its program is still running on this
// CPU, and the kernel skips a program that is already running there (`recursion_misses`, a few
// dozen per 15 s under --load io). So each of these tracepoints has a second program that records
// exactly those nested hits: the primary marks itself busy on its CPU while it runs; the
// secondary records only while the primary is busy, and counts what it recorded (user space:
// lost = the primaries' misses - the secondaries' records; a hit nested before the flag is set
// or after it is cleared is missed by both and stays counted as lost).
// busy[HRT_ENTRY_SLOT] / busy[HRT_EXIT_SLOT]: that tracepoint's primary program is running.
#define HRT_ENTRY_SLOT 0
#define HRT_EXIT_SLOT 1
struct hrt_busy {
	__u32 busy[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hrt_busy);
} hrt_busy SEC(".maps");

// Records written by the secondary (nested) hrtimer programs, per CPU.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} nested_recs SEC(".maps");

// Record an hrtimer expiry entry (K_HRT_ENTRY, with the callback) or exit (K_HRT_EXIT). Returns 1
// when it wrote a record (not with the relevance filter, which only notes the activity).
static __always_inline int hrt_rec(struct hrtimer *timer, __u16 kind)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 f = cpu_flags(cpu);
	if (!(f & TRACED))
		return 0;
	if (f & RELEVANT) {
		// Not used by attribution or the bound (the timer handler is the interrupt frame the
		// waking happened in); kept as activity only, two records fewer per sample window.
		bump(&filtered);
		note_background(cpu, f, bpf_ktime_get_ns());
		return 0;
	}
	// Direct BTF loads (no bpf_probe_read_kernel): they stay legal under kernel lockdown.
	// `now` (a ktime_t *) is not read: it would need a probe-read; the record time stands in.
	__u64 fn = kind == K_HRT_ENTRY ? (__u64)timer->function : 0;
	emit_on(cpu, f, kind, 0, 0, (__u64)timer, fn);
	return 1;
}

// The primary program of an hrtimer tracepoint: marks itself busy on this CPU while it runs.
static __always_inline void hrt_primary(struct hrtimer *timer, __u16 kind, int slot)
{
	__u32 zero = 0;
	struct hrt_busy *b = bpf_map_lookup_elem(&hrt_busy, &zero);
	if (b)
		b->busy[slot] = 1;
	hrt_rec(timer, kind);
	if (b)
		b->busy[slot] = 0;
}

// The second program: records only a hit the busy primary was skipped for, and counts it.
static __always_inline void hrt_nested(struct hrtimer *timer, __u16 kind, int slot)
{
	__u32 zero = 0;
	struct hrt_busy *b = bpf_map_lookup_elem(&hrt_busy, &zero);
	if (!b || !b->busy[slot])
		return;
	if (hrt_rec(timer, kind))
		bump(&nested_recs);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(hrtimer_expire_entry, struct hrtimer *timer, ktime_t *now)
{
	hrt_primary(timer, K_HRT_ENTRY, HRT_ENTRY_SLOT);
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(hrtimer_expire_entry_nested, struct hrtimer *timer, ktime_t *now)
{
	hrt_nested(timer, K_HRT_ENTRY, HRT_ENTRY_SLOT);
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(hrtimer_expire_exit, struct hrtimer *timer)
{
	hrt_primary(timer, K_HRT_EXIT, HRT_EXIT_SLOT);
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(hrtimer_expire_exit_nested, struct hrtimer *timer)
{
	hrt_nested(timer, K_HRT_EXIT, HRT_EXIT_SLOT);
	return 0;
}

static __always_inline void wake_common(__u16 kind, struct task_struct *p)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 target = p->thread_info.cpu;
	__u32 f = cpu_flags(cpu);
	// A wake-up aimed at a measured CPU matters even when issued from another CPU.
	if (!(f & TRACED) && !(target < MAX_CPUS && (cpu_flags(target) & TRACED)))
		return;
	__u32 pid = p->pid;
	__s32 prio = p->prio;
	// RELEVANT is set on every CPU's flags when the filter is on.
	if ((f & RELEVANT) && prio >= 100) {
		if (f & TRACED) {
			bump(&filtered);
			note_background(cpu, f, bpf_ktime_get_ns());
		}
		return;
	}
	emit_on(cpu, f, kind, pid, target, (__u64)(__u32)prio, 0);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking, struct task_struct *p)
{
	wake_common(K_WAKING, p);
	return 0;
}

// A local wake-up (the wakee's CPU is this CPU) fires sched_wakeup right after its
// sched_waking in the same try_to_wake_up, with nothing between: it is implied by the waking
// record and skipped, because it falls inside the measured thread's latency window where every
// record costs. Remote wake-ups (queued to the target CPU, activated there by an IPI) are kept.
SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	if (p->thread_info.cpu == bpf_get_smp_processor_id())
		return 0;
	wake_common(K_WAKEUP, p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 f = cpu_flags(cpu);
	if (!(f & TRACED))
		return 0;
	__u32 prev_pid = prev->pid;
	__u32 next_pid = next->pid;
	__s32 prev_prio = prev->prio;
	__s32 next_prio = next->prio;
	__u64 d = ((__u64)(__u32)next_prio << 32) | (__u32)prev_prio;
	__u32 zero = 0;
	struct held_sw *h;
	struct bg_burst *bb = bpf_map_lookup_elem(&bgs, &zero);
	__u64 idle_bits = bb ? bb->idle_bits : 0;
	if ((f & RELEVANT) && !idle_bits && prev_pid != 0 && next_pid != 0 && prev_prio >= 100 &&
	    next_prio >= 100 && (h = bpf_map_lookup_elem(&held, &zero))) {
		__u64 now = bpf_ktime_get_ns();
		if (h->valid)
			bump(&filtered);
		note_background(cpu, f, now);
		h->ts = now;
		h->a = prev_pid;
		h->b = next_pid;
		h->c = (__u64)prev_state;
		h->d = d;
		h->valid = 1;
	} else {
		emit_on(cpu, f, K_SWITCH, prev_pid, next_pid, (__u64)prev_state, d);
	}
	if (bb)
		bb->idle_bits = next_pid == 0 ? (idle_bits & IDLE_ENTERED) | ON_IDLE_TASK : 0;
	// prev is `current` here: remember its name once.
	if (!bpf_map_lookup_elem(&comms, &prev_pid)) {
		struct comm_val v = {};
		bpf_get_current_comm(&v.comm, sizeof(v.comm));
		bpf_map_update_elem(&comms, &prev_pid, &v, BPF_NOEXIST);
	}
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 orig = p->thread_info.cpu;
	__u32 f = cpu_flags(cpu);
	if (!(f & TRACED) && !(orig < MAX_CPUS && (cpu_flags(orig) & TRACED)) &&
	    !(dest_cpu >= 0 && dest_cpu < MAX_CPUS && (cpu_flags(dest_cpu) & TRACED)))
		return 0;
	emit_on(cpu, f, K_MIGRATE, p->pid, orig, (__u64)(__u32)dest_cpu, 0);
	return 0;
}

// Idle entries only: the exit (state PWR_EVENT_EXIT = -1) comes after the wake-up IRQ's handler,
// inside the measured thread's latency window, and is implied by the next switch away from the
// idle task. Attribution treats "current is pid 0" as idle either way.
SEC("tp_btf/cpu_idle")
int BPF_PROG(cpu_idle, unsigned int state, unsigned int cpu_id)
{
	if (state == (unsigned int)-1)
		return 0;
	emit(K_IDLE, state, cpu_id, 0, 0);
	__u32 zero = 0;
	struct bg_burst *bb = bpf_map_lookup_elem(&bgs, &zero);
	if (bb)
		bb->idle_bits |= IDLE_ENTERED;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
