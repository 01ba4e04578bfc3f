//! The library's typed fields named as the user typed them: a refusal from
//! `rtscope_session::resolve` names a [`Field`]; here it becomes the flag.

use rtscope_session::input::Field;
use rtscope_session::VerbError;

/// The flag of each field of a measurement request.
pub fn flag(f: Field) -> &'static str {
    match f {
        Field::Cpus => "--cpus",
        Field::Interval => "--interval",
        Field::Distance => "--distance",
        Field::Aligned => "--aligned",
        Field::Policy => "--policy",
        Field::Priority => "--priority",
        Field::Nice => "--nice",
        Field::DlRuntime => "--dl-runtime",
        Field::DlDeadline => "--dl-deadline",
        Field::DlPeriod => "--dl-period",
        Field::Duration => "--duration",
        Field::Loops => "--loops",
        Field::Timer => "--timer",
        Field::Clock => "--clock",
        Field::BreakAbove => "--break-above",
        Field::RecordAbove => "--record-above",
        Field::Worst => "--worst",
        Field::LinearMax => "--linear-max",
        Field::Json => "--json",
        Field::HistogramFile => "--histogram-file",
        Field::CyclictestJson => "--cyclictest-json",
        Field::Raw => "--raw",
        Field::Tags => "--tag",
        Field::Load => "--load",
        Field::LoadCpus => "--load-cpus",
        Field::Wss => "--wss",
        Field::Trace => "--trace",
        Field::TraceFile => "--trace-file",
        Field::TraceFileMode => "--trace-file-mode",
        Field::TraceKeep => "--trace-keep",
        Field::Checkpoint => "--checkpoint",
        Field::NoStore => "--no-store",
        Field::Bound => "--bound",
        Field::BoundPoints => "--bound-points",
        Field::Preset => "--preset",
        Field::AllowUnprivileged => "--allow-unprivileged",
        Field::OutDir => "--out",
        Field::Housekeeping => "--housekeeping",
        Field::UntilStable => "--until-stable",
        Field::StableTolerance => "--stable-tolerance",
        Field::StableWindow => "--stable-window",
        Field::MaxDuration => "--max-duration",
        Field::WatchPid => "--pid",
        Field::WatchComm => "--comm",
        Field::WatchCommand => "--",
        Field::Since => "--since",
        Field::Until => "--until",
        Field::Db => "--db",
        Field::WatchCgroup => "--cgroup",
        Field::WatchOnThreshold => "--on-threshold",
    }
}

/// A library refusal as the user's one line (fields named by their flags); other failures
/// pass through.
pub fn usage(e: VerbError) -> anyhow::Error {
    if e.is_bad_input() {
        crate::usage!("{}", e.render(flag))
    } else {
        e.into()
    }
}
