//! `rtscope`: measure, explain and bound real-time latency on Linux. The command line, its
//! verbs and their flags are the `rtscope_cli` library; this is its entry point.

fn main() {
    rtscope_cli::main()
}
