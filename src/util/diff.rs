//! A unified diff of two texts, line by line (`diff -u` format with 3 lines of context), for
//! `fedsched plan --diff`. The longest common subsequence of the lines is computed on the part
//! between the common prefix and suffix; past [`MAX_CELLS`] of that table, the middle is shown
//! as removed and added whole.

/// Largest LCS table (lines × lines) computed; beyond it the changed middle is one hunk.
const MAX_CELLS: usize = 4_000_000;
/// Lines of context around each change.
const CONTEXT: usize = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Same,
    Del,
    Add,
}

/// The unified diff of `old` and `new` (`--- a/PATH` / `+++ b/PATH` headers; `/dev/null` for
/// a missing side). Empty when the texts are equal.
pub fn unified(path: &str, old: Option<&str>, new: Option<&str>) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.map(|s| s.lines().collect()).unwrap_or_default();
    let b: Vec<&str> = new.map(|s| s.lines().collect()).unwrap_or_default();
    let ops = script(&a, &b);
    let mut out = format!(
        "--- {}\n+++ {}\n",
        if old.is_some() { format!("a/{path}") } else { "/dev/null".into() },
        if new.is_some() { format!("b/{path}") } else { "/dev/null".into() }
    );
    // Positions (in ops) of the changes, grouped into hunks with their context.
    let changed: Vec<usize> = (0..ops.len()).filter(|i| ops[*i] != Op::Same).collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 2 * CONTEXT + 1 {
            end = changed[i];
            i += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        hunk(&ops[..end], start, &a, &b, &mut out);
    }
    out
}

/// Appends the hunk of `ops[start..]` (line numbers counted from the start of `ops`).
fn hunk(ops: &[Op], start: usize, a: &[&str], b: &[&str], out: &mut String) {
    let (mut ai, mut bi) = (0usize, 0usize);
    for op in &ops[..start] {
        match op {
            Op::Same => (ai, bi) = (ai + 1, bi + 1),
            Op::Del => ai += 1,
            Op::Add => bi += 1,
        }
    }
    let (a0, b0) = (ai, bi);
    let mut body = String::new();
    for op in &ops[start..] {
        match op {
            Op::Same => {
                body.push_str(&format!(" {}\n", a[ai]));
                (ai, bi) = (ai + 1, bi + 1);
            }
            Op::Del => {
                body.push_str(&format!("-{}\n", a[ai]));
                ai += 1;
            }
            Op::Add => {
                body.push_str(&format!("+{}\n", b[bi]));
                bi += 1;
            }
        }
    }
    let range = |from: usize, len: usize| match len {
        0 => format!("{from},0"),
        1 => format!("{}", from + 1),
        _ => format!("{},{len}", from + 1),
    };
    out.push_str(&format!("@@ -{} +{} @@\n", range(a0, ai - a0), range(b0, bi - b0)));
    out.push_str(&body);
}

/// The edit script turning `a` into `b`.
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut ops = vec![Op::Same; prefix];
    if ma.len().saturating_mul(mb.len()) > MAX_CELLS {
        ops.extend(std::iter::repeat_n(Op::Del, ma.len()));
        ops.extend(std::iter::repeat_n(Op::Add, mb.len()));
    } else {
        // lcs[i][j]: the LCS length of ma[i..] and mb[j..].
        let w = mb.len() + 1;
        let mut lcs = vec![0u32; (ma.len() + 1) * w];
        for i in (0..ma.len()).rev() {
            for j in (0..mb.len()).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < ma.len() || j < mb.len() {
            if i < ma.len() && j < mb.len() && ma[i] == mb[j] {
                ops.push(Op::Same);
                (i, j) = (i + 1, j + 1);
            } else if i < ma.len() && (j == mb.len() || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                ops.push(Op::Del);
                i += 1;
            } else {
                ops.push(Op::Add);
                j += 1;
            }
        }
    }
    ops.extend(std::iter::repeat_n(Op::Same, suffix));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified("x", Some("a\nb\n"), Some("a\nb\n")), "");
    }

    #[test]
    fn one_changed_line_in_the_middle() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        let d = unified("c/f.yaml", Some(old), Some(new));
        assert_eq!(d, "--- a/c/f.yaml\n+++ b/c/f.yaml\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    }

    #[test]
    fn added_and_removed_files() {
        assert_eq!(unified("f", None, Some("a\nb\n")), "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n");
        assert_eq!(unified("f", Some("a\n"), None), "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n");
    }

    #[test]
    fn distant_changes_make_two_hunks() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new = old.replace("2\n", "two\n").replace("19\n", "nineteen\n");
        let d = unified("f", Some(&old), Some(&new));
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        assert!(d.contains("-19\n+nineteen\n") && d.contains("-2\n+two\n"), "{d}");
    }
}
