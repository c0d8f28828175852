//! The pages of the web view, each made from the JSON documents the API answers with (the
//! same builders in `views/`, called with the same arguments): what a page shows is what
//! `/api/v1/…` says. Pure functions of those documents, so they are tested without a daemon.

use std::collections::BTreeMap;

use serde_json::Value;

use super::html::{bar, cluster_link, esc, quantity, state, table, val, workload_link};
use crate::views::placements::MatrixQuery;

/// The banner of every page: last pass, storm guard, HA role (from `/api/v1/status`).
pub fn banner(status: &Value) -> String {
    let mut items = Vec::new();
    let pass = &status["lastPass"];
    if pass.is_object() {
        items.push(format!(
            "last pass {} at {} ({} ms, {}){}",
            state(pass["outcome"].as_str().unwrap_or("")),
            val(&pass["at"]),
            val(&pass["durationMs"]),
            val(&pass["trigger"]),
            pass["message"].as_str().map(|m| format!(": {}", esc(m))).unwrap_or_default()
        ));
    } else {
        items.push("no pass yet".into());
    }
    let storm = &status["failover"]["stormGuard"];
    items.push(match storm {
        Value::Null => "storm guard: <span class=\"state good\">not holding</span>".into(),
        other => format!("storm guard: <span class=\"state bad\">holds</span> ({})", val(other)),
    });
    let f = &status["failover"];
    if f.is_object() {
        items.push(format!(
            "pending failover {}, kept past grace {}, held {}",
            val(&f["pendingFailover"]),
            val(&f["keptPastGrace"]),
            val(&f["held"])
        ));
    }
    let h = &status["ha"];
    items.push(match h.is_object() {
        false => "HA: single instance".into(),
        true => format!("HA: {} ({} holds the lease)", state(h["role"].as_str().unwrap_or("")), val(&h["holder"])),
    });
    let mut out = String::from("<section class=\"banner\" aria-label=\"daemon status\"><ul>");
    for i in items {
        out.push_str(&format!("<li>{i}</li>"));
    }
    out.push_str("</ul>");
    if let Some(s) = status["lastSummary"].as_str() {
        out.push_str(&format!("<p>{}</p>", esc(s)));
    }
    out.push_str("</section>");
    out
}

/// The bars of one cluster of the resources document: every dimension (capacity, allocated,
/// free), normalised CPU and the GPUs by model, each with its figures written beside it.
fn resource_bars(c: &Value, dims: &[Value]) -> String {
    if c["resources"].as_object().is_none_or(|r| r.is_empty()) {
        return "<p class=\"dims-none\">No capacity reported (no resource summary in its data).</p>".into();
    }
    let mut out = String::from("<dl class=\"dims\">");
    for d in dims {
        let Some(d) = d.as_str() else { continue };
        let r = &c["resources"][d];
        if r.is_null() {
            continue;
        }
        let text = format!(
            "{} allocated of {}, {} free",
            r["allocated"].as_str().unwrap_or("0"),
            r["capacity"].as_str().unwrap_or("0"),
            r["free"].as_str().unwrap_or("0")
        );
        out.push_str(&format!(
            "<dt>{}</dt><dd>{}</dd>",
            esc(d),
            bar(quantity(&r["allocated"]), quantity(&r["capacity"]), &text)
        ));
        if let Some(n) = r["normalised"].as_object() {
            let f = |k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            let text = format!("{:.1} allocated of {:.1}, {:.1} free", f("allocated"), f("capacity"), f("free"));
            out.push_str(&format!(
                "<dt>{} (normalised)</dt><dd>{}</dd>",
                esc(d),
                bar(f("allocated"), f("capacity"), &text)
            ));
        }
    }
    for g in c["gpuModels"].as_array().into_iter().flatten() {
        let text = format!(
            "{} allocated of {}, {} free",
            g["allocated"].as_str().unwrap_or("0"),
            g["capacity"].as_str().unwrap_or("0"),
            g["free"].as_str().unwrap_or("0")
        );
        out.push_str(&format!(
            "<dt>{} {}</dt><dd>{}</dd>",
            val(&g["resource"]),
            val(&g["model"]),
            bar(quantity(&g["allocated"]), quantity(&g["capacity"]), &text)
        ));
    }
    out.push_str("</dl>");
    out
}

/// Clusters per page of the Fleet page: by default, and at most.
pub const FLEET_PER_PAGE: usize = 100;
pub const FLEET_MAX_PER_PAGE: usize = 200;

/// The Fleet page's window: `page` (from 1) and `perPage` (at most [`FLEET_MAX_PER_PAGE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetWindow {
    pub page: usize,
    pub per_page: usize,
}

impl Default for FleetWindow {
    fn default() -> Self {
        FleetWindow { page: 1, per_page: FLEET_PER_PAGE }
    }
}

impl FleetWindow {
    /// From a query's pairs: `page`, `perPage` (numbers from 1); anything else is refused.
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<FleetWindow, String> {
        let mut w = FleetWindow::default();
        for (k, v) in pairs {
            let n = match v.parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(format!(
                        "{k}: expected a number from 1, got {:?}",
                        v.chars().take(40).collect::<String>()
                    ));
                }
            };
            match k.as_str() {
                "page" => w.page = n,
                "perPage" => w.per_page = n.min(FLEET_MAX_PER_PAGE),
                other => return Err(format!("unknown parameter {:?}", other.chars().take(40).collect::<String>())),
            }
        }
        Ok(w)
    }
}

/// Fleet: the totals of each region (bars per dimension), then every cluster, grouped by
/// region, then zone, each with health, data age and confidence, replicas, labels, taints and
/// its bars (from `/api/v1/clusters` and `/api/v1/resources?by=region`); [`FleetWindow`]'s page
/// of clusters at a time (in region, zone, name order), so a fleet of 1,000 is a light page.
///
/// `zones`: every cluster's zones joined with `, ` (the pass's snapshots: the order needs every
/// cluster's, while `clusters` need only hold the page's, [`fleet_names`]).
pub fn fleet(
    clusters: &Value,
    resources: Option<&Value>,
    zones: &BTreeMap<String, String>,
    window: FleetWindow,
) -> String {
    let listed: BTreeMap<&str, &Value> =
        clusters["clusters"].as_array().into_iter().flatten().filter_map(|c| Some((c["name"].as_str()?, c))).collect();
    let Some(res) = resources else {
        return "<p>No good pass yet: no cluster data.</p>".into();
    };
    let dims = res["dimensions"].as_array().cloned().unwrap_or_default();
    // Every cluster of /api/v1/clusters has a card: one the resources document does not have
    // (not in the last good pass) is grouped by its own region, without bars.
    let in_doc: std::collections::BTreeSet<&str> = res["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["clusters"].as_array().into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .collect();
    let missing: Vec<(String, Value)> = listed
        .iter()
        .filter(|(name, _)| !in_doc.contains(*name))
        .map(|(name, l)| {
            let region = l["region"].as_str().unwrap_or("(none)").to_string();
            let card = serde_json::json!({"name": name, "health": l["state"], "reason": l["reason"],
                "confidence": l["confidence"], "source": "not in the last good pass", "resources": {}});
            (region, card)
        })
        .collect();
    let zone_of = |c: &Value| zone_of(c, &listed, zones);
    // (region, zone, name) → card, in that order.
    let mut all: BTreeMap<(&str, String, &str), &Value> = BTreeMap::new();
    for g in res["groups"].as_array().into_iter().flatten() {
        for c in g["clusters"].as_array().into_iter().flatten() {
            all.insert((g["group"].as_str().unwrap_or("(none)"), zone_of(c), c["name"].as_str().unwrap_or("")), c);
        }
    }
    for (region, card) in &missing {
        all.insert((region.as_str(), zone_of(card), card["name"].as_str().unwrap_or("")), card);
    }
    let total = all.len();
    let pages = total.div_ceil(window.per_page).max(1);
    let page = window.page.min(pages);
    let first = (page - 1) * window.per_page;
    let mut out = format!("<p>{total} clusters.</p>");
    out.push_str(&region_totals(res, &dims));
    out.push_str(&format!(
        "<h2 id=\"clusters-h\">Clusters {}–{} of {total}</h2>",
        (first + 1).min(total),
        (first + window.per_page).min(total)
    ));
    let href = |p: u64| format!("/ui/?page={p}&perPage={}", window.per_page);
    out.push_str(&pager("clusters", page as u64, pages as u64, href));
    let (mut region, mut zone) = (None, None);
    for ((r, z, _), c) in all.iter().skip(first).take(window.per_page) {
        if region != Some(*r) {
            if region.is_some() {
                out.push_str("</div></section>");
            }
            out.push_str(&format!("<section class=\"region\"><h3>Region {}</h3>", esc(r)));
            region = Some(*r);
            zone = None;
        }
        if zone.as_ref() != Some(z) {
            if zone.is_some() {
                out.push_str("</div>");
            }
            out.push_str(&format!("<h4 class=\"zone\">Zone {}</h4><div class=\"cards\">", esc(z)));
            zone = Some(z.clone());
        }
        out.push_str(&cluster_card(c, listed.get(c["name"].as_str().unwrap_or("")).copied(), &dims));
    }
    if region.is_some() {
        out.push_str("</div></section>");
    }
    out.push_str(&pager("clusters", page as u64, pages as u64, href));
    out
}

/// A cluster's zones as the Fleet page groups by them: from `zones`, else from its entry of
/// `/api/v1/clusters`.
fn zone_of(c: &Value, listed: &BTreeMap<&str, &Value>, zones: &BTreeMap<String, String>) -> String {
    zone_named(c["name"].as_str().unwrap_or(""), listed, zones)
}

/// [`zone_of`] the cluster of this name.
fn zone_named(name: &str, listed: &BTreeMap<&str, &Value>, zones: &BTreeMap<String, String>) -> String {
    zones
        .get(name)
        .cloned()
        .or_else(|| {
            let z = listed.get(name)?["zones"].as_array()?;
            Some(z.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
        })
        .filter(|z| !z.is_empty())
        .unwrap_or_else(|| "(no zone)".into())
}

/// The names of the clusters [`fleet`] shows on `window`'s page, in its order (region, zone,
/// name), from each member's region (its group in the resources document by region) and name,
/// and `zones`, alone: the caller reads only these clusters' stored snapshots, and needs no
/// figures for it.
pub fn fleet_names(
    members: impl Iterator<Item = (String, impl AsRef<str>)>,
    zones: &BTreeMap<String, String>,
    window: FleetWindow,
) -> Vec<String> {
    let none = BTreeMap::new();
    let mut all: Vec<(String, String, String)> = members
        .map(|(region, name)| (region, zone_named(name.as_ref(), &none, zones), name.as_ref().to_string()))
        .collect();
    all.sort();
    let pages = all.len().div_ceil(window.per_page).max(1);
    let first = (window.page.min(pages) - 1) * window.per_page;
    all.into_iter().skip(first).take(window.per_page).map(|(_, _, n)| n).collect()
}

/// The totals of each region of the resources document: one bar per dimension (and
/// normalised CPU), with its figures.
fn region_totals(res: &Value, dims: &[Value]) -> String {
    let rows: Vec<Vec<String>> = res["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            vec![
                val(&g["group"]),
                g["clusters"].as_array().map_or(0, Vec::len).to_string(),
                format!("min {}, mean {}", val(&g["confidence"]["min"]), val(&g["confidence"]["mean"])),
                resource_bars(g, dims),
            ]
        })
        .collect();
    format!(
        "<section><h2>Regions</h2>{}</section>",
        table(
            "capacity, allocated and free of each region",
            &["region", "clusters", "confidence", "allocated of capacity"],
            &rows
        )
    )
}

/// A label map as `key=value, …` (escaped).
fn labels(l: &Value) -> String {
    let text: Vec<String> =
        l.as_object().into_iter().flatten().map(|(k, v)| format!("{}={}", esc(k), val(v))).collect();
    if text.is_empty() { "none".into() } else { text.join(", ") }
}

fn cluster_card(c: &Value, listed: Option<&Value>, dims: &[Value]) -> String {
    let name = c["name"].as_str().unwrap_or("");
    let age = match listed.map(|l| &l["snapshot"]["ageSeconds"]).and_then(Value::as_f64) {
        Some(a) => format!("{a:.0} s"),
        None => "-".into(),
    };
    let taints = listed
        .and_then(|l| l["taints"].as_array())
        .map(|t| {
            t.iter()
                .map(|t| format!("{}={}:{}", val(&t["key"]), val(&t["value"]), val(&t["effect"])))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "none".into());
    let reason = c["reason"].as_str().map(|r| format!(" ({})", esc(r))).unwrap_or_default();
    let labels = listed.map(|l| labels(&l["labels"])).unwrap_or_default();
    format!(
        "<article class=\"card\"><h5>{}</h5><p>{}{reason} · data age {age} · confidence {} · {} · replicas {}</p><p>labels: {labels}</p><p>taints: {taints}</p>{}</article>",
        cluster_link(name),
        state(c["health"].as_str().unwrap_or("")),
        val(&c["confidence"]),
        val(&c["source"]),
        listed.map(|l| val(&l["replicas"])).unwrap_or_else(|| "-".into()),
        resource_bars(c, dims)
    )
}

/// The filter form of the Placements page (a GET form: the filter is in the address, so a
/// filtered view can be linked).
fn matrix_form(q: &MatrixQuery) -> String {
    let field = |name: &str, label: &str, v: &Option<String>, hint: &str| {
        format!(
            "<label>{label} <input name=\"{name}\" value=\"{}\" placeholder=\"{hint}\" size=\"16\" maxlength=\"253\"></label>",
            esc(v.as_deref().unwrap_or(""))
        )
    };
    let st = |s: &str| if q.state.as_deref() == Some(s) { " selected" } else { "" };
    format!(
        "<form method=\"get\" action=\"/ui/placements\" class=\"filters\" aria-label=\"filter\">{}{}{}<label>state <select name=\"state\"><option value=\"\">any</option><option{}>Scheduled</option><option{}>Unschedulable</option></select></label>\
         <input type=\"hidden\" name=\"perPage\" value=\"{}\"><input type=\"hidden\" name=\"clustersPerPage\" value=\"{}\"><button type=\"submit\">Filter</button></form>",
        field("namespace", "namespace", &q.namespace, "shop or _"),
        field("policy", "policy", &q.policy, "name or ns/name"),
        field("label", "cluster label", &q.label, "key or key=value"),
        st("Scheduled"),
        st("Unschedulable"),
        q.per_page,
        q.clusters_per_page
    )
}

/// Page links of one axis: previous and next, with where we are.
fn pager(what: &str, page: u64, pages: u64, href: impl Fn(u64) -> String) -> String {
    let mut out = format!("<p class=\"pager\">{what} page {page} of {pages}");
    if page > 1 {
        out.push_str(&format!(" · <a href=\"{}\" rel=\"prev\">previous</a>", esc(&href(page - 1))));
    }
    if page < pages {
        out.push_str(&format!(" · <a href=\"{}\" rel=\"next\">next</a>", esc(&href(page + 1))));
    }
    out.push_str("</p>");
    out
}

/// Placements: one page of rows and one window of columns of `/api/v1/placements`.
pub fn placements(m: &Value, q: &MatrixQuery) -> String {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let (w, c) = (&m["workloads"], &m["clusters"]);
    let (page, cpage) = (n(&w["page"]), n(&c["page"]));
    let mut out = matrix_form(q);
    out.push_str(&format!("<p>{} workloads × {} clusters match.</p>", n(&w["total"]), n(&c["total"])));
    out.push_str(&pager("workloads", page, n(&w["pages"]).max(1), |p| {
        format!("/ui/placements?{}", q.to_query(p as usize, cpage as usize))
    }));
    out.push_str(&pager("clusters", cpage, n(&c["pages"]).max(1), |p| {
        format!("/ui/placements?{}", q.to_query(page as usize, p as usize))
    }));
    let names: Vec<&str> = c["names"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    out.push_str("<div class=\"scroll\"><table class=\"matrix\"><caption>replicas per workload and cluster (✓: placed without replicas)</caption><thead><tr><th scope=\"col\">workload</th><th scope=\"col\">state</th>");
    for name in &names {
        out.push_str(&format!("<th scope=\"col\">{}</th>", cluster_link(name)));
    }
    out.push_str("</tr></thead><tbody>");
    for r in m["rows"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "<tr><th scope=\"row\">{}</th><td>{}</td>",
            workload_link(&r["workload"]),
            state(r["state"].as_str().unwrap_or(""))
        ));
        for cell in r["cells"].as_array().into_iter().flatten() {
            let text = match &cell["replicas"] {
                _ if cell.is_null() => String::new(),
                Value::Null => "✓".into(),
                v => val(v),
            };
            out.push_str(&format!("<td class=\"num\">{text}</td>"));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// Workload: policy and claim, per cluster the verdict (estimate bars), the observed status,
/// the failover state, the history as a timeline, and the rendered file per cluster.
pub fn workload(explain: &Value, history: &Value, files: &[(String, String, Option<String>)]) -> String {
    let policy = &explain["policy"];
    let mut out = format!(
        "<section><h2>Policy</h2><p>{} {} · claimed because {} · state {}{} · decided {} · profile {}</p></section>",
        val(&policy["kind"]),
        esc(&match policy["namespace"].as_str() {
            Some(ns) => format!("{ns}/{}", policy["name"].as_str().unwrap_or("")),
            None => policy["name"].as_str().unwrap_or("").to_string(),
        }),
        val(&explain["claim"]["reason"]),
        state(explain["state"].as_str().unwrap_or("")),
        explain["reason"].as_str().map(|r| format!(" ({})", esc(r))).unwrap_or_default(),
        val(&explain["decidedAt"]),
        val(&explain["profile"]),
    );
    out.push_str(&verdicts(explain));
    out.push_str(&observed(&explain["status"]));
    let lines = crate::views::explain::failover_lines(explain);
    out.push_str("<section><h2>Failover and eviction</h2>");
    if lines.is_empty() {
        out.push_str("<p>Nothing in progress.</p>");
    } else {
        out.push_str("<ul>");
        for l in lines {
            out.push_str(&format!("<li>{}</li>", esc(&l)));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
    out.push_str(&rollout(&explain["rollout"], &explain["status"]));
    out.push_str(&timeline(history));
    out.push_str("<section><h2>Rendered files</h2>");
    if files.is_empty() {
        out.push_str("<p>No file is published for it.</p>");
    }
    for (cluster, path, text) in files {
        out.push_str(&format!(
            "<details><summary>{} — {}</summary><pre>{}</pre></details>",
            esc(cluster),
            esc(path),
            esc(text.as_deref().unwrap_or("(cannot be read from the output directory)"))
        ));
    }
    out.push_str("</section>");
    out
}

/// The progressive rollout (issue 52) of the explain document's `rollout` — the document of
/// `/api/v1/workloads/{ns}/{name}/rollout` ([`crate::views::rollout::document`]): its state and
/// stage, the previous and new versions, the gate in the words of `status`
/// ([`crate::views::rollout::gate_text`]), each stage's clusters with the version they run and
/// their observed state (from the explain document's `status`), the failures and the
/// transitions with their causes.
fn rollout(doc: &Value, status: &Value) -> String {
    let mut out =
        String::from("<section id=\"rollout\" aria-labelledby=\"rollout-h\"><h2 id=\"rollout-h\">Rollout</h2>");
    if doc.is_null() {
        out.push_str("<p>No RolloutPolicy selects it.</p></section>");
        return out;
    }
    let observed: BTreeMap<&str, &str> = status["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["name"].as_str()?, c["state"].as_str()?)))
        .collect();
    let phase = doc["state"].as_str().unwrap_or("");
    let phase_class = match phase {
        "Complete" => "good",
        "Halted" | "RolledBack" => "bad",
        _ => "neutral",
    };
    out.push_str(&format!(
        "<p class=\"rollout-state\">RolloutPolicy {} · <span class=\"state {phase_class}\">{}</span>{} · previous version <code>{}</code>, new version <code>{}</code></p>",
        val(&doc["policy"]),
        esc(phase),
        doc["stage"].as_str().map(|s| format!(" at stage <strong>{}</strong>", esc(s))).unwrap_or_default(),
        val(&doc["versions"]["previous"]),
        val(&doc["versions"]["new"]),
    ));
    out.push_str(&format!(
        "<p class=\"gate\">gate: {} · failures {} of at most {}</p>",
        esc(&crate::views::rollout::gate_text(doc).unwrap_or_else(|| "none (no stage is waiting)".into())),
        val(&doc["failures"]["count"]),
        val(&doc["failures"]["max"]),
    ));
    let current = doc["stageIndex"].as_u64();
    let stages: Vec<Vec<String>> = doc["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, st)| {
            let clusters: Vec<String> = st["clusters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|c| match observed.get(c) {
                    Some(o) => format!("{} ({})", cluster_link(c), state(o)),
                    None => cluster_link(c),
                })
                .collect();
            let name = if current == Some(i as u64) {
                format!("<strong>{}</strong> (current)", val(&st["name"]))
            } else {
                val(&st["name"])
            };
            vec![(i + 1).to_string(), name, val(&st["version"]), clusters.join(", ")]
        })
        .collect();
    out.push_str(&table(
        "stages in order, each cluster with its observed state",
        &["#", "stage", "runs", "clusters"],
        &stages,
    ));
    let failed: Vec<Vec<String>> = doc["failures"]["clusters"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(c, why)| vec![cluster_link(c), val(why)])
        .collect();
    out.push_str(&table("failed clusters", &["cluster", "why"], &failed));
    let transitions: Vec<Vec<String>> = doc["history"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| vec![val(&t["at"]), val(&t["stage"]), val(&t["event"]), val(&t["cause"])])
        .collect();
    out.push_str(&table("stage transitions", &["at", "stage", "event", "cause"], &transitions));
    out.push_str("</section>");
    out
}

/// The replicas each requested dimension lets fit, as bars, from the resource-summary
/// estimator's lines in a verdict's reasons (the scheduler writes them when a cluster cannot
/// take every replica: `model: resource summary: cpu: 14 free, 1 per replica: 14 replicas
/// (limiting)`); the limiting dimension is the shortest bar, and says so.
fn dimension_bars(reasons: &Value) -> String {
    let prefix = format!("{}resource summary: ", crate::schedule::MODEL_PREFIX);
    let rows: Vec<(String, i64, bool)> = reasons
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|r| r.strip_prefix(prefix.as_str()))
        .filter_map(|r| {
            let (what, fit) = r.rsplit_once(": ")?;
            let limiting = fit.ends_with(" (limiting)");
            let n: i64 = fit.split(' ').next()?.parse().ok()?;
            Some((what.to_string(), n, limiting))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let most = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1) as f64;
    let mut out = String::from("<dl class=\"dims\">");
    for (what, n, limiting) in rows {
        let dim = what.split(':').next().unwrap_or("");
        let mark = if limiting { " (limiting)" } else { "" };
        out.push_str(&format!(
            "<dt{}>{}{mark}</dt><dd>{}</dd>",
            if limiting { " class=\"bad\"" } else { "" },
            esc(dim),
            bar(n as f64, most, &format!("{what}: {n} replicas"))
        ));
    }
    out.push_str("</dl>");
    out
}

fn verdicts(explain: &Value) -> String {
    let clusters: Vec<&Value> = explain["clusters"].as_array().into_iter().flatten().collect();
    let rows: Vec<Vec<String>> = clusters
        .iter()
        .map(|c| {
            let verdict = if c["selected"] == true {
                "selected"
            } else if c["feasible"] == true {
                "feasible, not selected"
            } else {
                "filtered out"
            };
            let fit = match c["availableReplicas"].as_f64() {
                Some(a) => bar(
                    c["replicas"].as_f64().unwrap_or(0.0),
                    c["replicas"].as_f64().unwrap_or(0.0) + a,
                    &format!("{} placed, {} more fit", val(&c["replicas"]), a),
                ),
                None => "-".into(),
            };
            let fit = format!("{fit}{}", dimension_bars(&c["reasons"]));
            let reasons: Vec<String> = c["reasons"].as_array().into_iter().flatten().map(val).collect();
            vec![
                cluster_link(c["name"].as_str().unwrap_or("")),
                esc(verdict),
                val(&c["replicas"]),
                fit,
                val(&c["data"]["confidence"]),
                reasons.join("<br>"),
            ]
        })
        .collect();
    format!(
        "<section><h2>Why each cluster</h2>{}</section>",
        table(
            "the last decision per cluster (bars: replicas placed against placed + the replicas the estimators let fit more)",
            &["cluster", "verdict", "replicas", "placed / fit", "confidence", "reasons"],
            &rows
        )
    )
}

/// A cluster's pending pods of the status document: the count, then the count per reason and
/// the oldest one's age.
fn pending(p: &Value) -> String {
    if !p.is_object() {
        return val(p);
    }
    let mut out = val(&p["count"]);
    let reasons: Vec<String> =
        p["reasons"].as_object().into_iter().flatten().map(|(r, n)| format!("{}: {}", esc(r), val(n))).collect();
    if !reasons.is_empty() {
        out.push_str(&format!(" ({})", reasons.join(", ")));
    }
    if let Some(age) = p["oldestAgeSeconds"].as_f64() {
        out.push_str(&format!(", oldest {age:.0} s"));
    }
    out
}

fn observed(status: &Value) -> String {
    let rows: Vec<Vec<String>> = status["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            vec![
                cluster_link(c["name"].as_str().unwrap_or("")),
                state(c["state"].as_str().unwrap_or("")),
                val(&c["desired"]),
                val(&c["ready"]),
                pending(&c["pending"]),
                val(&c["reason"]),
            ]
        })
        .collect();
    format!(
        "<section><h2>Observed</h2><p>{}{}</p>{}</section>",
        state(status["state"].as_str().unwrap_or("")),
        status["reason"].as_str().map(|r| format!(": {}", esc(r))).unwrap_or_default(),
        table("what the members run", &["cluster", "state", "desired", "ready", "pending", "reason"], &rows)
    )
}

fn timeline(history: &Value) -> String {
    let mut out = String::from("<section><h2>History</h2><ol class=\"timeline\" reversed>");
    let records: Vec<&Value> = history.as_array().into_iter().flatten().collect();
    for r in records.iter().rev() {
        let o = &r["outcome"];
        let outcome = match o["scheduled"].as_object() {
            Some(t) => {
                let t = t.iter().map(|(c, n)| format!("{}: {}", esc(c), val(n))).collect::<Vec<_>>().join(", ");
                format!("scheduled to {t}")
            }
            None if o.is_object() => format!("unschedulable: {}", val(&o["unschedulable"])),
            None => String::new(),
        };
        out.push_str(&format!(
            "<li><time>{}</time> <strong>{}</strong> #{} — {outcome}",
            val(&r["at"]),
            val(&r["trigger"]),
            val(&r["seq"])
        ));
        let notes: Vec<&Value> = r["notes"].as_array().into_iter().flatten().collect();
        if !notes.is_empty() {
            out.push_str("<ul>");
            for n in notes {
                out.push_str(&format!("<li>{}</li>", val(n)));
            }
            out.push_str("</ul>");
        }
        out.push_str("</li>");
    }
    if records.is_empty() {
        out.push_str("<li>No decision recorded.</li>");
    }
    out.push_str("</ol></section>");
    out
}

/// One point of a cluster's chart: version, when first seen, capacity and free of a dimension.
pub struct Point {
    pub version: u64,
    pub at: String,
    pub capacity: f64,
    pub free: f64,
}

/// The chart's line colours (SVG attributes: the CSP forbids inline style), each at least 3:1
/// against the page and the cards (WCAG 2's non-text contrast; checked by
/// `api::ui::tests::the_palette_has_enough_contrast`). The free line is also dashed, so the
/// two are told apart without colour.
pub const CHART_CAPACITY: &str = "#1f4e99";
pub const CHART_FREE: &str = "#1b6e3a";

/// A small line chart (inline SVG: attributes, no style) of capacity and free over versions,
/// with a table as its text equivalent.
fn chart(dim: &str, points: &[Point]) -> String {
    if points.is_empty() {
        return String::new();
    }
    let (w, h) = (480.0, 120.0);
    let top = points.iter().map(|p| p.capacity.max(p.free)).fold(0.0_f64, f64::max).max(1.0);
    let x = |i: usize| if points.len() == 1 { w / 2.0 } else { i as f64 * w / (points.len() - 1) as f64 };
    let y = |v: f64| h - v / top * h;
    let line = |f: &dyn Fn(&Point) -> f64| {
        points.iter().enumerate().map(|(i, p)| format!("{:.1},{:.1}", x(i), y(f(p)))).collect::<Vec<_>>().join(" ")
    };
    let label = format!("{dim} capacity and free over {} snapshot versions (table below)", points.len());
    let mut out = format!(
        "<figure><svg viewBox=\"-4 -4 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\"><title>{}</title>\
         <polyline fill=\"none\" stroke=\"{CHART_CAPACITY}\" stroke-width=\"2\" points=\"{}\"/><polyline fill=\"none\" stroke=\"{CHART_FREE}\" stroke-width=\"2\" stroke-dasharray=\"6 3\" points=\"{}\"/></svg>",
        w + 8.0,
        h + 8.0,
        w + 8.0,
        h + 8.0,
        esc(&label),
        esc(&label),
        line(&|p| p.capacity),
        line(&|p| p.free),
    );
    // A mark at every version (a single version draws no line).
    let marks: String = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{CHART_CAPACITY}\"/><circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{CHART_FREE}\"/>",
                x(i),
                y(p.capacity),
                x(i),
                y(p.free)
            )
        })
        .collect();
    out = out.replacen("</svg>", &format!("{marks}</svg>"), 1);
    out.push_str(&format!("<figcaption>{}: capacity (solid) and free (dashed)</figcaption></figure>", esc(dim)));
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| vec![p.version.to_string(), esc(&p.at), format!("{}", p.capacity), format!("{}", p.free)])
        .collect();
    out.push_str(&table(&format!("{dim} per snapshot version"), &["version", "first seen", "capacity", "free"], &rows));
    out
}

/// Cluster: health and conditions, taints, its snapshots over time (chart and table), what
/// runs on it and what was refused there (`/api/v1/clusters`, `…/snapshots`, `…/workloads`).
pub fn cluster(listed: Option<&Value>, snapshots: &Value, points: &[Point], workloads: &Value) -> String {
    let mut out = String::new();
    match listed {
        None => out.push_str("<p>Not in the last good pass's fleet.</p>"),
        Some(c) => {
            let taints: Vec<Vec<String>> = c["taints"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| vec![val(&t["key"]), val(&t["value"]), val(&t["effect"])])
                .collect();
            out.push_str(&format!(
                "<section><h2>Conditions</h2><p>{}{} · region {} · zones {} · provider {} · confidence {} · data age {} s · replicas {}</p><p>labels: {}</p>{}</section>",
                state(c["state"].as_str().unwrap_or("")),
                c["reason"].as_str().map(|r| format!(" ({})", esc(r))).unwrap_or_default(),
                val(&c["region"]),
                esc(&c["zones"].as_array().map(|z| z.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()),
                val(&c["provider"]),
                val(&c["confidence"]),
                c["snapshot"]["ageSeconds"].as_f64().map(|a| format!("{a:.0}")).unwrap_or_else(|| "-".into()),
                val(&c["replicas"]),
                labels(&c["labels"]),
                table("taints", &["key", "value", "effect"], &taints)
            ));
        }
    }
    out.push_str("<section><h2>Snapshots</h2>");
    out.push_str(&chart("cpu", points));
    let versions: Vec<Vec<String>> = snapshots["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| vec![val(&v["version"]), val(&v["firstSeen"]), val(&v["lastSeen"]), val(&v["confidence"])])
        .collect();
    out.push_str(&table("stored versions", &["version", "first seen", "last seen", "confidence"], &versions));
    out.push_str("</section>");
    out.push_str(&cluster_workloads(workloads));
    out
}

fn cluster_workloads(w: &Value) -> String {
    let runs: Vec<Vec<String>> = w["runs"]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let replicas = if r["replicas"].is_null() { "✓".into() } else { val(&r["replicas"]) };
            vec![workload_link(&r["workload"]), replicas, val(&r["file"])]
        })
        .collect();
    let refused: Vec<Vec<String>> = w["refused"]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let reasons: Vec<String> = r["reasons"].as_array().into_iter().flatten().map(val).collect();
            vec![workload_link(&r["workload"]), reasons.join("<br>")]
        })
        .collect();
    format!(
        "<section><h2>Runs here</h2><p>{} workloads, {} replicas.</p>{}</section><section><h2>Refused here</h2><p>{} workloads.</p>{}</section>",
        val(&w["runs"]["total"]),
        val(&w["runs"]["replicas"]),
        table("workloads placed on this cluster", &["workload", "replicas", "file"], &runs),
        val(&w["refused"]["total"]),
        table("workloads whose last decision filtered this cluster out", &["workload", "reasons"], &refused)
    )
}

/// The most workloads the Plan page lists (the rest are counted: `fedsched plan` has them all).
pub const PLAN_ROWS: usize = 200;
/// The most clusters whose files the Plan page lists, and files per cluster.
pub const PLAN_CLUSTERS: usize = 60;
pub const PLAN_FILES_PER_CLUSTER: usize = 50;
/// The most diff text the Plan page shows (cut at a file's diff).
pub const PLAN_DIFF_BYTES: usize = 256 << 10;

/// A line that says how many of `what` a page left out, or nothing.
fn left_out(n: usize, what: &str) -> String {
    if n == 0 {
        return String::new();
    }
    format!(
        "<p class=\"more\">… and {n} more {what}, not shown here: <code>fedsched plan -o markdown</code> (or the JSON of <code>POST /api/v1/plan</code>) has them all.</p>"
    )
}

/// Plan: the last plan posted to the daemon, as the Markdown output's tables and diffs; at
/// most [`PLAN_ROWS`] workloads, [`PLAN_CLUSTERS`] clusters' file lists and
/// [`PLAN_DIFF_BYTES`] of diff (what is left out is counted), so a plan of the whole fleet is
/// still a light page.
pub fn plan(doc: Option<&Value>) -> String {
    use crate::views::plan::{COUNTS, file_lines, summary_line, workload_lines};
    let Some(doc) = doc else {
        return "<p>No plan was posted to this daemon since it started. <code>fedsched plan</code> against a running daemon (or <code>POST /api/v1/plan</code>) shows here.</p>".into();
    };
    let mut out = format!("<p>{}</p>", esc(&summary_line(doc)));
    if doc["changes"] != true {
        return out;
    }
    let counts: Vec<Vec<String>> =
        COUNTS.iter().map(|(label, key)| vec![esc(label), val(&doc["summary"][*key])]).collect();
    out.push_str(&table("counts", &["", "count"], &counts));
    let all: Vec<&Value> = doc["workloads"].as_array().into_iter().flatten().collect();
    let workloads: Vec<Vec<String>> = all
        .iter()
        .take(PLAN_ROWS)
        .map(|w| {
            let lines: Vec<String> = workload_lines(w).iter().map(|l| esc(l)).collect();
            vec![val(&w["workload"]), val(&w["change"]), lines.join("<br>")]
        })
        .collect();
    out.push_str(&table("workloads", &["workload", "change", "details"], &workloads));
    out.push_str(&left_out(all.len().saturating_sub(PLAN_ROWS), "workloads"));
    if let Some(m) = doc["emptied"].as_str() {
        out.push_str(&format!("<p class=\"bad\"><strong>held</strong>: {}</p>", esc(m)));
    }
    for h in doc["held"].as_array().into_iter().flatten() {
        out.push_str(&format!("<p class=\"bad\"><strong>held</strong>: {}</p>", val(&h["message"])));
    }
    let clusters: Vec<&Value> = doc["clusters"].as_array().into_iter().flatten().collect();
    for c in clusters.iter().take(PLAN_CLUSTERS) {
        out.push_str(&format!("<details><summary>files in {}</summary><ul>", val(&c["cluster"])));
        let lines = file_lines(c);
        for l in lines.iter().take(PLAN_FILES_PER_CLUSTER) {
            out.push_str(&format!("<li><code>{}</code></li>", esc(l)));
        }
        out.push_str("</ul>");
        out.push_str(&left_out(lines.len().saturating_sub(PLAN_FILES_PER_CLUSTER), "files"));
        out.push_str("</details>");
    }
    out.push_str(&left_out(clusters.len().saturating_sub(PLAN_CLUSTERS), "clusters' files"));
    let diffs: Vec<&Value> = doc["diffs"].as_array().into_iter().flatten().collect();
    if !diffs.is_empty() {
        out.push_str("<details open><summary>Diff</summary><pre class=\"diff\">");
        let (mut bytes, mut kept) = (0, 0);
        for d in &diffs {
            let text = d["diff"].as_str().unwrap_or("");
            if kept > 0 && bytes + text.len() > PLAN_DIFF_BYTES {
                break;
            }
            out.push_str(&esc(text));
            bytes += text.len();
            kept += 1;
        }
        out.push_str("</pre></details>");
        out.push_str(&left_out(diffs.len() - kept, "files' diffs"));
    }
    out
}
