//! A document's typed decode with every structural error, not the first: serde stops at the
//! first unknown field or bad value (and a mapping's keys come in name order, so a
//! PropagationPolicy with `resourceSelecters`, `Divded` and `Wieghted` reported only
//! `Wieghted`). [`typed`] decodes; on an error it records it (field path and message), takes the
//! offending key out of a copy of the document and decodes again, until the rest decodes or
//! nothing more can be taken out. Bounded: at most [`MAX_ERRORS`] errors per document, each
//! retry one decode of the document.
//!
//! What a removal causes is not reported: a required field taken out because its value was
//! wrong comes back as `missing field`, and then its parent mapping is taken out silently. A
//! value that is an item of a sequence is not taken out (the positions of the later items, and
//! so their paths, would move): the errors found so far are the answer.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

/// One step of a field path, comparable (serde_path_to_error's segments are not).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
    /// An enum variant or an unknown step: nothing this decode can walk through.
    Other,
}

fn step(s: &Segment) -> Step {
    match s {
        Segment::Map { key } => Step::Key(key.clone()),
        Segment::Seq { index } => Step::Index(*index),
        _ => Step::Other,
    }
}

/// At most this many errors are reported for one document (a document of garbage would
/// otherwise cost one decode per key).
pub const MAX_ERRORS: usize = 20;

/// An error of a typed decode: the field path (relative to the decoded value; "" for the value
/// itself) and the message.
pub type FieldError = (String, String);

/// The typed value of `value`, or every structural error found in it (see the module).
pub fn typed<T: DeserializeOwned>(value: &Value) -> Result<T, Vec<FieldError>> {
    let mut errors: Vec<FieldError> = Vec::new();
    let mut work: Option<Value> = None;
    // The paths this decode took out, to tell a `missing field` it caused from a real one.
    let mut removed: Vec<Vec<Step>> = Vec::new();
    loop {
        let e = match serde_path_to_error::deserialize::<_, T>(work.as_ref().unwrap_or(value)) {
            Ok(t) if errors.is_empty() => return Ok(t),
            Ok(_) => return Err(sorted(errors)),
            Err(e) => e,
        };
        let path: Vec<Step> = e.path().iter().map(step).collect();
        let message = e.inner().to_string();
        let caused = missing_field(&message).is_some_and(|f| {
            removed.iter().any(|r| r.len() == path.len() + 1 && r.starts_with(&path) && is_key(r.last(), f))
        });
        if !caused {
            errors.push((path_text(e.path()), readable(&message)));
            if errors.len() >= MAX_ERRORS {
                return Err(sorted(errors));
            }
        }
        let copy = work.get_or_insert_with(|| value.clone());
        if !remove_at(copy, &path) {
            return Err(sorted(errors));
        }
        removed.push(path);
    }
}

/// Errors in field-path order: the same list whatever order the mapping's keys came in.
fn sorted(mut errors: Vec<FieldError>) -> Vec<FieldError> {
    errors.sort();
    errors
}

/// The field `missing field `x`` names.
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

fn is_key(step: Option<&Step>, name: &str) -> bool {
    matches!(step, Some(Step::Key(key)) if key == name)
}

/// The path as fedsched prints field paths (`spec.placement.clusterAffinity`, `items[2]`).
fn path_text(path: &serde_path_to_error::Path) -> String {
    let p = path.to_string();
    if p == "." { String::new() } else { p }
}

/// Takes the key at `path` out of its mapping. False when the path is the whole value, goes
/// through something that is not a mapping or a sequence, or ends at an item of a sequence.
fn remove_at(value: &mut Value, path: &[Step]) -> bool {
    let Some((last, parents)) = path.split_last() else { return false };
    let mut cur = value;
    for s in parents {
        let next = match (s, cur) {
            (Step::Key(key), Value::Object(m)) => m.get_mut(key),
            (Step::Index(index), Value::Array(a)) => a.get_mut(*index),
            _ => None,
        };
        match next {
            Some(v) => cur = v,
            None => return false,
        }
    }
    match (last, cur) {
        (Step::Key(key), Value::Object(m)) => m.remove(key).is_some(),
        _ => false,
    }
}

/// serde's message for a person: an unknown field names the nearest expected one (`did you
/// mean`) instead of the whole list when one is close.
fn readable(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else { return message.to_string() };
    let Some((field, expected)) = rest.split_once('`') else { return message.to_string() };
    match nearest(field, expected.split('`').skip(1).step_by(2)) {
        Some(c) => format!("unknown field `{field}` (did you mean `{c}`?)"),
        None => message.to_string(),
    }
}

/// Words longer than this have no "did you mean" (field and object names are far shorter).
const MAX_NAME_FOR_NEAREST: usize = 256;

/// The candidate nearest to `word` (case-insensitive edit distance), when it is close: at most
/// a third of its length away (one edit for short names). A typo's "did you mean".
pub(crate) fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // The distance is quadratic in memory and time: a word longer than any name it could be a
    // typo of (a fuzzed key of a megabyte) has no nearest.
    if word.len() > MAX_NAME_FOR_NEAREST {
        return None;
    }
    let w = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .filter(|c| *c != word)
        // Ties go to the candidate of the same length (`zonez`: `zones`, not `zone`).
        .map(|c| (distance(&w, &c.to_ascii_lowercase()), c.len().abs_diff(word.len()), c))
        .min()
        .filter(|(d, _, c)| *d <= (c.len() / 3).max(1))
        .map(|(_, _, c)| c)
}

/// Edit distance of two short strings (field and object names), by characters: insertions,
/// deletions, substitutions and transpositions of neighbours (`nmae` is one edit from `name`).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::types::PropagationSpec;
    use serde_json::json;

    #[test]
    fn every_structural_error_of_a_policy_is_reported() {
        let spec = json!({
            "resourceSelecters": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {"replicaScheduling": {
                "replicaSchedulingType": "Divded",
                "replicaDivisionPreference": "Wieghted"}},
        });
        let errors = typed::<PropagationSpec>(&spec).err().unwrap_or_default();
        let fields: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "",
                "placement.replicaScheduling.replicaDivisionPreference",
                "placement.replicaScheduling.replicaSchedulingType",
                "resourceSelecters",
            ],
            "{errors:#?}"
        );
        // With the misspelt key gone, the required one is missing: a real error, reported.
        assert_eq!(errors[0].1, "missing field `resourceSelectors`");
        assert!(errors[1].1.contains("unknown variant `Wieghted`"), "{errors:?}");
        assert!(errors[2].1.contains("unknown variant `Divded`"), "{errors:?}");
        assert_eq!(errors[3].1, "unknown field `resourceSelecters` (did you mean `resourceSelectors`?)");
    }

    #[test]
    fn a_removal_does_not_report_what_it_caused() {
        // A required field with a wrong value: its `missing field` after the removal is not
        // reported again; the sibling's error still is.
        let spec = json!({
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
            "placement": {"replicaScheduling": {"weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": ["a"]}, "weight": "heavy"}]}},
                "clusterTolerations": [{"key": "k", "operator": "Sometimes"}]},
        });
        let errors = typed::<PropagationSpec>(&spec).err().unwrap_or_default();
        assert!(errors.iter().all(|(_, m)| !m.starts_with("missing field")), "{errors:#?}");
        assert!(errors.iter().any(|(f, _)| f.ends_with("staticWeightList[0].weight")), "{errors:#?}");
        // An item of a sequence is not taken out: the errors so far are the answer.
        assert!(!errors.is_empty());
        // A valid document decodes as before.
        let ok = json!({"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]});
        assert!(typed::<PropagationSpec>(&ok).is_ok());
    }

    #[test]
    fn garbage_is_bounded() {
        let mut spec = serde_json::Map::new();
        for i in 0..100 {
            spec.insert(format!("junk{i}"), json!(i));
        }
        let errors = typed::<PropagationSpec>(&Value::Object(spec)).err().unwrap_or_default();
        assert_eq!(errors.len(), MAX_ERRORS);
    }

    #[test]
    fn suggestions_only_when_close() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("nmae", "name"), 1);
        assert_eq!(
            readable("unknown field `zonez`, expected one of `provider`, `region`, `zones`"),
            "unknown field `zonez` (did you mean `zones`?)"
        );
        let far = "unknown field `frobnicate`, expected `provider` or `region`";
        assert_eq!(readable(far), far);
    }
}
