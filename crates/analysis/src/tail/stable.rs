//! When a series has stopped moving (`--until-stable`): every value of the last `window_s`
//! lies within `tolerance` (relative) of the latest one, and the series is at least that old.
//!
//! A series is a vector of values per time point (e.g. per CPU the 1e-9 interval's two ends,
//! or per CPU the bound); a point whose values cannot be computed yet (too few maxima, an open
//! interval end) starts the series over. Memory is bounded: points older than the window are
//! dropped, and points closer than a fortieth of the window are not kept.

use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct StableTracker {
    tolerance: f64,
    window_s: f64,
    points: VecDeque<(f64, Vec<f64>)>,
    /// When the series (re)started.
    since_s: Option<f64>,
}

impl StableTracker {
    pub fn new(tolerance: f64, window_s: f64) -> StableTracker {
        StableTracker {
            tolerance,
            window_s,
            points: VecDeque::new(),
            since_s: None,
        }
    }

    /// The series' values at `t_s`; None (or a non-finite value) starts it over.
    pub fn push(&mut self, t_s: f64, values: Option<Vec<f64>>) {
        let Some(v) = values.filter(|v| !v.is_empty() && v.iter().all(|x| x.is_finite())) else {
            self.points.clear();
            self.since_s = None;
            return;
        };
        if self.points.back().is_some_and(|p| p.1.len() != v.len()) {
            self.points.clear();
            self.since_s = None;
        }
        self.since_s.get_or_insert(t_s);
        while self
            .points
            .front()
            .is_some_and(|p| p.0 < t_s - self.window_s)
        {
            self.points.pop_front();
        }
        let spacing = self.window_s / 40.0;
        if self.points.len() >= 2
            && self
                .points
                .get(self.points.len() - 2)
                .is_some_and(|p| t_s - p.0 < spacing)
        {
            // Replace the latest rather than grow: keep one point per spacing.
            self.points.pop_back();
        }
        self.points.push_back((t_s, v));
    }

    /// Every value of the window is within the tolerance of the latest, over a full window.
    pub fn stable(&self, t_s: f64) -> bool {
        let (Some(since), Some(last)) = (self.since_s, self.points.back()) else {
            return false;
        };
        if t_s - since < self.window_s {
            return false;
        }
        self.points.iter().all(|(_, v)| {
            v.iter().zip(&last.1).all(|(a, b)| {
                let scale = b.abs().max(f64::MIN_POSITIVE);
                (a - b).abs() / scale <= self.tolerance
            })
        })
    }
}
