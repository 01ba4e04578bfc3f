//! `rtscope campaign FILE.toml`: a matrix of measurements (format: `rtscope_store::campaign`,
//! docs/reports.md), run in order, with progress and ETA. Resumable: a cell whose run is stored
//! complete (tag `campaign=NAME`, `cell=ID`) is skipped, so after Ctrl-C or a crash the same
//! command continues where it stopped. A host cell is a `measure` run in this process by the
//! one lifecycle, its arguments read by the cli's own grammar (the [`Resolver`] the cli passes
//! in), so a cell is measured exactly as a user's own `rtscope measure` would be; a lab cell is
//! a `rtscope lab run` child, whose guest boots from this binary.

use crate::input::{bad, VerbError};
use rtscope_model::RunRecord;
use rtscope_session::measure::MeasureTool;
use rtscope_session::tool::{run_tool, Begin, Flow, Tool, Work};
use rtscope_session::{Outcome, Plan};
use rtscope_store::campaign::{Campaign, Cell, KernelAxis};
use rtscope_store::{fallback, RunFilter};
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

rtscope_model::request_fields! {
    /// `rtscope campaign`'s own fields as its errors name them (the database is the store's
    /// [`rtscope_store::DB`]); the caller renders each token ([`rtscope_model::field::render`]).
    pub enum Field in "campaign" {
        Lease = "lease" => LEASE,
    }
}

fn fmt_dur(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s / 60) % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Cells already stored complete.
fn finished_cells(
    store: &mut rtscope_store::Store,
    name: &str,
) -> Result<BTreeSet<String>, VerbError> {
    let runs = store.load_runs(&RunFilter {
        campaign: Some(name.into()),
        ..Default::default()
    })?;
    Ok(rtscope_store::campaign::finished_cells(name, &runs))
}

/// How the cli turns a host cell's `measure` arguments (what follows `rtscope measure`) into a
/// resolved measurement: its own clap grammar, then the session's resolution; a refusal is one
/// line naming the flag. The campaign never reads a flag itself.
pub type Resolver<'a> = &'a dyn Fn(&[String]) -> Result<Plan, VerbError>;

/// What `rtscope campaign` was asked.
pub struct Options<'a> {
    /// SQLite path or postgres:// URL (None: the default SQLite file).
    pub db: Option<&'a str>,
    /// Print the cells, their state and their command lines; run nothing.
    pub dry_run: bool,
    /// How long a claimed cell stays this worker's without a renewal (PostgreSQL only).
    pub lease: Option<Duration>,
    pub resolve: Resolver<'a>,
    /// Every cell's arguments checked before the first starts (the cli's grammar); a refusal
    /// is bad input naming the cell.
    pub check: &'a dyn Fn(&Campaign) -> Result<(), VerbError>,
}

/// What follows `measure` in a cell's command line, wherever it runs: its axes, `-q`, then the
/// campaign's `extra_args`.
pub fn measure_args(c: &Campaign, cell: &Cell) -> Vec<String> {
    let axes = [
        "--policy",
        &cell.policy,
        "--load",
        &cell.load.replace('+', ","),
        "-i",
        &cell.interval_us.to_string(),
        "-D",
        &cell.duration,
        "-q",
    ]
    .map(String::from);
    axes.into_iter()
        .chain(c.extra_args.iter().cloned())
        .collect()
}

/// A cell's command line after `rtscope`; `more_tags` (`k=v`) go with the campaign's onto its
/// run. A host cell is a `measure`, run in this process through the [`Resolver`]; a lab cell is
/// a `lab run` whose guest runs the `measure`.
fn cell_command(c: &Campaign, cell: &Cell, db_arg: &str, more_tags: &[String]) -> Vec<String> {
    let s = |x: &str| x.to_string();
    let tags = c
        .tags
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .chain([format!("campaign={}", c.name), format!("cell={}", cell.id)])
        .chain(more_tags.iter().cloned())
        .flat_map(|t| [s("--tag"), t]);
    let mut cmd = Vec::new();
    match &cell.kernel {
        KernelAxis::Host => {
            cmd.extend([s("measure"), s("--db"), s(db_arg)]);
            cmd.extend(tags);
        }
        // Inside a lab kernel: the lab stores the guest's record in the host's database with
        // the campaign's tags and its own (kernel, preempt, emulated); the guest's measure
        // only measures.
        KernelAxis::Lab { kernel, preempt } => {
            cmd.extend([s("lab"), s("run"), s("--kernel"), kernel.clone()]);
            if let Some(p) = preempt {
                cmd.extend([s("--preempt"), p.clone()]);
            }
            cmd.extend(c.lab_args.iter().cloned());
            cmd.extend([s("--db"), s(db_arg)]);
            cmd.extend(tags);
            cmd.extend([s("-q"), s("--"), s("measure")]);
        }
    }
    cmd.extend(measure_args(c, cell));
    cmd
}

/// A lab cell's `rtscope lab run` child: the guest boots from this very binary, and a cell
/// whose lease is lost is ended by a signal to it (QEMU goes with it). The child dies with us
/// even if we are SIGKILLed.
fn lab_child(argv: &[String], spool: Option<&Path>) -> Result<std::process::Child, VerbError> {
    let exe = std::env::current_exe()
        .map_err(|e| VerbError::context("locating the rtscope binary", e))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(argv);
    if let Some(dir) = spool {
        cmd.env(fallback::FALLBACK_DIR_ENV, dir);
    }
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            rtscope_sys::process::set_parent_death_signal(rtscope_sys::Signal::SIGTERM)
        });
    }
    cmd.spawn()
        .map_err(|e| VerbError::context("starting `rtscope lab run`", e))
}

/// A host cell's measurement run in this process by the one lifecycle; `lost` (set by the lease
/// keeper) ends it early as a stop signal would, keeping what was measured.
struct CellTool<'a> {
    inner: MeasureTool<'a>,
    lost: &'a AtomicBool,
    stop_asked: bool,
}

impl Tool for CellTool<'_> {
    type Output = Outcome;
    fn begin(&self) -> Begin {
        self.inner.begin()
    }
    fn start(&mut self, w: &Work) -> Result<(), VerbError> {
        self.inner.start(w)
    }
    fn step(&mut self, w: &Work) -> Result<Flow, VerbError> {
        if !self.stop_asked && self.lost.load(Ordering::Relaxed) {
            self.request_stop();
        }
        self.inner.step(w)
    }
    fn request_stop(&mut self) {
        self.stop_asked = true;
        self.inner.request_stop();
    }
    fn stop(&mut self, w: &Work) -> Result<(), VerbError> {
        self.inner.stop(w)
    }
    fn record(&mut self, w: &Work) -> Result<Option<RunRecord>, VerbError> {
        self.inner.record(w)
    }
    fn outputs(self, w: &Work, rec: Option<RunRecord>) -> Result<Outcome, VerbError> {
        self.inner.outputs(w, rec)
    }
}

/// Run one cell to its end: a host cell in this process, a lab cell as its `lab run` child.
/// `spool`: the cell's own fallback directory; `lost`: set when the cell's lease is lost (the
/// cell is then stopped). Ok(false): the cell ran and failed (said on stderr).
fn run_cell(
    argv: &[String],
    resolve: Resolver<'_>,
    spool: Option<&Path>,
    lost: &AtomicBool,
) -> Result<bool, VerbError> {
    if argv.first().map(String::as_str) != Some("measure") {
        let mut child = lab_child(argv, spool)?;
        let mut signalled = false;
        let status = loop {
            if let Some(st) = child
                .try_wait()
                .map_err(|e| VerbError::context("waiting for `rtscope lab run`", e))?
            {
                break st;
            }
            if !signalled && lost.load(Ordering::Relaxed) {
                signalled = true;
                let _ = rtscope_sys::process::kill(child.id() as i32, rtscope_sys::Signal::SIGTERM);
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        if !status.success() {
            eprintln!("  `rtscope lab run` {status}");
        }
        return Ok(status.success());
    }
    let mut plan = match resolve(&argv[1..]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rtscope: {e}");
            return Ok(false);
        }
    };
    if let (Some(s), Some(dir)) = (plan.store.as_mut(), spool) {
        s.fallback_dir = Some(dir.to_path_buf());
    }
    let total = plan.config.duration_s.map(Duration::from_secs_f64);
    let mut view = crate::live::default_view(true, total);
    let outcome = run_tool(CellTool {
        inner: MeasureTool::new(&plan, view.as_mut()),
        lost,
        stop_asked: false,
    })
    .and_then(|o| crate::measure::report(&plan, &o).map(|()| o));
    // As the exit status of `rtscope measure`: an interrupted run ended well (its record is
    // marked so; whether the cell is complete is the store's to say).
    match outcome {
        Ok(_) => Ok(true),
        Err(e) => {
            eprintln!("rtscope: {e}");
            Ok(false)
        }
    }
}

/// Run the campaign in `file` (or, with `dry_run`, only say which cells are stored already and
/// what each would run). With a PostgreSQL database the cells are a work queue there: any number
/// of workers (this command on several machines) drain the matrix together, each cell claimed
/// under a lease.
///
/// The campaign's own loop is a [`Tool`] with [`Begin::Offline`]: the loop needs no privilege
/// and repairs nothing itself, because each host cell is a `MeasureTool` whose own begin checks
/// the privilege, repairs what killed runs left (into that cell's record) and installs the stop
/// signals, exactly as a user's `rtscope measure`. The loop's start installs the same handlers
/// (before the first cell), and each step (one cell) checks them first: a signal stops the cell
/// under way through its own tool, and the loop at the next step.
pub fn run(file: &Path, o: &Options<'_>) -> Result<(), VerbError> {
    let text = crate::input::read("campaign file", file)?;
    let c = Campaign::parse(&file.display().to_string(), &text).map_err(|e| bad!("{e}"))?;
    (o.check)(&c)?;
    let db_arg =
        o.db.map(String::from)
            .unwrap_or_else(|| rtscope_store::default_db_path().display().to_string());
    let dry_run = o.dry_run;
    if rtscope_store::is_postgres_url(&db_arg) && !dry_run {
        let lease = o.lease.unwrap_or(Duration::from_secs(60));
        return run_tool(Worker::new(&c, &text, &db_arg, lease, o.resolve));
    }
    if o.lease.is_some() && !dry_run {
        return Err(bad!(
            "{LEASE}: only with a PostgreSQL {} (the campaign is then a queue several machines drain)",
            rtscope_store::DB
        ));
    }
    run_tool(Sequence {
        cells: c.cells(),
        c: &c,
        db_arg: &db_arg,
        dry_run,
        resolve: o.resolve,
        done: BTreeSet::new(),
        next: 0,
        started: Instant::now(),
        spent_planned: 0.0,
        failed: Vec::new(),
        ran: 0,
    })
}

/// A campaign run in order by this process (or its dry run).
struct Sequence<'a> {
    c: &'a Campaign,
    cells: Vec<Cell>,
    db_arg: &'a str,
    dry_run: bool,
    resolve: Resolver<'a>,
    /// Cells stored complete before the start.
    done: BTreeSet<String>,
    /// The next cell to run, of those not done.
    next: usize,
    started: Instant,
    /// Planned seconds of the cells run so far.
    spent_planned: f64,
    failed: Vec<String>,
    ran: usize,
}

impl Sequence<'_> {
    fn todo(&self) -> Vec<&Cell> {
        let done = &self.done;
        self.cells
            .iter()
            .filter(|x| !done.contains(&x.id))
            .collect()
    }
}

impl Tool for Sequence<'_> {
    type Output = ();

    /// What is stored already, said with the plan; the stop signals installed.
    fn start(&mut self, _: &Work) -> Result<(), VerbError> {
        let (c, db_arg) = (self.c, self.db_arg);
        // A dry run only reads: no database is created for it.
        self.done = if self.dry_run {
            match rtscope_store::Store::open_read_only(Some(db_arg)) {
                Ok(mut store) => finished_cells(&mut store, &c.name)?,
                Err(rtscope_store::StoreError::Missing(_)) => Default::default(),
                Err(e) => return Err(e.into()),
            }
        } else {
            finished_cells(&mut crate::stored::open(Some(db_arg))?, &c.name)?
        };
        let todo = self.todo();
        let planned_s: f64 = todo.iter().map(|x| x.duration_s).sum();
        eprintln!(
            "campaign {}: {} cells ({} kernels × {} policies × {} loads × {} intervals × {} durations × {} repetitions), {} already stored, {} to run, ≥ {} of measurement",
            c.name,
            self.cells.len(),
            c.kernels.len(),
            c.policies.len(),
            c.loads.len(),
            c.intervals_us.len(),
            c.durations.len(),
            c.repetitions,
            self.cells.len() - todo.len(),
            todo.len(),
            fmt_dur(planned_s)
        );
        if !self.dry_run {
            crate::signals::install_handlers();
            self.started = Instant::now();
        }
        Ok(())
    }

    /// One cell (a dry run: every cell's line).
    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        let (c, db_arg) = (self.c, self.db_arg);
        if self.dry_run {
            for cell in &self.cells {
                let state = if self.done.contains(&cell.id) {
                    "done"
                } else {
                    "todo"
                };
                let argv = cell_command(c, cell, db_arg, &[]);
                let argv = rtscope_model::secrets::redact_argv(&argv);
                println!("{state}  {}  rtscope {}", cell.id, shell_words(&argv));
            }
            return Ok(Flow::Done);
        }
        let todo = self.todo();
        let i = self.next;
        if i >= todo.len() || crate::signals::stop_requested() {
            return Ok(Flow::Done);
        }
        let cell = todo[i];
        // ETA: remaining planned time scaled by how much wall time each planned second took
        // so far (start-up, load spin-up, storing).
        let remaining: f64 = todo[i..].iter().map(|x| x.duration_s).sum();
        let ratio = if self.spent_planned > 0.0 {
            self.started.elapsed().as_secs_f64() / self.spent_planned
        } else {
            1.05
        };
        eprintln!(
            "[{}/{}] {}  elapsed {}  ETA {}",
            i + 1,
            todo.len(),
            cell.id,
            fmt_dur(self.started.elapsed().as_secs_f64()),
            fmt_dur(remaining * ratio)
        );
        let argv = cell_command(c, cell, db_arg, &[]);
        let ok = run_cell(&argv, self.resolve, None, &AtomicBool::new(false))?;
        let (id, planned) = (cell.id.clone(), cell.duration_s);
        self.spent_planned += planned;
        self.ran += 1;
        self.next += 1;
        if !ok {
            eprintln!("  cell {id} failed");
            self.failed.push(id);
        }
        Ok(Flow::Continue)
    }

    /// What is stored now, what is left, and the exit: failed or missing cells fail the
    /// campaign; a stopped one ends well.
    fn outputs(self, _: &Work, _: Option<RunRecord>) -> Result<(), VerbError> {
        if self.dry_run {
            return Ok(());
        }
        let (c, cells, failed) = (self.c, &self.cells, &self.failed);
        let now_done = finished_cells(&mut crate::stored::open(Some(self.db_arg))?, &c.name)?;
        let missing = cells.iter().filter(|x| !now_done.contains(&x.id)).count();
        eprintln!(
            "campaign {}: {}/{} cells stored in {} ({} run this session)",
            c.name,
            cells.len() - missing,
            cells.len(),
            fmt_dur(self.started.elapsed().as_secs_f64()),
            self.ran
        );
        if crate::signals::stop_requested() {
            // A stopped run is done (exit 0, the README's table, as `measure`): the cell under
            // way is stored marked interrupted, the cells left run on the next invocation.
            eprintln!(
                "rtscope: interrupted: {missing} cells left; run the same command again to resume"
            );
            if failed.is_empty() {
                return Ok(());
            }
        }
        if !failed.is_empty() || missing > 0 {
            return Err(VerbError::failed(format!(
                "{} cells failed ({}); run the same command again to retry them",
                failed.len().max(missing),
                failed.join(", ")
            )));
        }
        eprintln!("next: rtscope report --campaign {} -o report.html", c.name);
        Ok(())
    }
}

/// Renew the lease on `cell` every third of its length until `ended`; when another worker took
/// the cell (our lease ran out), set `lost`, so that the cell ends with one completed run. A
/// failed renewal (the database gone) is retried at the next tick: the lease still runs for two
/// thirds of its length.
fn keep_lease(
    c: &Campaign,
    cell: &str,
    me: &str,
    db: &str,
    lease: Duration,
    lost: &AtomicBool,
    ended: &AtomicBool,
) {
    let mut renewed = Instant::now();
    while !ended.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        if renewed.elapsed() < lease / 3 {
            continue;
        }
        match rtscope_store::Store::open(Some(db))
            .and_then(|mut s| s.renew_lease(&c.name, cell, me, lease))
        {
            Ok(true) => renewed = Instant::now(),
            Ok(false) => {
                eprintln!(
                    "rtscope: campaign: lease on {cell} lost to another worker; stopping this run"
                );
                lost.store(true, Ordering::Relaxed);
                return;
            }
            Err(e) => eprintln!("rtscope: campaign: renewing the lease on {cell}: {e}"),
        }
    }
}

/// `argv` as one line a shell reads back: words with anything but `[A-Za-z0-9_.,:=/+@%-]`
/// single-quoted.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "_.,:=/+@%-".contains(ch));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// This worker's name in the queue and on its runs: host and process.
fn worker_name() -> String {
    format!("{}:{}", rtscope_trace::sys::hostname(), std::process::id())
}

/// Retry a database step with backoff (1, 2, 4 … 60 s) until it succeeds or a stop signal: a
/// lost database must not lose the cell under way, and the worker says what it waits for.
fn with_retry<T>(
    what: &str,
    db: &str,
    mut f: impl FnMut(&mut rtscope_store::Store) -> Result<T, rtscope_store::StoreError>,
) -> Result<T, VerbError> {
    let mut wait = Duration::from_secs(1);
    loop {
        let r = rtscope_store::Store::open(Some(db)).and_then(|mut s| f(&mut s));
        match r {
            Ok(v) => return Ok(v),
            Err(e) if !e.is_transient() || crate::signals::stop_requested() => {
                return Err(VerbError::failed(format!("{what}: {e}")))
            }
            Err(e) => {
                eprintln!(
                    "rtscope: campaign: {what}: {e}; the database is retried in {} s",
                    wait.as_secs()
                );
                // In slices: a stop signal ends the wait (one more attempt, then the error).
                let until = Instant::now() + wait;
                while Instant::now() < until && !crate::signals::stop_requested() {
                    std::thread::sleep(Duration::from_millis(100));
                }
                wait = (wait * 2).min(Duration::from_secs(60));
            }
        }
    }
}

/// The record files in a cell's fallback directory (`*.json`; a file being written is a hidden
/// `.tmp` until it is renamed into place).
fn spool_files(dir: &Path) -> BTreeSet<PathBuf> {
    rtscope_files::regular_files(dir, |n| n.ends_with(".json") && !n.starts_with('.'))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Whether a record found in a cell's fallback directory is the completed run of that cell by
/// this worker (another worker of this machine may have run the same cell before).
fn is_kept_run_of(r: &RunRecord, campaign: &str, cell: &str, worker: &str) -> bool {
    let tag = |k: &str| r.tags.get(k).map(String::as_str);
    tag("campaign") == Some(campaign)
        && tag("cell") == Some(cell)
        && tag("worker") == Some(worker)
        && rtscope_store::campaign::is_complete(r)
}

/// The completed runs of `cell` that its measurement kept in `spool` because the database did
/// not take them: files that were not there before it started.
fn kept_runs(
    spool: &Path,
    before: &BTreeSet<PathBuf>,
    campaign: &str,
    cell: &str,
    me: &str,
) -> Vec<(PathBuf, RunRecord)> {
    spool_files(spool)
        .into_iter()
        .filter(|p| !before.contains(p))
        .filter_map(|p| match fallback::read_record_file(&p) {
            Ok(r) if is_kept_run_of(&r, campaign, cell, me) => Some((p, r)),
            Ok(_) => None,
            Err(e) => {
                eprintln!("rtscope: campaign: {e}");
                None
            }
        })
        .collect()
}

/// Store the runs of `cell` kept locally while the database was away, once it is back and this
/// worker still holds the cell (an interim checkpoint stored under the same id is replaced);
/// the files are removed once stored. `false` when another worker took the cell meanwhile: that
/// worker runs it, and the files stay (storing them would give the cell a second run).
fn store_kept(
    c: &Campaign,
    cell: &str,
    me: &str,
    lease: Duration,
    db: &str,
    kept: &[(PathBuf, RunRecord)],
) -> Result<bool, VerbError> {
    let import = |p: &Path| {
        format!(
            "rtscope import --db '{}' '{}'",
            rtscope_store::redact_url(db),
            p.display()
        )
    };
    for (p, _) in kept {
        eprintln!(
            "rtscope: campaign: cell {cell}: the database did not take the run; its record is kept in {}, storing it when the database is back",
            p.display()
        );
    }
    let held = with_retry(&format!("storing the kept run of {cell}"), db, |s| {
        if !s.renew_lease(&c.name, cell, me, lease)? {
            return Ok(false);
        }
        for (_, r) in kept {
            s.upsert_run(r)?;
        }
        Ok(true)
    });
    let held = match held {
        Ok(h) => h,
        Err(e) => {
            for (p, _) in kept {
                eprintln!(
                    "rtscope: campaign: cell {cell}: not stored; the record stays in {}, store it with: {} (the cell goes back to the queue when its lease runs out)",
                    p.display(),
                    import(p)
                );
            }
            return Err(e);
        }
    };
    if !held {
        for (p, _) in kept {
            eprintln!(
                "rtscope: campaign: lease on {cell} lost to another worker while the database was away (that worker runs the cell); this run is not stored and stays in {}",
                p.display()
            );
        }
        return Ok(false);
    }
    for (p, r) in kept {
        match std::fs::remove_file(p) {
            Ok(()) => eprintln!(
                "rtscope: campaign: cell {cell}: the kept run {} is stored",
                r.id
            ),
            Err(e) => eprintln!(
                "rtscope: campaign: cell {cell}: the kept run {} is stored; {} could not be removed: {e}",
                r.id,
                p.display()
            ),
        }
    }
    Ok(true)
}

/// One worker of a queued campaign: claim a cell, run it under a lease kept alive while it runs,
/// mark it done once its run is stored complete; until no cell is left to claim. A [`Tool`]
/// whose start queues the campaign and whose step is one claim (see [`run`] for its begin).
struct Worker<'a> {
    c: &'a Campaign,
    /// The campaign file's SHA-256: a queue of another file under the same name is refused.
    digest: String,
    db: &'a str,
    lease: Duration,
    resolve: Resolver<'a>,
    cells: Vec<Cell>,
    /// This worker's name.
    me: String,
    /// Where each cell's own fallback directory is made.
    spool_root: PathBuf,
    started: Instant,
    /// Cells run, and of those lost to another worker.
    ran: usize,
    lost: usize,
}

impl<'a> Worker<'a> {
    fn new(
        c: &'a Campaign,
        text: &str,
        db: &'a str,
        lease: Duration,
        resolve: Resolver<'a>,
    ) -> Worker<'a> {
        use sha2::Digest;
        let digest: String = sha2::Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Worker {
            c,
            digest,
            db,
            lease,
            resolve,
            cells: c.cells(),
            me: worker_name(),
            spool_root: fallback::fallback_dir(),
            started: Instant::now(),
            ran: 0,
            lost: 0,
        }
    }
}

impl Tool for Worker<'_> {
    type Output = ();

    /// The campaign queued (its cells stored complete already marked done), the stop signals
    /// installed.
    fn start(&mut self, _: &Work) -> Result<(), VerbError> {
        let (c, db) = (self.c, self.db);
        let ids: Vec<String> = self.cells.iter().map(|x| x.id.clone()).collect();
        let mut store = crate::stored::open(Some(db))?;
        let done = finished_cells(&mut store, &c.name)?;
        let now = crate::record::rfc3339(std::time::SystemTime::now());
        store
            .queue_campaign(&c.name, &self.digest, &ids, &done, &now)
            .map_err(|e| match e {
                rtscope_store::queue::QueueError::OtherFile { .. } => bad!("{e}"),
                rtscope_store::queue::QueueError::Store(s) => s.into(),
            })?;
        drop(store);
        crate::signals::install_handlers();
        self.started = Instant::now();
        eprintln!(
            "campaign {}: worker {}, {} cells in the queue, lease {} s",
            c.name,
            self.me,
            ids.len(),
            self.lease.as_secs()
        );
        Ok(())
    }

    /// One claim: a cell run under its lease and marked done, or a wait while other workers
    /// hold the last cells.
    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        let (c, db, lease) = (self.c, self.db, self.lease);
        let me = self.me.clone();
        let me = me.as_str();
        if crate::signals::stop_requested() {
            return Ok(Flow::Done);
        }
        let claim = with_retry("claiming a cell", db, |s| s.claim_cell(&c.name, me, lease))?;
        let Some(claim) = claim else {
            let q = with_retry("reading the queue", db, |s| s.queue_status(&c.name))?;
            if q.drained() {
                return Ok(Flow::Done);
            }
            // Cells still run elsewhere; one of those workers may die and its lease run out.
            std::thread::sleep(Duration::from_secs(1).min(lease / 4));
            return Ok(Flow::Continue);
        };
        let Some(cell) = self.cells.iter().find(|x| x.id == claim.cell).cloned() else {
            return Err(VerbError::failed(format!(
                "the queue holds cell {} that this campaign file does not define",
                claim.cell
            )));
        };
        eprintln!(
            "[{}] {} (attempt {})  elapsed {}",
            me,
            cell.id,
            claim.attempt,
            fmt_dur(self.started.elapsed().as_secs_f64())
        );
        let tags = [
            format!("host={}", rtscope_trace::sys::hostname()),
            format!("worker={me}"),
        ];
        // The cell's own fallback directory: a record the database did not take is found here
        // (and only here) once the measurement ends.
        let spool = fallback::campaign_spool_dir(&self.spool_root, &c.name, &cell.id);
        rtscope_files::create_private_dir(&spool)
            .map_err(|e| VerbError::context(format!("creating {}", spool.display()), e))?;
        let before = spool_files(&spool);
        let argv = cell_command(c, &cell, db, &tags);
        let lease_lost = AtomicBool::new(false);
        let ended = AtomicBool::new(false);
        let resolve = self.resolve;
        let ok = std::thread::scope(|sc| {
            sc.spawn(|| keep_lease(c, &cell.id, me, db, lease, &lease_lost, &ended));
            let r = run_cell(&argv, resolve, Some(&spool), &lease_lost);
            ended.store(true, Ordering::Relaxed);
            r
        })?;
        let held = !lease_lost.load(Ordering::Relaxed);
        self.ran += 1;
        if !held {
            self.lost += 1;
            let _ = std::fs::remove_dir(&spool);
            return Ok(Flow::Continue);
        }
        // Done means stored complete: by the measurement itself, or, when the database was
        // away as it ended, from the record it kept in the cell's directory.
        let kept = kept_runs(&spool, &before, &c.name, &cell.id, me);
        let ok = if kept.is_empty() {
            let stored = with_retry("checking the stored run", db, |s| {
                let runs = s.load_runs(&RunFilter {
                    tags: vec![
                        ("campaign".into(), c.name.clone()),
                        ("cell".into(), cell.id.clone()),
                        ("worker".into(), me.to_string()),
                    ],
                    ..Default::default()
                })?;
                Ok(runs.iter().any(rtscope_store::campaign::is_complete))
            })?;
            let ok = ok && stored;
            if !ok {
                eprintln!("  cell {} not stored complete", cell.id);
            }
            ok
        } else if store_kept(c, &cell.id, me, lease, db, &kept)? {
            true
        } else {
            self.lost += 1;
            return Ok(Flow::Continue);
        };
        let _ = std::fs::remove_dir(&spool);
        if !with_retry("finishing the cell", db, |s| {
            s.finish_cell(&c.name, &cell.id, me, ok)
        })? {
            self.lost += 1;
        }
        Ok(Flow::Continue)
    }

    /// The queue's state; given-up cells fail the worker, a stopped one ends well.
    fn outputs(self, _: &Work, _: Option<RunRecord>) -> Result<(), VerbError> {
        let (c, me) = (self.c, &self.me);
        let q = with_retry("reading the queue", self.db, |s| s.queue_status(&c.name))?;
        eprintln!(
            "campaign {}: worker {me} ran {} cells in {} ({} lost to other workers); queue: {} done, {} failed, {} todo, {} running",
            c.name,
            self.ran,
            fmt_dur(self.started.elapsed().as_secs_f64()),
            self.lost,
            q.done,
            q.failed,
            q.todo,
            q.running + q.expired
        );
        if crate::signals::stop_requested() {
            // A stopped run is done (exit 0, the README's table); a failed cell still fails it.
            eprintln!("rtscope: interrupted: the cell under way goes back to the queue when its lease runs out; run the same command to go on");
            if q.failed == 0 {
                return Ok(());
            }
        }
        if q.failed > 0 {
            return Err(VerbError::failed(format!(
                "{} cells failed {} times and were given up",
                q.failed,
                rtscope_store::queue::MAX_ATTEMPTS
            )));
        }
        eprintln!("next: rtscope report --campaign {} -o report.html", c.name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_lab_cells_become_measure_and_lab_run() {
        let text = "name = \"k\"\npolicies = [\"fifo\"]\nintervals_us = [1000]\ndurations = [\"10s\"]\nkernels = [\"host\", \"trace:full\"]\nlab_args = [\"--icount\", \"--smp\", \"1\"]\nextra_args = [\"--trace\", \"bpf\"]\n";
        let c = Campaign::parse("k.toml", text).unwrap();
        let cells = c.cells();
        let host = cell_command(&c, &cells[0], "/d.db", &[]);
        assert_eq!(host[0], "measure");
        assert!(host.windows(2).any(|w| w == ["--db", "/d.db"]));
        assert!(host
            .windows(2)
            .any(|w| w == ["--tag", "cell=fifo-idle-i1000-10s-r1"]));
        assert_eq!(&host[host.len() - 2..], ["--trace", "bpf"]);
        let lab = cell_command(&c, &cells[1], "/d.db", &[]);
        let sep = lab.iter().position(|a| a == "--").unwrap();
        assert_eq!(
            &lab[..9],
            [
                "lab",
                "run",
                "--kernel",
                "trace",
                "--preempt",
                "full",
                "--icount",
                "--smp",
                "1"
            ]
        );
        // Storing and tags are the lab's (host side); the guest's measure only measures.
        assert!(lab[..sep].windows(2).any(|w| w == ["--db", "/d.db"]));
        assert!(lab[..sep]
            .windows(2)
            .any(|w| w == ["--tag", "cell=trace.full-fifo-idle-i1000-10s-r1"]));
        assert_eq!(lab[sep + 1], "measure");
        assert!(!lab[sep..].iter().any(|a| a == "--db" || a == "--tag"));
        assert_eq!(&lab[lab.len() - 2..], ["--trace", "bpf"]);
    }

    #[test]
    fn a_dry_run_line_reads_back_in_a_shell() {
        let argv: Vec<String> = [
            "measure",
            "--tag",
            "note=two words",
            "--load-exec",
            "it's",
            "-D",
            "1s",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            shell_words(&argv),
            "measure --tag 'note=two words' --load-exec 'it'\\''s' -D 1s"
        );
    }

    fn kept(id: &str, cell: &str, worker: &str) -> RunRecord {
        let mut spec = rtscope_store::fixture::Spec::new(id, 1);
        spec.tags = [("campaign", "k"), ("cell", cell), ("worker", worker)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        rtscope_store::fixture::record(&spec)
    }

    #[test]
    fn only_this_workers_completed_run_of_the_cell_is_taken() {
        let r = kept("a", "c1", "w1:7");
        assert!(is_kept_run_of(&r, "k", "c1", "w1:7"));
        assert!(!is_kept_run_of(&r, "k", "c1", "w2:7"));
        assert!(!is_kept_run_of(&r, "k", "c2", "w1:7"));
        assert!(!is_kept_run_of(&r, "other", "c1", "w1:7"));
        let mut stopped = r.clone();
        stopped.interrupted = true;
        assert!(!is_kept_run_of(&stopped, "k", "c1", "w1:7"));
    }

    #[test]
    fn a_kept_run_is_one_written_during_the_cell() {
        let d = tempfile::tempdir().unwrap();
        let old = kept("old", "c1", "w1:7");
        let new = kept("new", "c1", "w1:7");
        let write = |r: &RunRecord, name: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, serde_json::to_vec(r).unwrap()).unwrap();
            p
        };
        write(&old, "old.json");
        let before = spool_files(d.path());
        assert_eq!(before.len(), 1);
        let p = write(&new, "new.json");
        write(&new, ".new.json.0123.tmp");
        write(&kept("other", "c1", "w2:9"), "other.json");
        std::fs::write(d.path().join("bad.json"), "{").unwrap();
        let got = kept_runs(d.path(), &before, "k", "c1", "w1:7");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, p);
        assert_eq!(got[0].1.id, "new");
        assert!(kept_runs(&d.path().join("missing"), &before, "k", "c1", "w1:7").is_empty());
    }
}
