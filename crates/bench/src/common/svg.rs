//! A small SVG scatter/line plot so every verb can write its figure without the report crate
//! (which renders the HTML report from the same data in the RunRecord).

use std::fmt::Write;

pub struct Series {
    pub label: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
    /// Draw as connected line (true) or dots (false).
    pub line: bool,
}

pub struct Plot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Thick bars on the x axis: (x_start, x_end, label) — the system call's duration in PDLT
    /// plots (heursch-2001 Figs. 3–8).
    pub x_bars: Vec<(f64, f64, String)>,
}

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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Plot {
    pub fn render(&self) -> String {
        let (w, h) = (900.0, 500.0);
        let (l, r, t, b) = (80.0, 20.0, 40.0, 60.0);
        let all = self.series.iter().flat_map(|s| s.points.iter());
        let xs_min = all
            .clone()
            .map(|p| p.0)
            .chain(self.x_bars.iter().map(|b| b.0))
            .fold(f64::INFINITY, f64::min);
        let xs_max = all
            .clone()
            .map(|p| p.0)
            .chain(self.x_bars.iter().map(|b| b.1))
            .fold(f64::NEG_INFINITY, f64::max);
        let y_max = nice_max(all.map(|p| p.1).fold(0.0, f64::max));
        let x_min = if xs_min.is_finite() {
            xs_min.min(0.0)
        } else {
            0.0
        };
        let x_max = if xs_max.is_finite() && xs_max > x_min {
            xs_max
        } else {
            x_min + 1.0
        };
        let sx = |x: f64| l + (x - x_min) / (x_max - x_min) * (w - l - r);
        let sy = |y: f64| h - b - y / y_max * (h - t - b);
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(
            s,
            r#"<rect width="100%" height="100%" fill="white"/><text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
            w / 2.0,
            esc(&self.title)
        );
        let _ = write!(
            s,
            r#"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="black"/><line x1="{l}" y1="{t}" x2="{l}" y2="{0}" stroke="black"/>"#,
            h - b,
            w - r
        );
        for i in 0..=5 {
            let yv = y_max * i as f64 / 5.0;
            let xv = x_min + (x_max - x_min) * i as f64 / 5.0;
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{:.4}</text>"#,
                l - 5.0,
                sy(yv) + 4.0,
                trim(yv)
            );
            let _ = write!(
                s,
                r##"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/>"##,
                sy(yv),
                w - r
            );
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                sx(xv),
                h - b + 16.0,
                trim(xv)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            (l + w - r) / 2.0,
            h - 15.0,
            esc(&self.x_label)
        );
        let _ = write!(
            s,
            r#"<text x="15" y="{}" text-anchor="middle" transform="rotate(-90 15 {0})">{}</text>"#,
            (t + h - b) / 2.0,
            esc(&self.y_label)
        );
        for (x0, x1, label) in &self.x_bars {
            let _ = write!(
                s,
                r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="black" stroke-width="6"><title>{}</title></line>"#,
                sx(*x0),
                sx(*x1),
                esc(label),
                y = h - b
            );
        }
        for (i, se) in self.series.iter().enumerate() {
            if se.line {
                let pts: Vec<String> = se
                    .points
                    .iter()
                    .map(|p| format!("{:.1},{:.1}", sx(p.0), sy(p.1)))
                    .collect();
                let _ = write!(
                    s,
                    r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>"#,
                    se.color,
                    pts.join(" ")
                );
            } else {
                for p in &se.points {
                    let _ = write!(
                        s,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="1.6" fill="{}"/>"#,
                        sx(p.0),
                        sy(p.1),
                        se.color
                    );
                }
            }
            let _ = write!(
                s,
                r#"<rect x="{}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{}">{}</text>"#,
                w - r - 260.0,
                t + 5.0 + 16.0 * i as f64,
                se.color,
                w - r - 245.0,
                t + 14.0 + 16.0 * i as f64,
                esc(&se.label)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn renders_points_and_bars() {
        let p = Plot {
            title: "t <x>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                label: "a".into(),
                color: "red",
                points: vec![(0.0, 1.0), (2.0, 3.0)],
                line: false,
            }],
            x_bars: vec![(0.0, 1.5, "syscall".into())],
        };
        let s = p.render();
        assert_eq!(s.matches("<circle").count(), 2);
        assert!(s.contains("stroke-width=\"6\""));
        assert!(s.contains("t &lt;x&gt;"));
        assert!(s.ends_with("</svg>\n"));
    }
    #[test]
    fn nice_axis() {
        assert_eq!(nice_max(3.2), 5.0);
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(100.0), 100.0);
    }
}
