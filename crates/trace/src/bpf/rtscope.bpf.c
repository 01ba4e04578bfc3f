// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// rtscope kernel event capture (issue 4). One record per tracepoint hit on a measured CPU, pushed
// into one BPF ring buffer with BPF_RB_NO_WAKEUP: user space polls on a timer, so the traced CPU
// never pays for a wake-up of the reader (the cost that dominates per-event notification).
//
// tp_btf (BTF-typed raw tracepoints) rather than classic tracepoints: the handler receives the
// tracepoint's raw arguments, so the kernel does not first format the trace-event record, which
// keeps the per-event cost to the handler below.
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

// 40 bytes; layout documented in src/bpf.rs (`RawRec`).
struct rec {
	__u64 ts;
	__u32 cpu;
	__u16 kind;
	__u16 pad;
	__u32 a;
	__u32 b;
	__u64 c;
	__u64 d;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024);
} events SEC(".maps");

// cpu_filter[cpu] != 0: record events on this CPU.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, __u8);
} cpu_filter SEC(".maps");

// Records that did not fit in the ring buffer, per CPU.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

struct comm_val {
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct comm_val);
} comms SEC(".maps");

static __always_inline int cpu_on(__u32 cpu)
{
	__u8 *on = bpf_map_lookup_elem(&cpu_filter, &cpu);
	return on && *on;
}

static __always_inline void emit_on(__u32 cpu, __u16 kind, __u32 a, __u32 b, __u64 c, __u64 d)
{
	struct rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&lost, &zero);
		if (n)
			*n += 1;
		return;
	}
	r->ts = bpf_ktime_get_ns();
	r->cpu = cpu;
	r->kind = kind;
	r->pad = 0;
	r->a = a;
	r->b = b;
	r->c = c;
	r->d = d;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

static __always_inline void emit(__u16 kind, __u32 a, __u32 b, __u64 c, __u64 d)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_on(cpu))
		return;
	emit_on(cpu, kind, a, b, c, d);
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
	emit(K_NMI, handled, 0, (__u64)delta_ns, (__u64)handler);
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(hrtimer_expire_entry, struct hrtimer *timer, ktime_t *now)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_on(cpu))
		return 0;
	// Direct BTF loads (no bpf_probe_read_kernel): they stay legal under kernel lockdown.
	// `now` (a ktime_t *) is not read: it would need a probe-read; the record time stands in.
	__u64 fn = (__u64)timer->function;
	emit_on(cpu, K_HRT_ENTRY, 0, 0, (__u64)timer, fn);
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(hrtimer_expire_exit, struct hrtimer *timer)
{
	emit(K_HRT_EXIT, 0, 0, (__u64)timer, 0);
	return 0;
}

static __always_inline void wake_common(__u16 kind, struct task_struct *p)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 target = p->thread_info.cpu;
	// A wake-up aimed at a measured CPU matters even when issued from another CPU.
	if (!cpu_on(cpu) && !(target < MAX_CPUS && cpu_on(target)))
		return;
	__u32 pid = p->pid;
	__s32 prio = p->prio;
	emit_on(cpu, kind, pid, target, (__u64)(__u32)prio, 0);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking, struct task_struct *p)
{
	wake_common(K_WAKING, p);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	wake_common(K_WAKEUP, p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_on(cpu))
		return 0;
	__u32 prev_pid = prev->pid;
	__u32 next_pid = next->pid;
	__s32 prev_prio = prev->prio;
	__s32 next_prio = next->prio;
	emit_on(cpu, K_SWITCH, prev_pid, next_pid, (__u64)prev_state,
		((__u64)(__u32)next_prio << 32) | (__u32)prev_prio);
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
	if (!cpu_on(cpu) && !(orig < MAX_CPUS && cpu_on(orig)) &&
	    !(dest_cpu >= 0 && dest_cpu < MAX_CPUS && cpu_on(dest_cpu)))
		return 0;
	emit_on(cpu, K_MIGRATE, p->pid, orig, (__u64)(__u32)dest_cpu, 0);
	return 0;
}

SEC("tp_btf/cpu_idle")
int BPF_PROG(cpu_idle, unsigned int state, unsigned int cpu_id)
{
	emit(K_IDLE, state, cpu_id, 0, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
