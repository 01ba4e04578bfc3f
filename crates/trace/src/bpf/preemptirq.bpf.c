// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// ECRTS'20 Table 1's thread variables (D_POID, D_PAIE, D_PSD, D_ST) reduced in the kernel from
// the preemptirq tracepoints, as §5's latency parser does: "one second of trace could generate
// more than 800 MB of data per CPU", so no event leaves the kernel. Per CPU only running maxima
// and counters stay; user space reads them (src/preemptirq.rs) whenever it likes.
//
// The state machine is crates/analysis/src/bound/thread.rs (`St::step`), event for event:
// a preempt-disabled section containing a sched_switch is the scheduler's (D_PSD; D_ST from the
// last IRQ disable before the switch to the preempt enable); the union of other preempt-off and
// IRQ-off time, cut where a scheduler section starts, is D_POID; D_PAIE runs from "both enabled"
// while a wake-up of this CPU is pending (sched_wakeup with target = this CPU stands for
// set_need_resched) to the next disable. The idle task (pid 0) runs with preemption disabled for
// good: a switch to it inside a preempt-disabled section ends that scheduler section at the
// switch and clears the preempt-disabled state (IRQs still masked start a new D_POID union); its
// own preempt toggles are counted and otherwise ignored; a switch from it opens a scheduler
// section begun at the last IRQ disable since the previous switch (idle's exit path), else at
// the switch (a section still open then began in idle before the trace: it is dropped).
// Interrupt execution (IRQ handlers, x86 vectors, NMIs)
// inside an interval is discounted from it (§5: "the IRQ and the NMI execution time are
// discounted from the measured value").
//
// Nesting on one CPU. The programs run with preemption disabled (tracepoints), so never on two
// CPUs at once for one CPU's state; but preempt_disable/preempt_enable fire with IRQs possibly
// enabled, so an IRQ — its irq_disable, handler entry/exit, wake-ups, irq_enable, and the
// soft-IRQs run on its way out, with all their IRQ toggles — can run our programs in the middle
// of theirs, and an NMI can interrupt any program. So no program changes the state machine
// while another one on the CPU is in the middle of doing so. Each program appends its event to
// this CPU's queue, then applies committed events in queue order, one at a time, each under the
// CPU's `busy` flag (0 -> 1 by an atomic add). A program that finds `busy` taken (it interrupted
// an application) leaves its event queued; the program it interrupted applies it when it
// resumes, since it looks again after each event. An event appended between a program's last
// look and its release of `busy` waits for the CPU's next event (queue order is kept, only the
// moment changes).
//   claim:  t = tail; h = head; if (h - t >= QLEN) lost; cmpxchg(head, h, h + 1) (retry if
//           nested). Tail before head: a program interrupting between the two loads may claim,
//           commit and apply its own event, moving both past the first one read; read in the
//           other order, h - tail could wrap below 0 and look like a full queue (the event
//           dropped as an overflow). This way it can only overestimate the queue.
//   fill:   queue[h % QLEN] = {ts, kind, arg}
//   commit: xchg(queue[h % QLEN].seq, h + 1)
//   apply:  while queue[tail % QLEN].seq == tail + 1 and busy was 0: apply it; tail++
// Events pile up only while an interrupt lands inside one application (~100 ns) and stays long
// (soft-IRQs on its exit can toggle IRQs thousands of times). A full queue drops the event and
// counts it in queue_overflows: the result is then marked as having lost events.
//
// Where eBPF makes this differ from thread.rs (also in docs/bound.md, "preemptirq capture in
// eBPF"):
// - thread.rs keeps one open start per IRQ line / vector in an unbounded map; here an open
//   handler lives in a stack of HMAX slots searched by key (same semantics: an entry of an open
//   key restarts it, an exit without entry is ignored). An entry that finds the stack full is
//   dropped and counted (nest_overflows); its time would then not be discounted.
// - The timestamp is read when the program starts, before the event is queued; an event of a
//   program that interrupted this one between those two points is applied first, with a later
//   time. Spans saturate at 0 as in thread.rs; the order is that of the queue.
// - The kernel skips a program already running on this CPU (bpf_prog_info.recursion_misses);
//   user space reads those counts and reports them as lost events.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

// Event kinds in the queue. Keep in sync with src/preemptirq.rs (K_*).
#define K_PREEMPT_DISABLE 1
#define K_PREEMPT_ENABLE 2
#define K_IRQ_DISABLE 3
#define K_IRQ_ENABLE 4
#define K_SWITCH 5 // arg: SW_FROM_IDLE | SW_TO_IDLE | (next prio + 2) << 8
#define K_WAKEUP_HERE 6 // sched_wakeup whose target CPU is this CPU; arg: woken prio + 2 | WK_*
#define K_IRQ_ENTRY 7	// arg = IRQ number
#define K_IRQ_EXIT 8
#define K_VEC_ENTRY 9 // arg = vector id (V_*)
#define K_VEC_EXIT 10
#define K_NMI 11 // arg = the handler's delta_ns

// K_WAKEUP_HERE's arg: the running task's TIF_NEED_RESCHED was read at the wake-up (WK_KNOWN),
// and was set (WK_NEED_RESCHED). A replayed event without WK_KNOWN takes thread.rs's rule.
#define WK_KNOWN (1u << 8)
#define WK_NEED_RESCHED (1u << 9)
// x86's TIF_NEED_RESCHED (arch/x86/include/asm/thread_info.h): a #define, not in BTF.
#define TIF_NEED_RESCHED_BIT 3

// K_SWITCH's arg: prev / next is the idle task (pid 0).
#define SW_FROM_IDLE 1
#define SW_TO_IDLE 2

// Vector ids as in rtscope.bpf.c / src/bpf.rs (the handler key only needs them distinct).
#define V_LOCAL_TIMER 1
#define V_RESCHEDULE 2
#define V_CALL_FUNCTION 3
#define V_CALL_FUNCTION_SINGLE 4
#define V_IRQ_WORK 5
#define V_ERROR_APIC 6
#define V_SPURIOUS_APIC 7
#define V_THERMAL_APIC 8
#define V_X86_PLATFORM_IPI 9

#define QLEN 8192 // a power of two: 40 B each, 320 KiB per CPU
#define QMASK (QLEN - 1)
#define HMAX 8 // open handlers per CPU; a power of two
#define HMASK (HMAX - 1)
#define MAX_CPUS 1024

// Bits of pi_state.flags: which of thread.rs's Option/bool fields are set.
#define F_PREEMPT_OFF (1u << 0)
#define F_IRQ_OFF (1u << 1)
#define F_UNION (1u << 2)
#define F_LAST_IRQ_DISABLE (1u << 3)
#define F_EV3 (1u << 4)
#define F_SCHED_START (1u << 5)
#define F_WAKEUP_PENDING (1u << 6)
#define F_PAIE (1u << 7)
#define F_SWITCH_IN_SECTION (1u << 8)
#define F_IRQ_DISABLE_SINCE_SWITCH (1u << 9)
#define F_IDLE (1u << 10) // the last switch went to the idle task
#define F_ARRIVAL (1u << 11) // the IRQ-disabled stretch contains an interrupt arrival

struct qslot {
	__u64 ts;
	__u64 arg;
	__u64 ip;  // preemptirq events: the tracepoint's ip (caller of the toggle); else 0
	__u64 pip; // and its parent_ip
	__u32 kind;
	__u32 seq; // (slot index + 1) mod 2^32 once committed
};

// A point of an interval: its time, the CPU's cumulative interrupt time then, and the event
// that made it (kind and code address), so the longest D_POID can say where it began and ended.
struct at {
	__u64 ts;
	__u64 irq;
	__u64 ip;
	__u64 pip;
	__u64 kind;
	__u64 n; // events applied before this one (pi_state.applied)
};

// Where the longest D_POID was (src/preemptirq.rs RES_POID_*): the event that opened the union
// and the one that closed it, and the interrupt time discounted from it.
struct poid_site {
	__u64 from_ip;
	__u64 from_pip;
	__u64 from_kind;
	__u64 to_ip;
	__u64 to_pip;
	__u64 to_kind;
	__u64 irq_ns;
	__u64 from_ts; // bpf_ktime_get_ns() of the opening event
	__u64 events;  // events applied inside (each ran these programs inside the interval)
};

// Kernel stack frames kept of the longest D_POID's close.
#define POID_STACK 16

// One CPU. The first words are the results user space reads (src/preemptirq.rs RES_*, in this
// order); the rest is the queue and thread.rs's `St`.
struct pi_state {
	__u64 poid_ns;
	__u64 paie_ns;
	__u64 psd_ns;
	__u64 dst_ns;
	__u64 preemptirq_events;
	__u64 sched_sections;
	__u64 queue_overflows; // events dropped: queue full or no slot claimed
	__u64 nest_overflows;  // handler entries dropped: HMAX handlers already open
	__u64 applied;	       // events applied by the state machine (all kinds)
	__u64 max_queued;      // most events waiting at once (a measure of nesting)
	struct poid_site poid_at;
	// The kernel stack of the program that applied the event raising D_POID (taken right after
	// the application, so normally the stack at the union's closing enable; with the
	// frame-pointer-less unwinding of tracepoints' parent_ip, the one way to name the caller
	// of e.g. _raw_spin_unlock). Unused frames are 0.
	__u64 poid_stack[POID_STACK];
	__u64 poid_tid; // the task on the CPU then (thread id)
	char poid_comm[16];
	// thread.rs irq_entry_exit_ns / irq_arrivals: an arrival's hard-IRQ context outside its
	// handlers (the IRQ-disabled stretch around a handler entered at depth 0, minus handlers).
	__u64 irq_ctx_ns;
	__u64 irq_arrivals;
	// queue
	__u64 head;
	__u64 tail;
	__u64 busy; // a program is applying an event on this CPU
	// thread.rs St
	__u64 irq_time; // cumulative interrupt execution time
	__u64 flags;
	struct at preempt_off;
	struct at union_start;
	struct at last_irq_disable;
	struct at ev3;
	struct at sched_start; // sched_start_in_union
	struct at paie_start;
	struct at irq_disable_since_switch;
	__u64 hdepth;
	__u64 hkey[HMAX]; // IRQ number, or 1 << 32 | vector id
	__u64 hts[HMAX];
	__u64 cur_prio; // prio + 2 of the task the last switch put on the CPU; 0: not known yet
	// The event being applied: its kind, ip and parent_ip (for `struct at`).
	__u64 ev_kind;
	__u64 ev_ip;
	__u64 ev_pip;
	__u64 poid_raised; // D_POID was raised since the last stack was taken
	__u64 irq_off_ts;  // thread.rs irq_off: the last IRQ disable (ts, irq_time)
	__u64 irq_off_irq;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pi_state);
} state SEC(".maps");

// The CPU's queue (a per-CPU value is limited to 32 KiB, so the slots are entries of their own).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QLEN);
	__type(key, __u32);
	__type(value, struct qslot);
} queue SEC(".maps");

// traced[cpu] != 0: measure this CPU. Written by user space after every program is attached, so
// no CPU starts with half the programs in place (a disable seen without its enable would open
// an interval as long as the attach).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, __u32);
} traced SEC(".maps");

static __always_inline __u64 span(struct at *from, __u64 to_ts, __u64 to_irq)
{
	__u64 d = to_ts > from->ts ? to_ts - from->ts : 0;
	__u64 i = to_irq > from->irq ? to_irq - from->irq : 0;
	return d > i ? d - i : 0;
}

// A point made by the event being applied.
static __always_inline void set_at(struct pi_state *s, struct at *a, __u64 ts, __u64 irq)
{
	a->ts = ts;
	a->irq = irq;
	a->ip = s->ev_ip;
	a->pip = s->ev_pip;
	a->kind = s->ev_kind;
	a->n = s->applied;
}

// D_POID candidate `d`, the union from `from` to `to`: a new maximum records where it was.
static __always_inline void poid_max(struct pi_state *s, __u64 d, struct at *from, struct at *to)
{
	if (d <= s->poid_ns)
		return;
	s->poid_ns = d;
	s->poid_at.from_ip = from->ip;
	s->poid_at.from_pip = from->pip;
	s->poid_at.from_kind = from->kind;
	s->poid_at.to_ip = to->ip;
	s->poid_at.to_pip = to->pip;
	s->poid_at.to_kind = to->kind;
	s->poid_at.irq_ns = to->irq > from->irq ? to->irq - from->irq : 0;
	s->poid_at.from_ts = from->ts;
	s->poid_at.events = to->n > from->n ? to->n - from->n : 0;
	s->poid_raised = 1;
}

static __always_inline void maxto(__u64 *m, __u64 v)
{
	if (v > *m)
		*m = v;
}

// thread.rs St::disable_begins
static __always_inline void disable_begins(struct pi_state *s, __u64 ts)
{
	if (s->flags & F_PAIE) {
		maxto(&s->paie_ns, span(&s->paie_start, ts, s->irq_time));
		s->flags &= ~F_PAIE;
	}
	if (!(s->flags & F_UNION)) {
		set_at(s, &s->union_start, ts, s->irq_time);
		s->flags |= F_UNION;
		s->flags &= ~F_SCHED_START;
	}
}

// thread.rs St::maybe_close_union
static __always_inline void maybe_close_union(struct pi_state *s, __u64 ts)
{
	if (s->flags & (F_PREEMPT_OFF | F_IRQ_OFF))
		return;
	if (s->flags & F_UNION) {
		struct at now;
		struct at *to = &now;
		// The part before a scheduler section postponed the scheduler (or masked IRQs).
		if (s->flags & F_SCHED_START)
			to = &s->sched_start;
		else
			set_at(s, &now, ts, s->irq_time);
		__u64 d = span(&s->union_start, to->ts, to->irq);
		s->flags &= ~(F_UNION | F_SCHED_START);
		poid_max(s, d, &s->union_start, to);
	}
	if (s->flags & F_WAKEUP_PENDING) {
		set_at(s, &s->paie_start, ts, s->irq_time);
		s->flags |= F_PAIE;
	}
}

// thread.rs St::handler_open: insert or restart the key's start.
static __always_inline void handler_open(struct pi_state *s, __u64 key, __u64 ts)
{
	__u64 n = s->hdepth;
	if (n == 0 && (s->flags & F_IRQ_OFF))
		s->flags |= F_ARRIVAL;
#pragma unroll
	for (int i = 0; i < HMAX; i++) {
		if (i < n && s->hkey[i] == key) {
			s->hts[i] = ts;
			return;
		}
	}
	if (n >= HMAX) {
		s->nest_overflows++;
		return;
	}
	s->hkey[n & HMASK] = key;
	s->hts[n & HMASK] = ts;
	s->hdepth = n + 1;
}

// thread.rs St::handler_close: the key's time is interrupt time; an exit without entry is
// ignored. The last open slot moves into the freed one (order does not matter: keys are unique).
static __always_inline void handler_close(struct pi_state *s, __u64 key, __u64 ts)
{
	__u64 n = s->hdepth;
	if (n > HMAX)
		n = HMAX;
#pragma unroll
	for (int i = 0; i < HMAX; i++) {
		if (i < n && s->hkey[i] == key) {
			__u64 st = s->hts[i];
			s->irq_time += ts > st ? ts - st : 0;
			__u64 last = (n - 1) & HMASK;
			s->hkey[i] = s->hkey[last];
			s->hts[i] = s->hts[last];
			s->hdepth = n - 1;
			return;
		}
	}
}

// thread.rs St::switch
static __always_inline void pi_switch(struct pi_state *s, __u64 ts, __u64 arg)
{
	if ((s->flags & F_PREEMPT_OFF) && (arg & (SW_TO_IDLE | SW_FROM_IDLE))) {
		// To idle: the scheduler section ends here, what follows is the idle task's. From idle
		// with a section open: the switch to idle was not seen, the section is idle's (dropped).
		if (arg & SW_TO_IDLE) {
			s->sched_sections++;
			maxto(&s->psd_ns, span(&s->preempt_off, ts, s->irq_time));
			if (s->flags & F_LAST_IRQ_DISABLE)
				maxto(&s->dst_ns, span(&s->last_irq_disable, ts, s->irq_time));
		}
		// The union up to the section's start postponed the scheduler; it ends here.
		if (s->flags & F_UNION) {
			struct at *st = (s->flags & F_SCHED_START) ? &s->sched_start : &s->preempt_off;
			poid_max(s, span(&s->union_start, st->ts, st->irq), &s->union_start, st);
		}
		s->flags &= ~(F_UNION | F_SCHED_START | F_PREEMPT_OFF | F_SWITCH_IN_SECTION | F_EV3 |
			      F_LAST_IRQ_DISABLE);
		// IRQs still masked in idle delay the wake-up's interrupt.
		if (s->flags & F_IRQ_OFF) {
			set_at(s, &s->union_start, ts, s->irq_time);
			s->flags |= F_UNION;
		}
	} else if (s->flags & F_PREEMPT_OFF) {
		s->flags |= F_SWITCH_IN_SECTION;
		// ev3 = last_irq_disable (copied with its presence)
		s->ev3 = s->last_irq_disable;
		if (s->flags & F_LAST_IRQ_DISABLE)
			s->flags |= F_EV3;
		else
			s->flags &= ~F_EV3;
	}
	if (arg & SW_FROM_IDLE) {
		// Idle's exit path entered the scheduler with no preempt event: the section starts
		// at its last IRQ disable (EV3), else here.
		struct at start;
		if (s->flags & F_IRQ_DISABLE_SINCE_SWITCH) {
			start = s->irq_disable_since_switch;
			s->ev3 = start;
			s->last_irq_disable = start;
			s->flags |= F_EV3 | F_LAST_IRQ_DISABLE;
		} else {
			set_at(s, &start, ts, s->irq_time);
			s->flags &= ~(F_EV3 | F_LAST_IRQ_DISABLE);
		}
		if (!(s->flags & F_UNION)) {
			s->union_start = start;
			s->flags |= F_UNION;
			s->flags &= ~F_SCHED_START;
		}
		if (!(s->flags & F_SCHED_START)) {
			s->sched_start = start;
			s->flags |= F_SCHED_START;
		}
		s->preempt_off = start;
		s->flags |= F_PREEMPT_OFF | F_SWITCH_IN_SECTION;
	}
	if (arg & SW_TO_IDLE)
		s->flags |= F_IDLE;
	else
		s->flags &= ~F_IDLE;
	s->flags &= ~(F_IRQ_DISABLE_SINCE_SWITCH | F_WAKEUP_PENDING | F_PAIE);
	s->cur_prio = (arg >> 8) & 0xff;
}

// thread.rs wakeup_preempts, on prio + 2 (0: the running task is not known yet): the wake-up
// sets need_resched when the woken task has a higher priority, the CPU is idle or its task
// unknown, or both are fair-class (prio >= 100, conservatively).
static __always_inline int wakeup_preempts(struct pi_state *s, __u64 woken)
{
	__u64 c = s->cur_prio;
	if (c == 0 || (s->flags & F_IDLE))
		return 1;
	return woken < c || (woken >= 102 && c >= 102);
}

// thread.rs St::step for one event. Global (verified once, called from apply_next).
__noinline int pi_apply(struct pi_state *s, __u64 ts, __u64 kind, __u64 arg)
{
	if (!s)
		return 0;
	s->applied++;
	// The idle task's own preemption toggles: counted, no interval.
	if ((kind == K_PREEMPT_DISABLE || kind == K_PREEMPT_ENABLE) && (s->flags & F_IDLE)) {
		s->preemptirq_events++;
		return 0;
	}
	switch (kind) {
	case K_PREEMPT_DISABLE:
		s->preemptirq_events++;
		disable_begins(s, ts);
		set_at(s, &s->preempt_off, ts, s->irq_time);
		s->flags |= F_PREEMPT_OFF;
		s->flags &= ~(F_SWITCH_IN_SECTION | F_EV3 | F_LAST_IRQ_DISABLE);
		break;
	case K_PREEMPT_ENABLE:
		s->preemptirq_events++;
		if (s->flags & F_PREEMPT_OFF) {
			s->flags &= ~F_PREEMPT_OFF;
			if (s->flags & F_SWITCH_IN_SECTION) {
				s->sched_sections++;
				maxto(&s->psd_ns, span(&s->preempt_off, ts, s->irq_time));
				if (s->flags & F_EV3)
					maxto(&s->dst_ns, span(&s->ev3, ts, s->irq_time));
				if (!(s->flags & F_SCHED_START)) {
					s->sched_start = s->preempt_off;
					s->flags |= F_SCHED_START;
				}
			}
		}
		s->flags &= ~F_SWITCH_IN_SECTION;
		maybe_close_union(s, ts);
		break;
	case K_IRQ_DISABLE:
		s->preemptirq_events++;
		disable_begins(s, ts);
		s->flags |= F_IRQ_OFF;
		s->irq_off_ts = ts;
		s->irq_off_irq = s->irq_time;
		set_at(s, &s->irq_disable_since_switch, ts, s->irq_time);
		s->flags |= F_IRQ_DISABLE_SINCE_SWITCH;
		if (s->flags & F_PREEMPT_OFF) {
			set_at(s, &s->last_irq_disable, ts, s->irq_time);
			s->flags |= F_LAST_IRQ_DISABLE;
		}
		break;
	case K_IRQ_ENABLE:
		s->preemptirq_events++;
		// thread.rs: the entry and exit code of an arrival's hard-IRQ context.
		if ((s->flags & (F_ARRIVAL | F_IRQ_OFF)) == (F_ARRIVAL | F_IRQ_OFF)) {
			__u64 d = ts > s->irq_off_ts ? ts - s->irq_off_ts : 0;
			__u64 i = s->irq_time > s->irq_off_irq ? s->irq_time - s->irq_off_irq : 0;
			maxto(&s->irq_ctx_ns, d > i ? d - i : 0);
			s->irq_arrivals++;
		}
		s->flags &= ~(F_IRQ_OFF | F_ARRIVAL);
		maybe_close_union(s, ts);
		break;
	case K_SWITCH:
		pi_switch(s, ts, arg);
		break;
	case K_WAKEUP_HERE:
		if ((arg & WK_KNOWN) ? (arg & WK_NEED_RESCHED) : wakeup_preempts(s, arg & 0xff))
			s->flags |= F_WAKEUP_PENDING;
		break;
	case K_IRQ_ENTRY:
		handler_open(s, arg & 0xffffffff, ts);
		break;
	case K_IRQ_EXIT:
		handler_close(s, arg & 0xffffffff, ts);
		break;
	case K_VEC_ENTRY:
		handler_open(s, (1ull << 32) | (arg & 0xffffffff), ts);
		break;
	case K_VEC_EXIT:
		handler_close(s, (1ull << 32) | (arg & 0xffffffff), ts);
		break;
	case K_NMI:
		s->irq_time += arg;
		break;
	}
	return 0;
}

// bpf_loop callback: apply the next committed event unless an application is in progress on
// this CPU (this program interrupted it). 0 = go on, 1 = stop.
static long apply_next(__u64 i, void *unused)
{
	__u32 zero = 0;
	struct pi_state *s = bpf_map_lookup_elem(&state, &zero);
	if (!s)
		return 1;
	long stop = 1;
	if (__sync_fetch_and_add(&s->busy, 1) == 0) {
		__u64 t = s->tail;
		__u32 k = t & QMASK;
		struct qslot *q = bpf_map_lookup_elem(&queue, &k);
		if (q && *(volatile __u32 *)&q->seq == (__u32)(t + 1)) {
			s->ev_kind = q->kind;
			s->ev_ip = q->ip;
			s->ev_pip = q->pip;
			pi_apply(s, q->ts, q->kind, q->arg);
			s->tail = t + 1;
			stop = 0;
		}
	}
	__sync_fetch_and_add(&s->busy, -1);
	return stop;
}

// The replay program's stand-in for a program that interrupts `push` between its loads of tail
// and head (an NMI, say): claims, commits and applies an event that changes no state.
static __always_inline void nested_between_loads(struct pi_state *s)
{
	__u64 h = *(volatile __u64 *)&s->head;
	if (__sync_val_compare_and_swap(&s->head, h, h + 1) != h)
		return;
	__u32 k = h & QMASK;
	struct qslot *q = bpf_map_lookup_elem(&queue, &k);
	if (!q) {
		__sync_val_compare_and_swap(&s->head, h + 1, h);
		return;
	}
	q->ts = 0;
	q->kind = K_NMI;
	q->arg = 0;
	q->ip = 0;
	q->pip = 0;
	__sync_lock_test_and_set(&q->seq, (__u32)(h + 1));
	bpf_loop(QLEN, apply_next, 0, 0);
}

// Append one event; `apply` = 0 leaves it queued (the replay program's stand-in for a program
// that interrupted an application); `nest` runs nested_between_loads in the first claim.
static __always_inline void push(struct pi_state *s, __u64 ts, __u32 kind, __u64 arg, __u64 ip,
				 __u64 pip, int apply, int nest)
{
	__u64 h = 0;
	int claimed = 0;
	for (int i = 0; i < 4; i++) {
		__u64 t = *(volatile __u64 *)&s->tail;
		if (nest && i == 0)
			nested_between_loads(s);
		h = *(volatile __u64 *)&s->head;
		__u64 waiting = h - t;
		if (waiting >= QLEN)
			break;
		if (__sync_val_compare_and_swap(&s->head, h, h + 1) == h) {
			claimed = 1;
			// A diagnostic: a nested program may overwrite a larger value.
			if (waiting + 1 > s->max_queued)
				s->max_queued = waiting + 1;
			break;
		}
	}
	__u32 k = h & QMASK;
	struct qslot *q = claimed ? bpf_map_lookup_elem(&queue, &k) : 0;
	if (!q) {
		// No slot. (A claimed slot always has its entry, k < QLEN; the claim is given back for
		// the verifier's sake.)
		if (claimed)
			__sync_val_compare_and_swap(&s->head, h + 1, h);
		__sync_fetch_and_add(&s->queue_overflows, 1);
	} else {
		q->ts = ts;
		q->kind = kind;
		q->arg = arg;
		q->ip = ip;
		q->pip = pip;
		__sync_lock_test_and_set(&q->seq, (__u32)(h + 1));
	}
	if (apply)
		bpf_loop(QLEN, apply_next, 0, 0);
}

static __always_inline struct pi_state *here(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 *on = bpf_map_lookup_elem(&traced, &cpu);
	if (!on || !*on)
		return 0;
	__u32 zero = 0;
	return bpf_map_lookup_elem(&state, &zero);
}

// An enable that raised D_POID: keep the kernel stack here (the closing code's callers).
static __always_inline void record_enable(void *ctx, __u64 kind, __u64 ip, __u64 pip)
{
	__u64 ts = bpf_ktime_get_ns();
	struct pi_state *s = here();
	if (!s)
		return;
	push(s, ts, kind, 0, ip, pip, 1, 0);
	if (__sync_lock_test_and_set(&s->poid_raised, 0)) {
		long n = bpf_get_stack(ctx, s->poid_stack, sizeof(s->poid_stack), 0);
		s->poid_tid = (__u32)bpf_get_current_pid_tgid();
		bpf_get_current_comm(s->poid_comm, sizeof(s->poid_comm));
		for (int i = 0; i < POID_STACK; i++)
			if (n < 0 || i * 8 >= n)
				s->poid_stack[i] = 0;
	}
}

static __always_inline void record_ip(__u64 kind, __u64 arg, __u64 ip, __u64 pip)
{
	__u64 ts = bpf_ktime_get_ns();
	struct pi_state *s = here();
	if (s)
		push(s, ts, kind, arg, ip, pip, 1, 0);
}

static __always_inline void record(__u64 kind, __u64 arg)
{
	record_ip(kind, arg, 0, 0);
}

SEC("tp_btf/preempt_disable")
int BPF_PROG(pi_preempt_disable, unsigned long ip, unsigned long parent_ip)
{
	record_ip(K_PREEMPT_DISABLE, 0, ip, parent_ip);
	return 0;
}

SEC("tp_btf/preempt_enable")
int BPF_PROG(pi_preempt_enable, unsigned long ip, unsigned long parent_ip)
{
	record_enable(ctx, K_PREEMPT_ENABLE, ip, parent_ip);
	return 0;
}

SEC("tp_btf/irq_disable")
int BPF_PROG(pi_irq_disable, unsigned long ip, unsigned long parent_ip)
{
	record_ip(K_IRQ_DISABLE, 0, ip, parent_ip);
	return 0;
}

SEC("tp_btf/irq_enable")
int BPF_PROG(pi_irq_enable, unsigned long ip, unsigned long parent_ip)
{
	record_enable(ctx, K_IRQ_ENABLE, ip, parent_ip);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pi_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	record(K_SWITCH, (prev->pid == 0 ? SW_FROM_IDLE : 0) | (next->pid == 0 ? SW_TO_IDLE : 0) |
				 ((__u64)((next->prio + 2) & 0xff) << 8));
	return 0;
}

// thread.rs: `Wakeup { target_cpu } if target_cpu == e.cpu`. A remote wake-up queued to another
// CPU fires this tracepoint on the target when it is activated there, so it counts there.
// ttwu_do_activate() and ttwu_runnable() call wakeup_preempt() before ttwu_do_wakeup() fires
// this tracepoint, so the running task's TIF_NEED_RESCHED says here whether the scheduler was
// asked for (resched_curr): the paper's set_need_resched, read instead of predicted. A flag
// already set by an earlier request also means a pending scheduler call, as it should.
SEC("tp_btf/sched_wakeup")
int BPF_PROG(pi_sched_wakeup, struct task_struct *p)
{
	if (p->thread_info.cpu != bpf_get_smp_processor_id())
		return 0;
	struct task_struct *cur = bpf_get_current_task_btf();
	__u64 nr = (cur->thread_info.flags >> TIF_NEED_RESCHED_BIT) & 1;
	record(K_WAKEUP_HERE,
	       (__u64)((p->prio + 2) & 0xff) | WK_KNOWN | (nr ? WK_NEED_RESCHED : 0));
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(pi_irq_entry, int irq)
{
	record(K_IRQ_ENTRY, (__u32)irq);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(pi_irq_exit, int irq)
{
	record(K_IRQ_EXIT, (__u32)irq);
	return 0;
}

#define VEC_PROGS(name, id)                         \
	SEC("tp_btf/" #name "_entry")               \
	int BPF_PROG(pi_##name##_entry)             \
	{                                           \
		record(K_VEC_ENTRY, id);            \
		return 0;                           \
	}                                           \
	SEC("tp_btf/" #name "_exit")                \
	int BPF_PROG(pi_##name##_exit)              \
	{                                           \
		record(K_VEC_EXIT, id);             \
		return 0;                           \
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

// Fires after each NMI handler with its duration; thread.rs adds delta_ns to the interrupt time.
SEC("tp_btf/nmi_handler")
int BPF_PROG(pi_nmi_handler, void *handler, s64 delta_ns)
{
	record(K_NMI, delta_ns > 0 ? (__u64)delta_ns : 0);
	return 0;
}

// Replay for tests (BPF_PROG_TEST_RUN with BPF_F_TEST_RUN_ON_CPU; never attached): args[0] = ts,
// args[1] = kind | QUEUE_ONLY, args[2] = arg, args[3] = ip, args[4] = parent_ip. The event goes through the same queue and state
// machine as a live one, on the CPU the run is pinned to, whatever `traced` says. QUEUE_ONLY
// appends without applying, as a program that interrupted an application does; NEST_IN_CLAIM
// lets a nested program claim, commit and apply an event in the middle of this one's claim.
#define QUEUE_ONLY (1ull << 32)
#define NEST_IN_CLAIM (1ull << 33)
SEC("raw_tp")
int pi_replay(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	struct pi_state *s = bpf_map_lookup_elem(&state, &zero);
	if (!s)
		return 1;
	__u64 kind = ctx->args[1];
	push(s, ctx->args[0], kind & 0xffffffff, ctx->args[2], ctx->args[3], ctx->args[4],
	     !(kind & QUEUE_ONLY), !!(kind & NEST_IN_CLAIM));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
