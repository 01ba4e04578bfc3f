//! Pure analysis over recorded data: no syscalls, no clocks. Every function here is tested on
//! fixtures with hand-checked answers.

pub mod attribution;
pub mod benchstats;
pub mod bound;
pub mod compare;
pub mod doctor;
pub mod interrupts;
pub mod mbwi;
pub mod rtapp;
pub mod sched;
pub mod soundness;
pub mod tail;
pub mod watch;
