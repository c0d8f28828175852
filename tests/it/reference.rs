//! The guide's references cannot drift from the code (issue 55):
//! - `docs/guide/reference/cli.md` is generated from the clap definitions
//!   (`fedsched::cli::reference::markdown`) and compared; `FEDSCHED_BLESS=1` rewrites it;
//! - `docs/guide/reference/config.md` documents every key the config types accept, and only those:
//!   the keys are found by probing `Config::parse` (every section is `deny_unknown_fields`, so an
//!   unknown key's error lists the section's fields);
//! - `docs/guide/reference/metrics.md` lists every metric the daemon's registry exports, with its
//!   type, and only those.

use std::collections::BTreeSet;
use std::path::Path;

use fedsched::config::{Config, ConfigError};

use super::support::repo_root;

fn page(rel: &str) -> String {
    let p = repo_root().join("docs/guide/reference").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_cli_reference_is_the_clap_definitions() {
    let want = fedsched::cli::reference::markdown();
    let path = repo_root().join("docs/guide/reference/cli.md");
    if std::env::var_os("FEDSCHED_BLESS").is_some() {
        std::fs::write(&path, &want).expect("write the CLI reference");
        return;
    }
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "docs/guide/reference/cli.md is not what the clap definitions give (first difference at line {}):\n\
             --- the page\n{}\n--- generated\n{}\n\
             rewrite it with: FEDSCHED_BLESS=1 cargo test --test it reference::the_cli_reference",
            line + 1,
            got.lines().nth(line).unwrap_or("(end)"),
            want.lines().nth(line).unwrap_or("(end)"),
        );
    }
}

/// The fields of the config section at `path` (`[]` is the top level), when it is a struct:
/// the `unknown field` error of a probe key lists them.
fn section_fields(path: &[&str]) -> Option<Vec<String>> {
    let text =
        if path.is_empty() { "__probe__ = 1\n".to_string() } else { format!("[{}]\n__probe__ = 1\n", path.join(".")) };
    let message = match Config::parse(&text, Path::new("probe.toml")) {
        Err(ConfigError::Invalid { message, .. }) => message,
        _ => return None,
    };
    let rest = message.strip_prefix("unknown field `__probe__`, ")?;
    if rest.starts_with("there are no fields") {
        return Some(Vec::new());
    }
    let list = rest.strip_prefix("expected one of ").or_else(|| rest.strip_prefix("expected "))?;
    Some(list.split([',', ' ']).filter_map(|w| w.strip_prefix('`')?.strip_suffix('`')).map(String::from).collect())
}

/// Every key the config types accept, as dotted paths; a map keyed by names is written `<name>`
/// (`clusters.<name>.kubeconfig`), a map of scalars by its own key (`model.cpu_performance`).
fn config_keys() -> BTreeSet<String> {
    /// A stand-in for a name in a map of sections (`[clusters.NAME]`), a valid bare TOML key.
    const NAME: &str = "NAME__";
    fn walk(path: &mut Vec<&'static str>, out: &mut BTreeSet<String>) {
        let Some(fields) = section_fields(path) else { return };
        for f in fields {
            let f: &'static str = Box::leak(f.into_boxed_str());
            path.push(f);
            if section_fields(path).is_some() {
                walk(path, out);
            } else {
                path.push(NAME);
                if section_fields(path).is_some() {
                    walk(path, out);
                } else {
                    path.pop();
                    out.insert(path.join(".").replace(NAME, "<name>"));
                }
                if path.last() == Some(&NAME) {
                    path.pop();
                }
            }
            path.pop();
        }
    }
    let mut out = BTreeSet::new();
    walk(&mut Vec::new(), &mut out);
    out
}

/// The keys a reference page documents: the first cell of each table row, in backticks.
fn documented(page: &str) -> BTreeSet<String> {
    page.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(key, _)| key.to_string())
        .collect()
}

#[test]
fn every_config_key_is_documented_and_every_documented_key_exists() {
    let keys = config_keys();
    // The probe finds what it should: a plain key, a struct section, a map of sections, an
    // optional section, a map of scalars.
    for k in
        ["policy_dir", "reconcile.interval", "clusters.<name>.kubeconfig", "ha.lease_duration", "model.cpu_performance"]
    {
        assert!(keys.contains(k), "the probe missed {k}: {keys:#?}");
    }
    let doc = documented(&page("config.md"));
    let missing: Vec<&String> = keys.iter().filter(|k| !doc.contains(*k)).collect();
    assert!(missing.is_empty(), "config keys without documentation in docs/guide/reference/config.md: {missing:#?}");
    let unknown: Vec<&String> = doc.iter().filter(|d| !keys.contains(*d)).collect();
    assert!(unknown.is_empty(), "docs/guide/reference/config.md documents keys the config does not have: {unknown:#?}");
}

#[test]
fn every_metric_is_documented_with_its_type_and_every_documented_metric_exists() {
    let exported = fedsched::metrics::Metrics::new().families();
    assert!(exported.iter().any(|(n, t)| n == "fedsched_polls_total" && t == "counter"), "{exported:?}");
    let page = page("metrics.md");
    let mut documented = BTreeSet::new();
    for line in page.lines().filter(|l| l.starts_with("| `fedsched_")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`');
        let name = name.split('{').next().unwrap_or(name).to_string();
        documented.insert((name, cells[2].to_string()));
    }
    let exported: BTreeSet<(String, String)> = exported.into_iter().collect();
    let missing: Vec<_> = exported.difference(&documented).collect();
    assert!(missing.is_empty(), "metrics without a row (name, type) in docs/guide/reference/metrics.md: {missing:#?}");
    let unknown: Vec<_> = documented.difference(&exported).collect();
    assert!(
        unknown.is_empty(),
        "docs/guide/reference/metrics.md lists metrics the registry does not export: {unknown:#?}"
    );
}

/// Every `reason` an event counter of the stability engine can carry (one per
/// `schedule::stability::EventKind` it counts) is named in its row.
#[test]
fn every_reason_an_event_counter_carries_is_documented_in_its_row() {
    use fedsched::metrics::EventCounter;
    let page = page("metrics.md");
    for counter in [EventCounter::Evictions, EventCounter::Reschedules] {
        let row = page
            .lines()
            .find(|l| l.starts_with(&format!("| `{}{{", counter.name())))
            .unwrap_or_else(|| panic!("no row for {}", counter.name()));
        let missing: Vec<&str> = counter.reasons().into_iter().filter(|r| !row.contains(&format!("`{r}`"))).collect();
        assert!(missing.is_empty(), "{}: reasons not in docs/guide/reference/metrics.md: {missing:?}", counter.name());
    }
}

/// Every pass trigger (`publish::Trigger`) is named where the operating guide says what a pass's
/// `trigger` can be.
#[test]
fn every_pass_trigger_is_named_in_the_operating_guide() {
    let guide = std::fs::read_to_string(repo_root().join("docs/guide/operating.md")).expect("read");
    let missing: Vec<&str> = fedsched::publish::Trigger::ALL
        .iter()
        .map(|t| t.as_str())
        .filter(|name| !guide.contains(&format!("`{name}`")))
        .collect();
    assert!(missing.is_empty(), "triggers not named in docs/guide/operating.md: {missing:?}");
}
