//! Inter-process primitives the benchmarks measure: filled in by the benchmark migration.
