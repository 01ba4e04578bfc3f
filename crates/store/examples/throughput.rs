//! Store throughput: insert N synthetic runs (one transaction each, as `measure` does), then
//! read every one back whole (JSON decode + histogram rebuild) and list them; report time and
//! database size. The records are `fixture` records: 2 CPUs × 5000 samples, ~600 histogram
//! buckets each, the shape of a short real run.
//!
//!   cargo run --release -p rtscope-store --example throughput -- /tmp/tp.db 1000
//!   cargo run --release -p rtscope-store --example throughput -- postgres://postgres@127.0.0.1:54329/rtscope_test 1000

use rtscope_store::fixture::{self, Spec};
use rtscope_store::{RunFilter, Store};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let target = args
        .get(1)
        .ok_or("usage: throughput DB_PATH|postgres://… [N]")?;
    let n: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let pg = rtscope_store::is_postgres_url(target);
    let schema = format!("throughput_{}", std::process::id());
    let mut store = if pg {
        Store::open_postgres(target, Some(&schema))?
    } else {
        if std::path::Path::new(target).exists() {
            return Err(format!("{target} exists; give a fresh path").into());
        }
        Store::open(Some(target))?
    };
    let records: Vec<_> = (0..n)
        .map(|i| {
            let mut s = Spec::new(&format!("tp-{i:06}"), i as u64);
            s.tags.insert("campaign".into(), "throughput".into());
            fixture::record(&s)
        })
        .collect();
    let json_bytes: usize = records
        .iter()
        .map(|r| serde_json::to_vec(r).map_or(0, |v| v.len()))
        .sum();

    let t0 = Instant::now();
    for r in &records {
        store.insert_run(r)?;
    }
    let insert = t0.elapsed();

    let t1 = Instant::now();
    let list = store.list_runs(&RunFilter {
        tags: vec![("campaign".into(), "throughput".into())],
        ..Default::default()
    })?;
    let listed = t1.elapsed();
    let t2 = Instant::now();
    let mut samples = 0u64;
    for s in &list {
        samples += store.get_run(&s.id)?.stats().samples;
    }
    let read = t2.elapsed();
    assert_eq!(list.len(), n);
    assert_eq!(
        samples,
        records.iter().map(|r| r.stats().samples).sum::<u64>()
    );

    let size = if pg {
        let mut c = postgres::Client::connect(target, postgres::NoTls)?;
        let row = c.query_one(
            "SELECT (SELECT SUM(pg_total_relation_size(format('%I.%I', table_schema, table_name)))
                     FROM information_schema.tables WHERE table_schema = $1)::BIGINT",
            &[&schema],
        )?;
        let size: i64 = row.get(0);
        c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
        size as u64
    } else {
        drop(store);
        ["", "-wal", "-shm"]
            .iter()
            .filter_map(|s| std::fs::metadata(format!("{target}{s}")).ok())
            .map(|m| m.len())
            .sum()
    };
    println!(
        "backend: {}",
        if pg { "postgresql" } else { "sqlite (WAL)" }
    );
    println!(
        "runs: {n}  (record JSON total {:.1} MB, {:.1} KB/run)",
        json_bytes as f64 / 1e6,
        json_bytes as f64 / n as f64 / 1e3
    );
    println!(
        "insert: {:.2} s total, {:.2} ms/run, {:.0} runs/s",
        insert.as_secs_f64(),
        insert.as_secs_f64() * 1e3 / n as f64,
        n as f64 / insert.as_secs_f64()
    );
    println!(
        "list (tag filter): {:.1} ms for {n} runs",
        listed.as_secs_f64() * 1e3
    );
    println!(
        "read back whole: {:.2} s total, {:.2} ms/run",
        read.as_secs_f64(),
        read.as_secs_f64() * 1e3 / n as f64
    );
    println!(
        "database size: {:.1} MB ({:.1} KB/run)",
        size as f64 / 1e6,
        size as f64 / n as f64 / 1e3
    );
    Ok(())
}
