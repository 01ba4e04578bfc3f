//! One matcher of interrupt entries and exits, for every analysis that pairs them: the
//! attribution (which context a CPU is in when a thread is woken or delayed) and the bound
//! (completed interrupt instances, their arrivals and durations).
//!
//! On one CPU, interrupt contexts nest as a stack: an IRQ handler, a system vector or a softirq
//! may be interrupted by another (or by an NMI) and is resumed after it. So the matcher keeps a
//! per-CPU stack of open frames:
//!
//! * an entry pushes a frame. A context does not nest in itself: hard IRQ handlers and system
//!   vectors run with interrupts disabled, softirqs are not re-entered on a CPU and NMIs are
//!   not nested, so an entry of a context already open means that frame (and any opened above
//!   it) lost its exit: those are discarded first;
//! * an exit closes the innermost open frame of its context; frames opened above it whose exits
//!   were never seen (lost events) are discarded, as their handlers must have returned before
//!   the outer one did;
//! * an exit with no open frame of its context is unmatched (its entry was lost or fell before
//!   the trace began);
//! * past [`MAX_DEPTH`] open frames (missing exits), the oldest is discarded rather than the
//!   stack growing without bound;
//! * [`ContextStack::clear`]: a consumer that sees the CPU back in thread context (a context
//!   switch) drops what is still open.
//!
//! Discarded and unmatched frames are counted: a half-seen instance has no duration.
//! Shared IRQ lines: the kernel traces each action's handler as its own entry/exit pair, so they
//! pair one after the other like any other.

use rtscope_model::event::{EventKind, Vector};

/// The most interrupt frames one CPU keeps open (real nesting is a few levels: IRQ, softirq,
/// vector, NMI).
pub const MAX_DEPTH: usize = 16;

/// An interrupt context of one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Context {
    Irq(u32),
    Softirq(u32),
    Vector(Vector),
    Nmi,
}

/// An open interrupt frame: its context and when it was entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub ctx: Context,
    pub start_ns: u64,
}

/// The context boundary an event marks: (context, true for an entry / false for an exit). NMIs
/// are not boundaries here: their only tracepoint fires after the handler, with its duration.
pub fn boundary(kind: &EventKind) -> Option<(Context, bool)> {
    Some(match *kind {
        EventKind::IrqEntry { irq } => (Context::Irq(irq), true),
        EventKind::IrqExit { irq, .. } => (Context::Irq(irq), false),
        EventKind::SoftirqEntry { vec } => (Context::Softirq(vec), true),
        EventKind::SoftirqExit { vec } => (Context::Softirq(vec), false),
        EventKind::VectorEntry { vector } => (Context::Vector(vector), true),
        EventKind::VectorExit { vector } => (Context::Vector(vector), false),
        _ => return None,
    })
}

/// One CPU's open interrupt frames, innermost last (module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextStack {
    frames: Vec<Frame>,
    /// Frames discarded without their exit, and exits without an open frame.
    unmatched: u64,
}

impl ContextStack {
    pub fn enter(&mut self, ctx: Context, ts_ns: u64) {
        if let Some(i) = self.frames.iter().rposition(|f| f.ctx == ctx) {
            self.unmatched += (self.frames.len() - i) as u64;
            self.frames.truncate(i);
        }
        if self.frames.len() >= MAX_DEPTH {
            self.frames.remove(0);
            self.unmatched += 1;
        }
        self.frames.push(Frame {
            ctx,
            start_ns: ts_ns,
        });
    }

    /// Close the innermost open frame of `ctx`: the frame, or None when none is open.
    pub fn exit(&mut self, ctx: Context) -> Option<Frame> {
        match self.frames.iter().rposition(|f| f.ctx == ctx) {
            Some(i) => {
                self.unmatched += (self.frames.len() - i - 1) as u64;
                let f = self.frames[i];
                self.frames.truncate(i);
                Some(f)
            }
            None => {
                self.unmatched += 1;
                None
            }
        }
    }

    /// Back in thread context: every open frame lost its exit.
    pub fn clear(&mut self) {
        self.unmatched += self.frames.len() as u64;
        self.frames.clear();
    }

    /// The innermost open frame.
    pub fn top(&self) -> Option<&Frame> {
        self.frames.last()
    }

    pub fn contains(&self, f: &Frame) -> bool {
        self.frames.contains(f)
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Open frames, outermost first.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Frames discarded and exits unmatched so far (not counting the frames still open).
    pub fn unmatched(&self) -> u64 {
        self.unmatched
    }

    /// Heap held, bytes.
    pub fn heap_bytes(&self) -> usize {
        self.frames.capacity() * std::mem::size_of::<Frame>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Context::{Irq, Softirq};

    /// Feed (ts, kind) to one CPU's stack; return the closed frames as (ctx, start, end).
    fn run(events: &[(u64, EventKind)]) -> (Vec<(Context, u64, u64)>, ContextStack) {
        let mut st = ContextStack::default();
        let mut closed = Vec::new();
        for &(ts, k) in events {
            match boundary(&k) {
                Some((c, true)) => st.enter(c, ts),
                Some((c, false)) => {
                    if let Some(f) = st.exit(c) {
                        closed.push((c, f.start_ns, ts));
                    }
                }
                None => {}
            }
        }
        (closed, st)
    }

    fn irq_in(irq: u32) -> EventKind {
        EventKind::IrqEntry { irq }
    }
    fn irq_out(irq: u32) -> EventKind {
        EventKind::IrqExit { irq, handled: true }
    }

    #[test]
    fn nesting_closes_inner_then_outer() {
        // IRQ 30 at 100, a local timer inside it 120..150, a softirq after 160..190.
        let (closed, st) = run(&[
            (100, irq_in(30)),
            (
                120,
                EventKind::VectorEntry {
                    vector: Vector::LocalTimer,
                },
            ),
            (
                150,
                EventKind::VectorExit {
                    vector: Vector::LocalTimer,
                },
            ),
            (155, irq_out(30)),
            (160, EventKind::SoftirqEntry { vec: 1 }),
            (190, EventKind::SoftirqExit { vec: 1 }),
        ]);
        assert_eq!(
            closed,
            vec![
                (Context::Vector(Vector::LocalTimer), 120, 150),
                (Irq(30), 100, 155),
                (Softirq(1), 160, 190)
            ]
        );
        assert!(st.is_empty());
        assert_eq!(st.unmatched(), 0);
    }

    #[test]
    fn a_missing_exit_is_discarded_by_the_outer_exit() {
        // IRQ 31's exit is lost: IRQ 30's exit shows 31 had returned; 31 has no duration.
        let (closed, st) = run(&[
            (100, irq_in(30)),
            (110, irq_in(31)),
            (140, irq_out(30)),
            (200, irq_out(31)),
        ]);
        assert_eq!(closed, vec![(Irq(30), 100, 140)]);
        // 31 discarded at 140, and its late exit at 200 has no open frame.
        assert_eq!(st.unmatched(), 2);
        assert!(st.is_empty());
    }

    #[test]
    fn a_missing_entry_and_a_repeated_entry() {
        let (closed, mut st) = run(&[
            (50, irq_out(9)), // entry before the trace
            (100, irq_in(9)),
            (110, EventKind::SoftirqEntry { vec: 3 }),
            (130, irq_in(9)), // IRQ 9 does not nest in itself: its exit was lost
            (150, irq_out(9)),
            (160, irq_out(9)), // a late exit must not pair with the stale entry at 100
            (170, irq_in(12)),
        ]);
        assert_eq!(closed, vec![(Irq(9), 130, 150)]);
        // The exit at 50, the entry at 100 and the softirq above it, the exit at 160.
        assert_eq!(st.unmatched(), 4);
        assert_eq!(
            st.frames(),
            &[Frame {
                ctx: Irq(12),
                start_ns: 170
            }]
        );
        st.clear();
        assert!(st.is_empty());
        assert_eq!(st.unmatched(), 5);
    }

    #[test]
    fn shared_lines_pair_action_by_action() {
        // Two handlers of shared IRQ 16, traced one after the other.
        let (closed, st) = run(&[
            (100, irq_in(16)),
            (105, irq_out(16)),
            (106, irq_in(16)),
            (120, irq_out(16)),
        ]);
        assert_eq!(closed, vec![(Irq(16), 100, 105), (Irq(16), 106, 120)]);
        assert_eq!(st.unmatched(), 0);
    }

    #[test]
    fn vectors_are_their_own_contexts() {
        let (closed, st) = run(&[
            (
                10,
                EventKind::VectorEntry {
                    vector: Vector::Reschedule,
                },
            ),
            (
                12,
                EventKind::VectorExit {
                    vector: Vector::CallFunction,
                },
            ),
            (
                15,
                EventKind::VectorExit {
                    vector: Vector::Reschedule,
                },
            ),
            (
                20,
                EventKind::VectorEntry {
                    vector: Vector::Other(236),
                },
            ),
            (
                29,
                EventKind::VectorExit {
                    vector: Vector::Other(236),
                },
            ),
        ]);
        assert_eq!(
            closed,
            vec![
                (Context::Vector(Vector::Reschedule), 10, 15),
                (Context::Vector(Vector::Other(236)), 20, 29)
            ]
        );
        assert_eq!(st.unmatched(), 1, "the call_function exit had no entry");
    }

    #[test]
    fn depth_is_bounded() {
        let mut st = ContextStack::default();
        for i in 0..(MAX_DEPTH as u32 + 4) {
            st.enter(Irq(i), u64::from(i));
        }
        assert_eq!(st.frames().len(), MAX_DEPTH);
        assert_eq!(st.frames()[0].ctx, Irq(4), "the oldest went first");
        assert_eq!(st.unmatched(), 4);
    }
}
