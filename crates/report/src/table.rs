//! A plain text table: columns padded to their widest cell (by characters), two spaces apart,
//! the last column unpadded.

pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let n = headers.len();
    let mut w: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
            }
        }
        s.truncate(s.trim_end().len());
        s + "\n"
    };
    let mut out = line(headers.to_vec());
    for r in rows {
        out += &line(r.iter().take(n).map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_align_by_characters() {
        let t = super::render(
            &["a", "bb", "c"],
            &[
                vec!["xyz".into(), "µ".into(), "last".into()],
                vec!["1".into(), "22".into(), "".into()],
            ],
        );
        assert_eq!(t, "a    bb  c\nxyz  µ   last\n1    22\n");
    }
}
