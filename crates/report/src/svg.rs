//! A minimal SVG writer for the report's figures: escaped text, scales, axes, ticks. The figures
//! are hand-drawn SVG (not a plotting crate) so the same markup is inlined in the HTML and
//! rendered to PNG by resvg, with nothing to download and nothing that needs a script.

use std::fmt::Write;

/// Escape text for HTML and XML (element content and quoted attributes).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0: show them instead.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

/// Series colours: distinguishable, print in greyscale with different lightness.
pub const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#7f7f7f",
];

#[derive(Clone, Copy, Debug)]
pub enum Scale {
    Linear {
        lo: f64,
        hi: f64,
    },
    /// log10 axis; both bounds > 0.
    Log {
        lo: f64,
        hi: f64,
    },
}

impl Scale {
    /// Position in 0..1.
    pub fn frac(&self, v: f64) -> f64 {
        match *self {
            Scale::Linear { lo, hi } => {
                if hi > lo {
                    (v - lo) / (hi - lo)
                } else {
                    0.5
                }
            }
            Scale::Log { lo, hi } => {
                let v = v.max(lo);
                if hi > lo {
                    (v.log10() - lo.log10()) / (hi.log10() - lo.log10())
                } else {
                    0.5
                }
            }
        }
    }

    /// Tick values with labels.
    pub fn ticks(&self) -> Vec<(f64, String)> {
        match *self {
            Scale::Linear { lo, hi } if hi <= lo => Vec::new(),
            Scale::Linear { lo, hi } => {
                let span = hi - lo;
                let raw = span / 6.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 5.0, 10.0]
                    .iter()
                    .map(|m| m * mag)
                    .find(|s| span / s <= 7.0)
                    .unwrap_or(10.0 * mag);
                let mut t = (lo / step).ceil() * step;
                let mut out = Vec::new();
                while t <= hi + step * 1e-9 {
                    out.push((t, fmt_num(t)));
                    t += step;
                }
                out
            }
            Scale::Log { lo, hi } => {
                let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
                (a..=b)
                    .map(|e| 10f64.powi(e))
                    .filter(|v| *v >= lo * 0.999 && *v <= hi * 1.001)
                    .map(|v| (v, fmt_pow10(v)))
                    .collect()
            }
        }
    }
}

pub fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{:.0}", v)
    } else if v.abs() >= 1.0 {
        format!("{:.1}", v)
    } else {
        format!("{:.2}", v)
    }
}

fn fmt_pow10(v: f64) -> String {
    let e = v.log10().round() as i32;
    if (-2..=4).contains(&e) {
        fmt_num(v)
    } else {
        format!("1e{e}")
    }
}

/// A figure canvas with a plot area and margins for axes.
pub struct Plot {
    pub w: f64,
    pub h: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    pub x: Scale,
    pub y: Scale,
    body: String,
}

impl Plot {
    pub fn new(w: f64, h: f64, x: Scale, y: Scale) -> Plot {
        Plot {
            w,
            h,
            left: 62.0,
            right: 16.0,
            top: 28.0,
            bottom: 46.0,
            x,
            y,
            body: String::new(),
        }
    }
    pub fn px(&self, v: f64) -> f64 {
        self.left + self.x.frac(v).clamp(0.0, 1.0) * (self.w - self.left - self.right)
    }
    pub fn py(&self, v: f64) -> f64 {
        self.h - self.bottom - self.y.frac(v).clamp(0.0, 1.0) * (self.h - self.top - self.bottom)
    }
    /// The `d` of a polyline through `pts` (data coordinates): `M` to the first, `L` to each next.
    pub fn path(&self, pts: &[(f64, f64)]) -> String {
        let mut d = String::new();
        for (k, (x, y)) in pts.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.2} {:.2}",
                if k == 0 { "M" } else { "L" },
                self.px(*x),
                self.py(*y)
            );
        }
        d
    }
    pub fn raw(&mut self, s: &str) {
        self.body.push_str(s);
    }
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, size: f64, s: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" font-size="{size}">{}</text>"#,
            esc(s)
        );
    }
    pub fn axes(&mut self, title: &str, xlabel: &str, ylabel: &str) {
        let (x0, x1) = (self.left, self.w - self.right);
        let (y0, y1) = (self.h - self.bottom, self.top);
        let mut s = String::new();
        for (v, l) in self.y.ticks() {
            let y = self.py(v);
            let _ = write!(
                s,
                r##"<line x1="{x0:.1}" y1="{y:.1}" x2="{x1:.1}" y2="{y:.1}" stroke="#ddd" stroke-width="0.6"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">{}</text>"##,
                x0 - 4.0,
                y + 3.5,
                esc(&l)
            );
        }
        for (v, l) in self.x.ticks() {
            let x = self.px(v);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{y0:.1}" x2="{x:.1}" y2="{:.1}" stroke="#444" stroke-width="0.8"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text>"##,
                y0 + 4.0,
                y0 + 15.0,
                esc(&l)
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{x0:.1}" y="{y1:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444" stroke-width="0.8"/>"##,
            x1 - x0,
            y0 - y1
        );
        self.body.insert_str(0, &s);
        self.text(self.w / 2.0, 17.0, "middle", 13.0, title);
        self.text((x0 + x1) / 2.0, self.h - 10.0, "middle", 11.0, xlabel);
        let _ = write!(
            self.body,
            r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle" font-size="11">{}</text>"#,
            (y0 + y1) / 2.0,
            esc(ylabel)
        );
    }
    /// Legend entries at the top right of the plot area.
    pub fn legend(&mut self, entries: &[(String, &str)]) {
        let x = self.w - self.right - 8.0;
        for (i, (label, colour)) in entries.iter().enumerate() {
            let y = self.top + 14.0 + 14.0 * i as f64;
            let _ = write!(
                self.body,
                r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/>"#,
                x - 10.0,
                y - 9.0
            );
            self.text(x - 14.0, y, "end", 10.0, label);
        }
    }
    pub fn finish(self, id: &str, title: &str) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="figure" id="{}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" role="img"><title>{}</title><rect width="{w}" height="{h}" fill="white"/>{}</svg>"#,
            esc(id),
            esc(title),
            self.body,
            w = self.w,
            h = self.h
        )
    }
}

/// One series of a [`LinePlot`].
pub struct Series {
    pub label: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
    /// Draw as a connected line (true) or as dots (false).
    pub line: bool,
}

/// An x/y figure of a benchmark (PDLT scan, sched-scale), drawn on the same canvas, axes and
/// escaping as every other figure.
pub struct LinePlot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Thick bars on the x axis: (x_start, x_end, label) — the system call's duration in PDLT
    /// plots (heursch-2001 Figs. 3–8).
    pub x_bars: Vec<(f64, f64, String)>,
}

/// The axis end: the next 1, 2 or 5 × 10^k at or above `v`.
fn nice_max(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        return 1.0;
    }
    let e = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if v <= m * e {
            return m * e;
        }
    }
    10.0 * e
}

impl LinePlot {
    pub fn render(&self) -> String {
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.x_bars.iter().flat_map(|b| [b.0, b.1]));
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        let (x_lo, x_hi) = if lo.is_finite() {
            (
                lo.min(0.0),
                if hi > lo.min(0.0) {
                    hi
                } else {
                    lo.min(0.0) + 1.0
                },
            )
        } else {
            (0.0, 1.0)
        };
        let y_hi = nice_max(
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .fold(0.0, f64::max),
        );
        let mut p = Plot::new(
            900.0,
            500.0,
            Scale::Linear { lo: x_lo, hi: x_hi },
            Scale::Linear { lo: 0.0, hi: y_hi },
        );
        p.axes(&self.title, &self.x_label, &self.y_label);
        let y0 = p.py(0.0);
        for (x0, x1, label) in &self.x_bars {
            let (a, b) = (p.px(*x0), p.px(*x1));
            p.raw(&format!(
                r#"<line x1="{a:.1}" y1="{y0:.1}" x2="{b:.1}" y2="{y0:.1}" stroke="black" stroke-width="6"><title>{}</title></line>"#,
                esc(label)
            ));
        }
        for se in &self.series {
            if se.line {
                let pts: Vec<String> = se
                    .points
                    .iter()
                    .map(|&(x, y)| format!("{:.1},{:.1}", p.px(x), p.py(y)))
                    .collect();
                p.raw(&format!(
                    r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>"#,
                    se.color,
                    pts.join(" ")
                ));
            } else {
                for &(x, y) in &se.points {
                    let (cx, cy) = (p.px(x), p.py(y));
                    p.raw(&format!(
                        r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="1.6" fill="{}"/>"#,
                        se.color
                    ));
                }
            }
        }
        let entries: Vec<(String, &str)> = self
            .series
            .iter()
            .map(|s| (s.label.clone(), s.color))
            .collect();
        p.legend(&entries);
        p.finish("line-plot", &self.title)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            esc("<script>alert(\"1\")</script>&'"),
            "&lt;script&gt;alert(&quot;1&quot;)&lt;/script&gt;&amp;&#39;"
        );
        assert_eq!(esc("a\u{1b}[31m"), "a\\u{1b}[31m");
    }

    #[test]
    fn line_plot_draws_dots_lines_bars_and_escapes() {
        let p = LinePlot {
            title: "t <x>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![
                Series {
                    label: "dots".into(),
                    color: "#000",
                    points: vec![(1.0, 2.0), (3.0, 4.0)],
                    line: false,
                },
                Series {
                    label: "line".into(),
                    color: "#f00",
                    points: vec![(0.0, 1.0), (2.0, 3.0)],
                    line: true,
                },
            ],
            x_bars: vec![(0.0, 1.5, "syscall".into())],
        };
        let s = p.render();
        assert_eq!(s.matches("<circle").count(), 2);
        assert_eq!(s.matches("<polyline").count(), 1);
        assert!(s.contains("stroke-width=\"6\""));
        assert!(s.contains("t &lt;x&gt;"));
        assert!(s.ends_with("</svg>"));
        assert_eq!(nice_max(3.2), 5.0);
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(100.0), 100.0);
    }

    #[test]
    fn scales() {
        let s = Scale::Log {
            lo: 1.0,
            hi: 1000.0,
        };
        assert!((s.frac(10.0) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.ticks().len(), 4);
        let l = Scale::Linear { lo: 0.0, hi: 100.0 };
        let t: Vec<f64> = l.ticks().iter().map(|t| t.0).collect();
        assert_eq!(t, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
    }
}
