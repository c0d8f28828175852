//! The guide's examples run (issue 55): every ```console block of `README.md` and of
//! `docs/guide/**/*.md` is executed against a copy of the demo, and its output compared, so a
//! changed message or flag fails here instead of misleading a reader. And every relative link of
//! the documentation leads to a file and a heading that exist.
//!
//! A ```console block is a session: lines starting with `$ ` are commands (run by `sh` in a
//! scratch directory holding a copy of `config/`, with the binary under test first on `PATH` as
//! `fedsched`, stderr merged into stdout), the lines after each command its expected output. In
//! the expected output `[..]` matches any text within a line and a line `...` any number of
//! lines (times, durations and paths are written that way); a command that exits non-zero shows
//! `[exit N]` as its last line. The blocks of one page share one scratch directory, in order.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::support::{bin, copy_dir, repo_root};

/// A command of a console block and the output it must give.
struct Step {
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// The Markdown files of the documentation: the README and every page of the guide.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read docs") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![repo_root().join("README.md")];
    walk(&repo_root().join("docs/guide"), &mut out);
    out.sort();
    out
}

/// The console blocks of a page, as steps in order.
fn console_steps(text: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut in_console = false;
    let mut in_other = false;
    for (i, line) in text.lines().enumerate() {
        if in_console || in_other {
            if line.starts_with("```") {
                in_console = false;
                in_other = false;
            } else if in_console {
                if let Some(cmd) = line.strip_prefix("$ ") {
                    steps.push(Step { line: i + 1, command: cmd.to_string(), expected: Vec::new() });
                } else if let Some(step) = steps.last_mut() {
                    step.expected.push(line.to_string());
                }
            }
        } else if line.trim_end() == "```console" {
            in_console = true;
        } else if line.starts_with("```") {
            in_other = true;
        }
    }
    steps
}

/// Whether `actual` matches the pattern line `expected` (`[..]` matches any text).
fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() || !actual.ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the lines `actual` match the pattern lines `expected` (a line `...` matches any
/// number of lines).
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((e, rest)) => actual.split_first().is_some_and(|(a, more)| line_matches(e, a) && lines_match(rest, more)),
    }
}

/// Runs `command` as the guide's reader would, in `dir`.
fn run(dir: &Path, command: &str) -> String {
    let bin_dir = Path::new(bin()).parent().expect("the binary's directory");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(dir)
        .env("PATH", path)
        .env("FEDSCHED_LOG", "error")
        .env("LC_ALL", "C")
        .env_remove("FEDSCHED_CONFIG")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("JOURNAL_STREAM")
        .env_remove("INVOCATION_ID")
        .output()
        .expect("run sh");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[exit {}]\n", out.status.code().unwrap_or(-1)));
    }
    text
}

#[test]
fn every_console_block_of_the_documentation_gives_the_output_it_shows() {
    let mut ran = 0;
    let mut failures = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("read page");
        let steps = console_steps(&text);
        if steps.is_empty() {
            continue;
        }
        let scratch = tempfile::tempdir().expect("tempdir");
        copy_dir(&repo_root().join("config"), &scratch.path().join("config"));
        let rel = page.strip_prefix(repo_root()).unwrap_or(&page).display().to_string();
        for step in steps {
            let actual = run(scratch.path(), &step.command);
            let lines: Vec<&str> = actual.lines().collect();
            ran += 1;
            if !lines_match(&step.expected, &lines) {
                failures.push(format!(
                    "{rel}:{}: $ {}\n--- the page shows\n{}\n--- it prints\n{}",
                    step.line,
                    step.command,
                    step.expected.join("\n"),
                    actual.trim_end()
                ));
            }
        }
    }
    assert!(ran >= 10, "only {ran} console commands in the documentation");
    assert!(failures.is_empty(), "{} example(s) out of date:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn the_matcher_takes_wildcards_and_nothing_else() {
    let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(lines_match(&e(&["a [..] c"]), &["a b c"]));
    assert!(!lines_match(&e(&["a [..] c"]), &["a b d"]));
    assert!(lines_match(&e(&["x", "...", "z"]), &["x", "y1", "y2", "z"]));
    assert!(lines_match(&e(&["x", "...", "z"]), &["x", "z"]));
    assert!(!lines_match(&e(&["x", "z"]), &["x", "y", "z"]));
    assert!(!lines_match(&e(&["exact"]), &["exact", "more"]));
    let steps = console_steps("```console\n$ echo hi\nhi\n```\n```sh\n$ not run\n```\n");
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].command.as_str(), steps[0].expected.clone()), ("echo hi", e(&["hi"])));
}

/// The anchor a code host and mdBook give a heading.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_relative_link_of_the_documentation_leads_somewhere() {
    let mut docs = pages();
    docs.extend(["ARCHITECTURE.md", "BENCHMARKS.md", "CHANGELOG.md", "docs/design.md"].map(|p| repo_root().join(p)));
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in docs {
        let text = std::fs::read_to_string(&page).expect("read page");
        let mut fence = false;
        for (i, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                fence = !fence;
                continue;
            }
            if fence {
                continue;
            }
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                rest = &rest[at + 2..];
                let Some(end) = rest.find(')') else { break };
                let target = &rest[..end];
                if target.starts_with("http") || target.contains(' ') {
                    continue;
                }
                checked += 1;
                let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
                let dest = if file.is_empty() { page.clone() } else { page.parent().expect("dir").join(file) };
                let rel = page.strip_prefix(repo_root()).unwrap_or(&page).display().to_string();
                if !dest.exists() {
                    broken.push(format!("{rel}:{}: {target}: no such file", i + 1));
                } else if !fragment.is_empty() && dest.extension().is_some_and(|x| x == "md") {
                    let dest_text = std::fs::read_to_string(&dest).expect("read link target");
                    if !anchors(&dest_text).iter().any(|a| a == fragment) {
                        broken.push(format!("{rel}:{}: {target}: no such heading", i + 1));
                    }
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} links checked");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
