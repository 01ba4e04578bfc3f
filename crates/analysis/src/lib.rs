//! Pure analysis over recorded data: no syscalls, no clocks. Every function here is tested on
//! fixtures with hand-checked answers.
