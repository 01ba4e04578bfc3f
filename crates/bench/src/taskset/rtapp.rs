//! rt-app JSON workloads made of periodic tasks (rt-app's doc/tutorial.txt): threads with
//! run/runtime/sleep events and one timer, policies SCHED_OTHER/FIFO/RR/DEADLINE. Every key
//! rtscope does not understand is an error naming it (rt-app users complain of silently ignored
//! keys); keys accepted without effect are listed in the notes.

use super::plan::{Segment, TaskSpec, ThreadPolicy};
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

struct Pattern {
    segments: Vec<Segment>,
    period_ns: Option<u64>,
    loop_: Option<i64>,
    cpus: Option<Vec<u32>>,
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
                        "{ctx}.{k}: a periodic task has exactly one timer; found a second"
                    ));
                }
                let t = v
                    .as_object()
                    .ok_or_else(|| RtAppError(format!("{ctx}.{k}: expected an object")))?;
                for (tk, tv) in t {
                    match tk.as_str() {
                        "ref" => {
                            tv.as_str().ok_or_else(|| {
                                RtAppError(format!("{ctx}.{k}.ref: expected a string"))
                            })?;
                        }
                        "period" => p.period_ns = Some(us(tv, &format!("{ctx}.{k}.period"))?),
                        "mode" => {
                            if tv.as_str() != Some("absolute") {
                                return err(format!("{ctx}.{k}.mode: only \"absolute\" (periodic releases) is supported, got {tv}"));
                            }
                        }
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
                    return err(format!("{ctx}.{k}: rt-app event '{base}' is not supported by rtscope (periodic tasks only: run, runtime, sleep, timer)"));
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
    rtscope_model::json_keys::reject_duplicate_keys(&json).map_err(RtAppError)?;
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
        let pattern = if let Some(ph) = get("phases") {
            let ph = ph
                .as_object()
                .ok_or_else(|| RtAppError(format!("{ctx}.phases: expected an object")))?;
            if ph.len() != 1 {
                return err(format!(
                    "{ctx}.phases: {} phases; rtscope runs periodic tasks with exactly one phase",
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
            if let Some(l) = get("loop") {
                let l = int(l, &format!("{ctx}.loop"))?;
                if l != -1 && l != 1 {
                    return err(format!(
                        "{ctx}.loop: only -1 or 1 around a single phase, got {l}"
                    ));
                }
            }
            p
        } else {
            parse_events(t, task_order, &ctx, THREAD_KEYS)?
        };
        let period = pattern.period_ns.ok_or_else(|| {
            RtAppError(format!(
                "{ctx}: no timer event; rtscope runs periodic tasks (one timer with a period)"
            ))
        })?;
        if period == 0 {
            return err(format!("{ctx}: timer period must be > 0"));
        }
        let wcet: u64 = pattern
            .segments
            .iter()
            .map(|s| match s {
                Segment::Run(x) | Segment::Busy(x) => *x,
                Segment::Sleep(_) => 0,
            })
            .sum();
        if wcet == 0 {
            return err(format!("{ctx}: no run/runtime event: nothing to execute"));
        }
        let max_jobs = match pattern.loop_ {
            None | Some(-1) => None,
            Some(l) if l >= 1 => Some(l as u64),
            Some(l) => return err(format!("{ctx}.loop: must be -1 or ≥ 1, got {l}")),
        };
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
        };
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
                segments: pattern.segments.clone(),
                offset_ns: offset,
                max_jobs,
            });
        }
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
        .contains("'lock' is not supported"));
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
}
