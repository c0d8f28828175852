//! HTML building blocks of the web view: escaping (every text from outside — names, labels,
//! reasons, files — goes through [`esc`]), the page frame, bars and tables. No script: the
//! pages are plain HTML with one stylesheet, so the Content-Security-Policy can forbid scripts
//! and inline styles altogether.

use serde_json::Value;

/// Escapes text for an HTML text node or a double-quoted attribute value.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A JSON value as text (strings without quotes, null as `-`), escaped.
pub fn val(v: &Value) -> String {
    match v {
        Value::String(s) => esc(s),
        Value::Null => "-".into(),
        other => esc(&other.to_string()),
    }
}

/// One path segment of a link, percent-encoded (then safe in an attribute).
pub fn seg(s: &str) -> String {
    crate::util::percent::encode(s)
}

/// The link to a workload's page.
pub fn workload_href(ns: &str, kind: &str, name: &str) -> String {
    format!("/ui/workloads/{}/{}/{}", seg(if ns.is_empty() { "_" } else { ns }), seg(kind), seg(name))
}

/// The link to a cluster's page.
pub fn cluster_href(name: &str) -> String {
    format!("/ui/clusters/{}", seg(name))
}

/// `<a href=…>text</a>` to a cluster's page.
pub fn cluster_link(name: &str) -> String {
    format!("<a href=\"{}\">{}</a>", cluster_href(name), esc(name))
}

/// A workload's `{namespace, kind, name}` object as a link to its page.
pub fn workload_link(w: &Value) -> String {
    let s = |k: &str| w[k].as_str().unwrap_or("").to_string();
    let ns = s("namespace");
    let label = if ns.is_empty() || ns == "_" {
        format!("{}/{}", s("kind"), s("name"))
    } else {
        format!("{}/{}/{}", s("kind"), ns, s("name"))
    };
    format!("<a href=\"{}\">{}</a>", workload_href(&ns, &s("kind"), &s("name")), esc(&label))
}

/// A bar of `value` out of `max` with its figures as text beside it (the text equivalent).
/// A `<meter>` drawn by the browser (no inline style), hidden from screen readers, which read
/// the figures.
pub fn bar(value: f64, max: f64, text: &str) -> String {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let value = if value.is_finite() { value.clamp(0.0, max) } else { 0.0 };
    format!(
        "<span class=\"bar\"><meter min=\"0\" max=\"{max}\" value=\"{value}\" high=\"{}\" optimum=\"0\" aria-hidden=\"true\"></meter> <span class=\"fig\">{}</span></span>",
        max * 0.85,
        esc(text)
    )
}

/// A CSS class for a state word (`Ready`, `Scheduled`: good; `NotReady`, `Unschedulable`…:
/// bad; anything else: neutral). The word itself is always shown as text too.
pub fn state_class(state: &str) -> &'static str {
    match state {
        "Ready" | "Scheduled" | "Healthy" | "ok" | "leader" => "good",
        "NotReady" | "Unreachable" | "Unschedulable" | "Degraded" | "Failed" | "invalid" | "failed" => "bad",
        _ => "neutral",
    }
}

/// A state word in its colour (and as text).
pub fn state(state: &str) -> String {
    format!("<span class=\"state {}\">{}</span>", state_class(state), esc(state))
}

/// The navigation links; `active` is marked with `aria-current`.
fn nav(active: &str, logout: bool) -> String {
    let mut out = String::from("<nav aria-label=\"pages\"><ul>");
    for (href, label) in [("/ui/", "Fleet"), ("/ui/placements", "Placements"), ("/ui/plan", "Plan")] {
        let current = if label == active { " aria-current=\"page\"" } else { "" };
        out.push_str(&format!("<li><a href=\"{href}\"{current}>{label}</a></li>"));
    }
    out.push_str("</ul>");
    if logout {
        out.push_str(
            "<form method=\"post\" action=\"/ui/logout\" class=\"logout\"><button type=\"submit\">Log out</button></form>",
        );
    }
    out.push_str("</nav>");
    out
}

/// A whole page: head (the stylesheet and the icon, both served by the daemon), a "skip to
/// the content" link (the first thing the Tab key reaches: past the navigation and the
/// banner to `<main id="main" tabindex="-1">`), navigation, the banner, the body.
pub fn page(title: &str, active: &str, logout: bool, banner: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · fedsched</title><link rel=\"stylesheet\" href=\"/ui/style.css\"><link rel=\"icon\" href=\"/ui/icon.svg\" type=\"image/svg+xml\"></head>\
         <body><a class=\"skip\" href=\"#main\">Skip to the content</a><header><a class=\"brand\" href=\"/ui/\">fedsched</a>{}</header>{}<main id=\"main\" tabindex=\"-1\"><h1>{}</h1>{}</main></body></html>\n",
        esc(title),
        nav(active, logout),
        banner,
        esc(title),
        body
    )
}

/// A table from a header row and rows of cells (cells are HTML already); no rows: a line
/// that says so.
pub fn table(caption: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return format!("<p class=\"empty\">{}: none.</p>", esc(caption));
    }
    let mut out = format!("<table><caption>{}</caption><thead><tr>", esc(caption));
    for h in head {
        out.push_str(&format!("<th scope=\"col\">{}</th>", esc(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            out.push_str(&format!("<td>{c}</td>"));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// A number from a quantity string of the JSON documents (`"84Gi"`, `"2500m"`), for bars.
pub fn quantity(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        Value::String(s) => crate::model::quantity::parse_milli(s).map(|m| m as f64 / 1000.0).unwrap_or(0.0),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_from_outside() {
        let hostile = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>&amp;";
        let e = esc(hostile);
        assert!(!e.contains('<') && !e.contains('>') && !e.contains('"') && !e.contains('\''), "{e}");
        assert!(e.contains("&amp;amp;"), "{e}");
        let link = workload_link(&serde_json::json!({"namespace": "a\"b", "kind": "Deployment", "name": "<x>"}));
        assert!(link.contains("href=\"/ui/workloads/a%22b/Deployment/%3Cx%3E\""), "{link}");
        assert!(link.contains(">Deployment/a&quot;b/&lt;x&gt;</a>"), "{link}");
    }

    #[test]
    fn a_bar_is_bounded_and_says_its_figures() {
        let b = bar(150.0, 100.0, "150 / 100");
        assert!(b.contains("value=\"100\"") && b.contains("max=\"100\""), "{b}");
        assert!(b.contains("<span class=\"fig\">150 / 100</span>"), "{b}");
        assert!(bar(f64::NAN, 0.0, "x").contains("value=\"0\" "), "NaN and a zero capacity draw an empty bar");
    }
}
