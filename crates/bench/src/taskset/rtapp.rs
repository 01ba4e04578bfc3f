//! rt-app JSON workloads made of periodic tasks (rt-app's doc/tutorial.txt): threads with
//! run/runtime/sleep events and one timer, policies SCHED_OTHER/FIFO/RR/DEADLINE. Every key
//! rtscope does not understand is an error naming it (rt-app users complain of silently ignored
//! keys); keys accepted without effect are listed in the notes.

use super::plan::{Release, Segment, TaskSpec, ThreadPolicy};
use rtscope_model::taskset::Task;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub specs: Vec<TaskSpec>,
    /// global.duration in seconds (None when -1 or absent).
    pub duration_s: Option<f64>,
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("rt-app file: {0}")]
pub struct RtAppError(pub String);

fn err<T>(s: impl Into<String>) -> Result<T, RtAppError> {
    Err(RtAppError(s.into()))
}

/// rt-app reads JSON with json-c, which accepts /* */ and // comments and trailing commas;
/// json-strip-comments blanks those outside strings (comments become spaces, a trailing comma a
/// space), so the text keeps its UTF-8 and every byte position: serde_json's error positions
/// still point into the user's file.
pub fn strip_json_extensions(s: &str) -> Result<String, RtAppError> {
    let mut out = s.to_string();
    json_strip_comments::strip(&mut out)
        .map_err(|e| RtAppError(format!("not JSON: an unterminated comment or string ({e})")))?;
    Ok(out)
}

/// The key order of every object of a JSON document. serde_json's `Map` iterates keys sorted
/// (its `preserve_order` feature would change the order of every JSON document the workspace
/// writes), but rt-app runs a thread's events in file order: "sleep0" then "run0" is not
/// "run0" then "sleep0". Read once beside the `Value`, for the objects whose order matters.
#[derive(Debug, Default, PartialEq)]
struct KeyOrder(Vec<(String, KeyOrder)>);

impl KeyOrder {
    fn get(&self, key: &str) -> Option<&KeyOrder> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, o)| o)
    }

    /// `obj`'s entries in file order; a repeated key where it first appears, with the value
    /// serde_json kept (the last), as json-c replaces a repeated key's value in place.
    fn entries<'a>(&self, obj: &'a Map<String, Value>) -> Vec<(&'a String, &'a Value)> {
        let mut out: Vec<(&String, &Value)> = Vec::with_capacity(obj.len());
        for (k, _) in &self.0 {
            if let Some((key, v)) = obj.get_key_value(k) {
                if !out.iter().any(|(seen, _)| *seen == key) {
                    out.push((key, v));
                }
            }
        }
        out
    }
}

impl<'de> serde::Deserialize<'de> for KeyOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = KeyOrder;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<KeyOrder, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    keys.push((k, m.next_value::<KeyOrder>()?));
                }
                Ok(KeyOrder(keys))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<KeyOrder, A::Error> {
                while s.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(KeyOrder::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<KeyOrder, E> {
                Ok(KeyOrder::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<KeyOrder, E> {
                Ok(KeyOrder::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<KeyOrder, E> {
                Ok(KeyOrder::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<KeyOrder, E> {
                Ok(KeyOrder::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<KeyOrder, E> {
                Ok(KeyOrder::default())
            }
            fn visit_unit<E>(self) -> Result<KeyOrder, E> {
                Ok(KeyOrder::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// Deepest nesting of objects and arrays read (rt-app's own files nest 5 deep).
pub const MAX_NESTING: usize = 64;

/// `line:column` (1-based, columns in characters) of byte `at` of `text`.
fn line_col(text: &str, at: usize) -> String {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    format!("line {line}:{col}")
}

/// One pass over the comment-blanked text (byte positions are the user's): a key repeated in
/// one object is refused naming its path and both positions (json-c keeps the last value, serde
/// would too: the file says two things), and nesting deeper than [`MAX_NESTING`] is refused
/// before the decoder recurses into it. Syntax errors are left to the decoder.
pub(crate) fn scan_structure(text: &str) -> Result<(), RtAppError> {
    enum Frame {
        Obj {
            path: String,
            keys: Vec<(String, usize)>,
            want_key: bool,
        },
        Arr {
            path: String,
            index: usize,
        },
    }
    let b = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    // The path a value starting now will have.
    let child_path = |stack: &[Frame]| -> String {
        match stack.last() {
            Some(Frame::Obj { path, keys, .. }) => {
                let k = keys.last().map_or("", |(k, _)| k.as_str());
                if path.is_empty() {
                    k.to_string()
                } else {
                    format!("{path}.{k}")
                }
            }
            Some(Frame::Arr { path, index }) => format!("{path}[{index}]"),
            None => String::new(),
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' => {
                if stack.len() >= MAX_NESTING {
                    return err(format!(
                        "{}: nested deeper than {MAX_NESTING} levels at {} (accepted: 1..={MAX_NESTING})",
                        child_path(&stack),
                        line_col(text, i)
                    ));
                }
                let path = child_path(&stack);
                stack.push(if b[i] == b'{' {
                    Frame::Obj {
                        path,
                        keys: Vec::new(),
                        want_key: true,
                    }
                } else {
                    Frame::Arr { path, index: 0 }
                });
            }
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Obj { want_key, .. }) => *want_key = true,
                Some(Frame::Arr { index, .. }) => *index += 1,
                None => {}
            },
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if let Some(Frame::Obj {
                    path,
                    keys,
                    want_key,
                }) = stack.last_mut()
                {
                    if *want_key {
                        *want_key = false;
                        let raw = text.get(start..(i + 1).min(b.len())).unwrap_or("");
                        let Ok(key) = serde_json::from_str::<String>(raw) else {
                            return Ok(());
                        };
                        if let Some((_, first)) = keys.iter().find(|(k, _)| *k == key) {
                            let full = if path.is_empty() {
                                key.clone()
                            } else {
                                format!("{path}.{key}")
                            };
                            return err(format!(
                                "duplicate key \"{full}\" at {} and {} (each key may appear once in an object)",
                                line_col(text, *first),
                                line_col(text, start)
                            ));
                        }
                        keys.push((key, start));
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

fn int(v: &Value, what: &str) -> Result<i64, RtAppError> {
    v.as_i64()
        .ok_or_else(|| RtAppError(format!("{what}: expected an integer, got {v}")))
}

/// Longest time a run, sleep or period may take, µs (an hour: far beyond a real-time task, and
/// in ns still far from overflowing the sums of a task set).
const MAX_US: i64 = 3_600_000_000;

fn us(v: &Value, what: &str) -> Result<u64, RtAppError> {
    let x = int(v, what)?;
    if !(0..=MAX_US).contains(&x) {
        return err(format!("{what}: must be 0..={MAX_US} µs, got {x}"));
    }
    Ok(x as u64 * 1000)
}

/// The event a key names: rt-app keys events by prefix so that one object can hold several
/// ("run0", "run1"); "runtime" is tested before "run".
fn event_kind(key: &str) -> Option<&'static str> {
    for k in ["runtime", "run", "sleep", "timer"] {
        if let Some(rest) = key.strip_prefix(k) {
            if rest.chars().all(|c| c.is_ascii_digit()) {
                return Some(k);
            }
        }
    }
    None
}

const UNSUPPORTED_EVENTS: &[&str] = &[
    "lock",
    "unlock",
    "wait",
    "signal",
    "broad",
    "sync",
    "barrier",
    "suspend",
    "resume",
    "yield",
    "mem",
    "iorun",
    "fork",
    "ref",
    "pi_enabled",
];

/// What the native engine cannot run exactly: refused with this advice.
pub const ENGINE_HINT: &str = "run the file with rt-app itself (⟨taskset.engine⟩ rt-app)";

struct Pattern {
    segments: Vec<Segment>,
    period_ns: Option<u64>,
    loop_: Option<i64>,
    cpus: Option<Vec<u32>>,
    /// The timer's `ref`, and whether it is relative (rt-app's default).
    timer_ref: Option<String>,
    relative: bool,
    /// Events before the timer (they run once more at the start: see `parse_events`).
    before_timer: usize,
}

fn parse_events(
    obj: &Map<String, Value>,
    order: &KeyOrder,
    ctx: &str,
    allowed: &[&str],
) -> Result<Pattern, RtAppError> {
    let mut p = Pattern {
        segments: Vec::new(),
        period_ns: None,
        loop_: None,
        cpus: None,
        timer_ref: None,
        relative: true,
        before_timer: 0,
    };
    for (k, v) in order.entries(obj) {
        if allowed.contains(&k.as_str()) {
            match k.as_str() {
                "loop" => p.loop_ = Some(int(v, &format!("{ctx}.loop"))?),
                "cpus" => p.cpus = Some(cpus(v, &format!("{ctx}.cpus"))?),
                _ => {}
            }
            continue;
        }
        match event_kind(k) {
            Some("run") => p.segments.push(Segment::Run(us(v, &format!("{ctx}.{k}"))?)),
            Some("runtime") => p
                .segments
                .push(Segment::Busy(us(v, &format!("{ctx}.{k}"))?)),
            Some("sleep") => {
                let ns = us(v, &format!("{ctx}.{k}"))?;
                if ns > 0 {
                    p.segments.push(Segment::Sleep(ns));
                }
            }
            Some("timer") => {
                if p.period_ns.is_some() {
                    return err(format!(
                        "{ctx}.{k}: a second timer in one loop; the native engine runs one timer per thread: {ENGINE_HINT}"
                    ));
                }
                p.before_timer = p.segments.len();
                let t = v
                    .as_object()
                    .ok_or_else(|| RtAppError(format!("{ctx}.{k}: expected an object")))?;
                for (tk, tv) in t {
                    match tk.as_str() {
                        "ref" => {
                            let r = tv.as_str().ok_or_else(|| {
                                RtAppError(format!("{ctx}.{k}.ref: expected a string"))
                            })?;
                            p.timer_ref = Some(r.to_string());
                        }
                        "period" => p.period_ns = Some(us(tv, &format!("{ctx}.{k}.period"))?),
                        // rt-app's timers are relative unless "absolute" is asked for
                        // (doc/tutorial.txt, "Timers can work with a relative or an absolute
                        // reference").
                        "mode" => match tv.as_str() {
                            Some("relative") => p.relative = true,
                            Some("absolute") => p.relative = false,
                            _ => return err(format!("{ctx}.{k}.mode: \"relative\" (the default) or \"absolute\", got {tv}")),
                        },
                        _ => {
                            return err(format!(
                                "{ctx}.{k}.{tk}: unknown timer key (known: ref, period, mode)"
                            ))
                        }
                    }
                }
            }
            _ => {
                let base = k.trim_end_matches(|c: char| c.is_ascii_digit());
                if UNSUPPORTED_EVENTS.contains(&base) {
                    return err(format!("{ctx}.{k}: the native engine runs run, runtime, sleep and timer events only, not '{base}': {ENGINE_HINT}"));
                }
                return err(format!("{ctx}.{k}: unknown key"));
            }
        }
    }
    Ok(p)
}

fn cpus(v: &Value, what: &str) -> Result<Vec<u32>, RtAppError> {
    let a = v
        .as_array()
        .ok_or_else(|| RtAppError(format!("{what}: expected an array of CPU numbers")))?;
    a.iter()
        .map(|x| {
            x.as_u64()
                .filter(|&c| c < 4096)
                .map(|c| c as u32)
                .ok_or_else(|| RtAppError(format!("{what}: bad CPU number {x}")))
        })
        .collect()
}

const THREAD_KEYS: &[&str] = &[
    "instance",
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "cpus",
    "delay",
    "phases",
    "loop",
];

const GLOBAL_KEYS: &[&str] = &[
    "duration",
    "calibration",
    "default_policy",
    "pi_enabled",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
];

/// Parse an rt-app workload. `online` bounds the CPU numbers.
pub fn parse(text: &str, online: &[u32]) -> Result<Workload, RtAppError> {
    let json = strip_json_extensions(text)?;
    scan_structure(&json)?;
    let v: Value = serde_json::from_str(&json).map_err(|e| RtAppError(format!("not JSON: {e}")))?;
    let order: KeyOrder =
        serde_json::from_str(&json).map_err(|e| RtAppError(format!("not JSON: {e}")))?;
    let no_order = KeyOrder::default();
    let task_orders = order.get("tasks").unwrap_or(&no_order);
    let root = v
        .as_object()
        .ok_or_else(|| RtAppError("top level must be an object".into()))?;
    let mut notes = Vec::new();
    let mut duration_s = None;
    let mut default_policy = "SCHED_OTHER".to_string();
    for (k, _) in root {
        if !["tasks", "global", "resources"].contains(&k.as_str()) {
            return err(format!(
                "{k}: unknown top-level key (known: tasks, global, resources)"
            ));
        }
    }
    if let Some(r) = root.get("resources") {
        if r.as_object().is_some_and(|o| !o.is_empty()) {
            return err(
                "resources: mutexes, waits and signals are not supported (periodic tasks only)",
            );
        }
    }
    if let Some(g) = root.get("global") {
        let g = g
            .as_object()
            .ok_or_else(|| RtAppError("global: expected an object".into()))?;
        for (k, val) in g {
            if k == "frag" {
                notes.push("global.frag: an obsolete key (AQuoSA's fragment), ignored by rt-app 1.0 and by rtscope".into());
                continue;
            }
            if !GLOBAL_KEYS.contains(&k.as_str()) {
                return err(format!("global.{k}: unknown key"));
            }
            match k.as_str() {
                "duration" => {
                    let d = int(val, "global.duration")?;
                    duration_s = (d > 0).then_some(d as f64);
                }
                "default_policy" => {
                    default_policy = val
                        .as_str()
                        .ok_or_else(|| RtAppError("global.default_policy: expected a string".into()))?
                        .to_string()
                }
                "calibration" => notes.push(format!(
                    "global.calibration = {val}: not used; rtscope calibrates its own work loop in thread CPU time and reports it"
                )),
                "lock_pages" => notes.push("global.lock_pages: rtscope always locks memory (mlockall)".into()),
                "pi_enabled" => notes.push("global.pi_enabled: no effect (no mutexes in periodic workloads)".into()),
                other => notes.push(format!("global.{other}: rt-app logging/IO option, no effect in rtscope (results go to rtscope's JSON/store)")),
            }
        }
    }
    let tasks = root
        .get("tasks")
        .and_then(Value::as_object)
        .ok_or_else(|| RtAppError("tasks: missing or not an object".into()))?;
    if tasks.is_empty() {
        return err("tasks: needs at least one thread (N ≥ 1)");
    }
    let mut specs = Vec::new();
    let mut refs: Vec<Option<String>> = Vec::new();
    for (name, tv) in tasks {
        let ctx = format!("tasks.{name}");
        let task_order = task_orders.get(name).unwrap_or(&no_order);
        let t = tv
            .as_object()
            .ok_or_else(|| RtAppError(format!("{ctx}: expected an object")))?;
        let get = |k: &str| t.get(k);
        let instance = match get("instance") {
            Some(v) => int(v, &format!("{ctx}.instance"))?,
            None => 1,
        };
        if !(1..=256).contains(&instance) {
            return err(format!("{ctx}.instance: must be 1..=256, got {instance}"));
        }
        for old in ["exec", "period", "deadline", "lock_order", "resources"] {
            if t.contains_key(old) {
                return err(format!("{ctx}.{old}: the pre-1.0 thread format (exec/period/deadline/lock_order, as in rt-app's merge/ fragments) is read by neither rt-app 1.0 nor rtscope; describe the thread with events (run, sleep, timer)"));
            }
        }
        let thread_loop = match get("loop") {
            Some(v) => int(v, &format!("{ctx}.loop"))?,
            None => -1,
        };
        let (mut pattern, phased) = if let Some(ph) = get("phases") {
            let ph = ph
                .as_object()
                .ok_or_else(|| RtAppError(format!("{ctx}.phases: expected an object")))?;
            if ph.len() != 1 {
                return err(format!(
                    "{ctx}.phases: {} phases; the native engine runs a thread of exactly one phase: {ENGINE_HINT}",
                    ph.len()
                ));
            }
            let (pn, pv) = ph
                .iter()
                .next()
                .ok_or_else(|| RtAppError(format!("{ctx}.phases: empty")))?;
            let po = pv
                .as_object()
                .ok_or_else(|| RtAppError(format!("{ctx}.phases.{pn}: expected an object")))?;
            for k in t.keys() {
                if !THREAD_KEYS.contains(&k.as_str()) {
                    return err(format!("{ctx}.{k}: unknown key (events belong in the phase when 'phases' is given)"));
                }
            }
            let phase_order = task_order
                .get("phases")
                .and_then(|o| o.get(pn))
                .unwrap_or(&no_order);
            let mut p = parse_events(
                po,
                phase_order,
                &format!("{ctx}.phases.{pn}"),
                &["loop", "cpus"],
            )?;
            if p.cpus.is_none() {
                if let Some(c) = get("cpus") {
                    p.cpus = Some(cpus(c, &format!("{ctx}.cpus"))?);
                }
            }
            (p, true)
        } else {
            let mut p = parse_events(t, task_order, &ctx, THREAD_KEYS)?;
            // rt-app 1.0 reads a thread's own "loop", when it has no phases, as the loop of its
            // one phase, and repeats the thread until the duration ends (checked against rt-app
            // 1.0: "loop": 3 without phases runs 100 loops of a 10-ms timer in 1 s).
            if let Some(l) = p.loop_.filter(|&l| l != -1) {
                notes.push(format!("{ctx}.loop = {l} without 'phases': rt-app 1.0 takes it as the loop of the thread's one phase and repeats the thread until the run ends; so does the native engine (put the events in a phase to bound the jobs)"));
            }
            p.loop_ = None;
            (p, false)
        };
        let phase_loop = if phased {
            pattern.loop_.unwrap_or(1)
        } else {
            -1
        };
        for (l, what) in [(thread_loop, "loop"), (phase_loop, "phases.*.loop")] {
            if l != -1 && l < 1 {
                return err(format!(
                    "{ctx}.{what}: must be -1 (forever) or 1..=2^31, got {l}"
                ));
            }
        }
        // rt-app runs the phase `phase_loop` times per pass of the thread, and the thread's
        // phases `thread_loop` times; -1 is forever (until the duration).
        let max_jobs = if thread_loop == -1 || phase_loop == -1 {
            None
        } else {
            Some((thread_loop as u64).saturating_mul(phase_loop as u64))
        };
        let period = pattern.period_ns.ok_or_else(|| {
            RtAppError(format!(
                "{ctx}: no timer event; the native engine releases jobs on a timer, and a run/sleep loop has none: {ENGINE_HINT}"
            ))
        })?;
        if period == 0 {
            return err(format!(
                "{ctx}: timer period must be 1..={MAX_US} µs, got 0"
            ));
        }
        // rt-app runs the events before the timer at the thread's start, then waits for the
        // timer (started then), so a job is released at each expiry. Events after the timer run
        // right after each expiry: with nothing before it, the first job comes one period in.
        let mut first_offset = 0;
        if pattern.before_timer == 0 {
            first_offset = period;
        } else if pattern.before_timer < pattern.segments.len() {
            return err(format!(
                "{ctx}: events both before and after the timer; the native engine releases each job at the timer and runs its events in one block: {ENGINE_HINT}"
            ));
        }
        let segments = std::mem::take(&mut pattern.segments);
        let wcet: u64 = segments
            .iter()
            .map(|s| match s {
                Segment::Run(x) | Segment::Busy(x) => *x,
                Segment::Sleep(_) => 0,
            })
            .sum();
        if wcet == 0 {
            return err(format!("{ctx}: no run/runtime event: nothing to execute"));
        }
        let policy_name = match get("policy") {
            Some(p) => p
                .as_str()
                .ok_or_else(|| RtAppError(format!("{ctx}.policy: expected a string")))?
                .to_string(),
            None => default_policy.clone(),
        };
        let prio = match get("priority") {
            Some(p) => Some(int(p, &format!("{ctx}.priority"))?),
            None => None,
        };
        let dl_us = |k: &str| -> Result<Option<u64>, RtAppError> {
            match get(k) {
                Some(v) => Ok(Some(us(v, &format!("{ctx}.{k}"))?)),
                None => Ok(None),
            }
        };
        let (dlr, dlp, dld) = (
            dl_us("dl-runtime")?,
            dl_us("dl-period")?,
            dl_us("dl-deadline")?,
        );
        let policy = match policy_name.as_str() {
            "SCHED_OTHER" => {
                let nice = prio.unwrap_or(0);
                if !(-20..=19).contains(&nice) {
                    return err(format!("{ctx}.priority: SCHED_OTHER nice must be -20..=19, got {nice}"));
                }
                ThreadPolicy::Other(nice as i32)
            }
            "SCHED_FIFO" | "SCHED_RR" => {
                let p = prio.unwrap_or(10);
                if !(1..=99).contains(&p) {
                    return err(format!("{ctx}.priority: {policy_name} priority must be 1..=99, got {p}"));
                }
                if policy_name == "SCHED_FIFO" {
                    ThreadPolicy::Fifo(p as u32)
                } else {
                    ThreadPolicy::Rr(p as u32)
                }
            }
            "SCHED_DEADLINE" => {
                let r = dlr.ok_or_else(|| RtAppError(format!("{ctx}: SCHED_DEADLINE needs dl-runtime")))?;
                // rt-app's defaults: dl-period = runtime… which the kernel refuses unless equal;
                // use the timer period when absent, and say so.
                let p = dlp.unwrap_or(period);
                if dlp.is_none() {
                    notes.push(format!("{ctx}: dl-period absent, using the timer period {} µs", period / 1000));
                }
                let d = dld.unwrap_or(p);
                if !(r <= d && d <= p) || r == 0 {
                    return err(format!("{ctx}: SCHED_DEADLINE needs 0 < dl-runtime ≤ dl-deadline ≤ dl-period (got {r}/{d}/{p} ns)"));
                }
                ThreadPolicy::Deadline {
                    runtime_ns: r,
                    deadline_ns: d,
                    period_ns: p,
                }
            }
            other => return err(format!("{ctx}.policy: unknown policy '{other}' (SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE)")),
        };
        if !matches!(policy, ThreadPolicy::Deadline { .. })
            && (dlr.is_some() || dlp.is_some() || dld.is_some())
        {
            return err(format!(
                "{ctx}: dl-runtime/dl-period/dl-deadline given but policy is {policy_name}"
            ));
        }
        let deadline = match policy {
            ThreadPolicy::Deadline { deadline_ns, .. } => deadline_ns.min(period),
            _ => period,
        };
        if wcet > deadline {
            return err(format!(
                "{ctx}: run+runtime = {} µs > deadline {} µs: infeasible",
                wcet / 1000,
                deadline / 1000
            ));
        }
        let offset = match get("delay") {
            Some(v) => us(v, &format!("{ctx}.delay"))?,
            None => 0,
        } + first_offset;
        let cpu_list = pattern.cpus.unwrap_or_default();
        if let Some(c) = cpu_list.iter().find(|c| !online.contains(c)) {
            return err(format!("{ctx}.cpus: CPU {c} is not online"));
        }
        for k in 0..instance {
            let id = specs.len() as u32;
            let nm = if instance > 1 {
                format!("{name}-{k}")
            } else {
                name.clone()
            };
            specs.push(TaskSpec {
                task: Task {
                    id,
                    wcet_ns: wcet,
                    period_ns: period,
                    deadline_ns: deadline,
                    wss_bytes: None,
                    name: Some(nm),
                },
                policy,
                cpus: cpu_list.clone(),
                group: None,
                segments: segments.clone(),
                offset_ns: offset,
                max_jobs,
                release: Release {
                    relative: pattern.relative,
                    shared: None,
                },
            });
            refs.push(pattern.timer_ref.clone());
        }
    }
    if specs.len() > super::runner::MAX_TASKS {
        return err(format!(
            "tasks: {} threads with their instances; the native engine runs 1..={}: {ENGINE_HINT}",
            specs.len(),
            super::runner::MAX_TASKS
        ));
    }
    // A timer `ref` names one timer for every thread that uses it, instances included; a name
    // that starts with "unique" is one timer per thread (doc/tutorial.txt, "unique" timer).
    let mut groups: Vec<&str> = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        let Some(r) = r.as_deref().filter(|r| !r.starts_with("unique")) else {
            continue;
        };
        if refs.iter().filter(|x| x.as_deref() == Some(r)).count() < 2 {
            continue;
        }
        let g = match groups.iter().position(|g| *g == r) {
            Some(g) => g,
            None => {
                groups.push(r);
                groups.len() - 1
            }
        };
        specs[i].release.shared = Some(g as u32);
    }
    if !groups.is_empty() {
        notes.push(format!("timers shared by several threads ({}): each of their jobs moves the one timer a period on, so the threads are released in turn (as rt-app does)", groups.join(", ")));
    }
    Ok(Workload {
        specs,
        duration_s,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = r#"{
	/* rt-app's doc/examples/template.json (comments and trailing commas as json-c allows) */
	"tasks" : {
		"thread0" : {
			"instance" : 2,
			"loop" : -1,
			"run" :   10000,
			"sleep" : 0,
			"timer" : { "ref" : "unique", "period" : 100000 },
		}
	},
	"global" : {
		"duration" : 6,
		"calibration" : "CPU0",
		"default_policy" : "SCHED_OTHER",
		"pi_enabled" : false,
		"lock_pages" : false,
		"logdir" : "./",
		"log_basename" : "rt-app2",
		"gnuplot" : true
	}
}"#;

    #[test]
    fn template_parses() {
        let w = parse(TEMPLATE, &[0, 1]).unwrap();
        assert_eq!(w.specs.len(), 2);
        assert_eq!(w.duration_s, Some(6.0));
        let s = &w.specs[0];
        assert_eq!(s.task.wcet_ns, 10_000_000);
        assert_eq!(s.task.period_ns, 100_000_000);
        assert_eq!(s.policy, ThreadPolicy::Other(0));
        assert_eq!(s.segments, vec![Segment::Run(10_000_000)]);
        assert_eq!(w.specs[1].task.name.as_deref(), Some("thread0-1"));
        assert!(w.notes.iter().any(|n| n.contains("calibration")));
    }

    #[test]
    fn deadline_and_fifo() {
        let j = r#"{"tasks": {
            "dl": {"policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 10000, "dl-deadline": 8000,
                   "phases": {"p": {"run0": 1000, "runtime1": 1000, "timer": {"ref": "t", "period": 10000}}}},
            "ff": {"policy": "SCHED_FIFO", "priority": 50, "cpus": [1], "run": 500, "timer": {"ref": "u", "period": 5000}}
        }, "global": {"duration": 2}}"#;
        let w = parse(j, &[0, 1]).unwrap();
        let dl = w
            .specs
            .iter()
            .find(|s| s.task.name.as_deref() == Some("dl"))
            .unwrap();
        assert_eq!(
            dl.policy,
            ThreadPolicy::Deadline {
                runtime_ns: 3_000_000,
                deadline_ns: 8_000_000,
                period_ns: 10_000_000
            }
        );
        assert_eq!(dl.task.wcet_ns, 2_000_000);
        assert_eq!(dl.task.deadline_ns, 8_000_000);
        let ff = w
            .specs
            .iter()
            .find(|s| s.task.name.as_deref() == Some("ff"))
            .unwrap();
        assert_eq!(ff.policy, ThreadPolicy::Fifo(50));
        assert_eq!(ff.cpus, vec![1]);
    }

    #[test]
    fn unknown_and_unsupported_keys_are_errors() {
        let bad = |j: &str| parse(j, &[0, 1]).unwrap_err().0;
        assert!(bad(
            r#"{"tasks": {"a": {"run": 1, "timer": {"ref":"x","period":10}, "colour": 3}}}"#
        )
        .contains("tasks.a.colour: unknown key"));
        assert!(bad(
            r#"{"tasks": {"a": {"run": 1, "lock": "m", "timer": {"ref":"x","period":10}}}}"#
        )
        .contains("not 'lock': run the file with rt-app itself (⟨taskset.engine⟩ rt-app)"));
        assert!(bad(r#"{"tasks": {"a": {"run": 1, "timer": {"ref":"x","period":10}}}, "global": {"durtion": 3}}"#).contains("global.durtion"));
        assert!(bad(r#"{"tasks": {"a": {"run": 1, "sleep": 10}}}"#).contains("no timer"));
        assert!(
            bad(r#"{"tasks": {"a": {"run": 20, "timer": {"ref":"x","period":10}}}}"#)
                .contains("infeasible")
        );
        assert!(bad(
            r#"{"tasks": {"a": {"run": 1, "cpus": [7], "timer": {"ref":"x","period":10}}}}"#
        )
        .contains("not online"));
        assert!(bad(r#"{"tasks": {}}"#).contains("at least one"));
    }

    #[test]
    fn comment_stripping_keeps_strings() {
        // Comments and trailing commas are blanked, not removed: byte positions are kept.
        let src = r#"{"a": "/* x */", /* y */ "b": [1,2,],}"#;
        let out = strip_json_extensions(src).unwrap();
        assert_eq!(out, r#"{"a": "/* x */",         "b": [1,2 ] }"#);
        assert_eq!(out.len(), src.len());
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["a"], "/* x */");
    }

    #[test]
    fn events_run_in_file_order_and_names_keep_their_utf8() {
        let timer = r#""timer0": {"ref": "t", "period": 10000}"#;
        let sleep_run =
            format!(r#"{{"tasks": {{"tâche": {{"sleep0": 2000, "run0": 1000, {timer}}}}}}} // é"#);
        let run_sleep = format!(
            r#"{{"tasks": {{"tâche": {{"run0": 1000, /* ü */ "sleep0": 2000, {timer},}}}}}}"#
        );
        let a = parse(&sleep_run, &[0]).unwrap();
        let b = parse(&run_sleep, &[0]).unwrap();
        assert_eq!(a.specs[0].task.name.as_deref(), Some("tâche"));
        assert_eq!(b.specs[0].task.name.as_deref(), Some("tâche"));
        assert_eq!(
            a.specs[0].segments,
            vec![Segment::Sleep(2_000_000), Segment::Run(1_000_000)]
        );
        assert_eq!(
            b.specs[0].segments,
            vec![Segment::Run(1_000_000), Segment::Sleep(2_000_000)]
        );
        // In a phase too.
        let phased = format!(
            r#"{{"tasks": {{"t": {{"phases": {{"p": {{"sleep1": 5, "run1": 7, {timer}}}}}}}}}}}"#
        );
        let p = parse(&phased, &[0]).unwrap();
        assert_eq!(
            p.specs[0].segments,
            vec![Segment::Sleep(5_000), Segment::Run(7_000)]
        );
        // A syntax error's position is the user's, comments included.
        let e = parse("{\n /* comment */ \"tasks\": ]}", &[0])
            .unwrap_err()
            .0;
        assert!(e.contains("line 2 column 25"), "{e}");
    }

    fn one(j: &str) -> Workload {
        parse(j, &[0, 1]).unwrap()
    }

    #[test]
    fn timers_are_relative_unless_absolute_is_asked() {
        let t = |mode: &str| {
            one(&format!(
                r#"{{"tasks": {{"a": {{"run": 1000, "timer": {{"ref": "x", "period": 10000{mode}}}}}}}}}"#
            ))
            .specs[0]
                .release
        };
        assert!(t("").relative);
        assert!(t(r#", "mode": "relative""#).relative);
        assert!(!t(r#", "mode": "absolute""#).relative);
        let e = parse(
            r#"{"tasks": {"a": {"run": 1, "timer": {"ref": "x", "period": 10, "mode": "abs"}}}}"#,
            &[0],
        )
        .unwrap_err()
        .0;
        assert!(
            e.contains("tasks.a.timer.mode: \"relative\" (the default) or \"absolute\""),
            "{e}"
        );
    }

    #[test]
    fn a_timer_ref_is_shared_unless_unique() {
        let w = one(r#"{"tasks": {
                "a": {"run": 1000, "timer": {"ref": "tick", "period": 100000}},
                "b": {"run": 1000, "timer": {"ref": "tick", "period": 100000}},
                "c": {"instance": 2, "run": 1000, "timer": {"ref": "unique", "period": 100000}},
                "d": {"instance": 2, "run": 1000, "timer": {"ref": "both", "period": 100000}}}}"#);
        let shared: Vec<Option<u32>> = w.specs.iter().map(|s| s.release.shared).collect();
        assert_eq!(shared, vec![Some(0), Some(0), None, None, Some(1), Some(1)]);
        assert!(
            w.notes.iter().any(|n| n.contains("tick, both")),
            "{:?}",
            w.notes
        );
    }

    #[test]
    fn loops_follow_rt_app() {
        let jobs = |j: &str| one(j).specs[0].max_jobs;
        let ph = |thread: &str, phase: &str| {
            format!(
                r#"{{"tasks": {{"a": {{{thread} "phases": {{"p": {{{phase} "run": 1000, "timer": {{"ref": "u", "period": 10000}}}}}}}}}}}}"#
            )
        };
        assert_eq!(jobs(&ph(r#""loop": 2,"#, r#""loop": 3,"#)), Some(6));
        assert_eq!(jobs(&ph(r#""loop": 2,"#, "")), Some(2));
        assert_eq!(jobs(&ph(r#""loop": -1,"#, r#""loop": 3,"#)), None);
        assert_eq!(jobs(&ph("", r#""loop": 3,"#)), None);
        // Without phases, rt-app 1.0 repeats the thread until the duration: said in a note.
        let w = one(
            r#"{"tasks": {"a": {"loop": 3, "run": 1000, "timer": {"ref": "u", "period": 10000}}}}"#,
        );
        assert_eq!(w.specs[0].max_jobs, None);
        assert!(w
            .notes
            .iter()
            .any(|n| n.contains("tasks.a.loop = 3 without 'phases'")));
        let e = parse(&ph(r#""loop": 0,"#, ""), &[0]).unwrap_err().0;
        assert!(
            e.contains("tasks.a.loop: must be -1 (forever) or 1..=2^31, got 0"),
            "{e}"
        );
    }

    #[test]
    fn the_timer_releases_the_job_where_it_stands() {
        // Timer first: the first job comes one period in.
        let w = one(r#"{"tasks": {"a": {"timer": {"ref": "u", "period": 10000}, "run": 1000}}}"#);
        assert_eq!(w.specs[0].offset_ns, 10_000_000);
        let w = one(r#"{"tasks": {"a": {"run": 1000, "timer": {"ref": "u", "period": 10000}}}}"#);
        assert_eq!(w.specs[0].offset_ns, 0);
        let e = parse(
            r#"{"tasks": {"a": {"run0": 1000, "timer": {"ref": "u", "period": 10000}, "run1": 5}}}"#,
            &[0],
        )
        .unwrap_err()
        .0;
        assert!(
            e.contains("events both before and after the timer")
                && e.contains("⟨taskset.engine⟩ rt-app"),
            "{e}"
        );
    }

    #[test]
    fn what_the_native_engine_cannot_run_is_refused_with_the_way_out() {
        let bad = |j: &str| parse(j, &[0, 1]).unwrap_err().0;
        let two = r#"{"tasks": {"a": {"phases": {
            "p1": {"run": 1000, "timer": {"ref": "u", "period": 10000}},
            "p2": {"run": 2000, "timer": {"ref": "u", "period": 10000}}}}}}"#;
        assert!(
            bad(two).contains("tasks.a.phases: 2 phases")
                && bad(two).contains("⟨taskset.engine⟩ rt-app")
        );
        let e = bad(r#"{"tasks": {"a": {"run": 1000, "sleep": 8000}}}"#);
        assert!(
            e.contains("tasks.a: no timer event") && e.contains("⟨taskset.engine⟩ rt-app"),
            "{e}"
        );
        let e = bad(r#"{"tasks": {"a": {"exec": 5000, "period": 5000}}}"#);
        assert!(e.contains("tasks.a.exec: the pre-1.0 thread format"), "{e}");
        // An obsolete global key rt-app ignores is a note, not an error hiding the real one.
        let w = one(
            r#"{"tasks": {"a": {"run": 1000, "timer": {"ref": "u", "period": 10000}}}, "global": {"frag": 1}}"#,
        );
        assert!(w
            .notes
            .iter()
            .any(|n| n.starts_with("global.frag: an obsolete key")));
    }

    #[test]
    fn duplicate_keys_and_deep_nesting_name_their_place_in_the_users_file() {
        let bad = |j: &str| parse(j, &[0, 1]).unwrap_err().0;
        let e = bad("{\"tasks\": {\"tâche\": {\"run\": 1, /* é */\n  \"run\": 2}}}");
        assert_eq!(
            e,
            "duplicate key \"tasks.tâche.run\" at line 1:22 and line 2:3 (each key may appear once in an object)"
        );
        let deep = format!("{{\"tasks\": {}{}}}", "[".repeat(70), "]".repeat(70));
        let e = bad(&deep);
        assert!(e.contains("nested deeper than 64 levels at line 1:"), "{e}");
        assert!(e.contains("accepted: 1..=64"), "{e}");
        let e = bad(r#"{"tasks": {"a": {"run": 1000, "timer": {"ref": "u", "period": -5}}}}"#);
        assert!(
            e.contains("tasks.a.timer.period: must be 0..=3600000000 µs, got -5"),
            "{e}"
        );
        let e =
            bad(r#"{"tasks": {"a": {"run": 3600000001, "timer": {"ref": "u", "period": 10}}}}"#);
        assert!(e.contains("tasks.a.run: must be 0..=3600000000 µs"), "{e}");
        let e = bad(r#"{"tasks": {"a": {"run": 1000, "timer": {"ref": "u", "period""#);
        assert!(e.starts_with("not JSON: EOF while parsing"), "{e}");
    }
}
