//! Image references (Karmada's `pkg/util/imageparser`, after distribution's `reference.Parse`)
//! and the `imageOverrider`.

use serde_json::Value;

use super::patch::{get_mut, parse_pointer};
use super::pod_spec_pointer;
use crate::policy::types::{ImageComponent, ImageOverrider, OverriderOperator};

/// An image reference split as Karmada splits it: `[registry/]repository[:tag][@digest]`. The
/// registry is the first path segment only when it contains `.` or `:` or is `localhost`; no
/// `docker.io` / `library/` normalisation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageRef {
    /// Registry host (with port), may be empty.
    pub registry: String,
    /// Repository path without the registry.
    pub repository: String,
    /// Tag, may be empty.
    pub tag: String,
    /// Digest (`sha256:…`), may be empty.
    pub digest: String,
}

const MAX_NAME_LEN: usize = 255;

/// `[\w][\w.-]{0,127}`
fn is_tag(s: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = s.chars();
    s.len() <= 128 && chars.next().is_some_and(word) && chars.all(|c| word(c) || c == '.' || c == '-')
}

/// `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
fn is_digest(s: &str) -> bool {
    let Some((algo, hex)) = s.split_once(':') else { return false };
    let algo_ok = algo.split(['-', '_', '+', '.']).all(|part| {
        let mut c = part.chars();
        c.next().is_some_and(|c| c.is_ascii_alphabetic()) && c.all(|c| c.is_ascii_alphanumeric())
    });
    algo_ok && hex.len() >= 32 && hex.chars().all(|c| c.is_ascii_hexdigit())
}

/// A path component: `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`.
fn is_path_component(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut i = 0;
    loop {
        let start = i;
        while i < b.len() && alnum(b[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == b.len() {
            return true;
        }
        let sep_start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &s[sep_start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|c| c == b'-')) {
            return false;
        }
    }
}

/// A registry: `host(:port)?` with DNS-ish components, or a bracketed IPv6 address.
fn is_domain(s: &str) -> bool {
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && (h.starts_with('[') == h.ends_with(']')) && !p.contains(']') => {
            (h, Some(p))
        }
        _ => (s, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return !inner.is_empty() && inner.chars().all(|c| c.is_ascii_hexdigit() || c == ':');
    }
    !host.is_empty()
        && host.split('.').all(|c| {
            let b = c.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
        })
}

impl ImageRef {
    /// Parses an image reference; errors name what is wrong.
    pub fn parse(image: &str) -> Result<ImageRef, String> {
        if image.is_empty() {
            return Err("image reference is empty".into());
        }
        let (rest, digest) = match image.split_once('@') {
            Some((r, d)) if is_digest(d) => (r, d.to_string()),
            Some(_) => return Err(format!("image {image:?}: invalid digest")),
            None => (image, String::new()),
        };
        let (name, tag) = match rest.rsplit_once(':') {
            Some((n, t)) if !t.contains('/') => {
                if !is_tag(t) {
                    return Err(format!("image {image:?}: invalid tag {t:?}"));
                }
                (n, t.to_string())
            }
            _ => (rest, String::new()),
        };
        if name.len() > MAX_NAME_LEN {
            return Err(format!("image {image:?}: repository name longer than {MAX_NAME_LEN} characters"));
        }
        let parts: Vec<&str> = name.split('/').collect();
        let all_path = parts.iter().all(|p| is_path_component(p));
        let domain_then_path =
            parts.len() > 1 && is_domain(parts[0]) && parts[1..].iter().all(|p| is_path_component(p));
        if !all_path && !domain_then_path {
            let reason = if name.chars().any(|c| c.is_ascii_uppercase()) {
                "must be lower case"
            } else {
                "invalid reference format"
            };
            return Err(format!("image {image:?}: repository name {reason}"));
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
            _ => ("", name),
        };
        Ok(ImageRef { registry: registry.into(), repository: repository.into(), tag, digest })
    }

    /// Sets the tag or the digest, whichever `input` is; an input that is neither is ignored
    /// (Karmada's `SetTagOrDigest`).
    fn set_tag_or_digest(&mut self, input: &str) {
        if is_tag(input) {
            self.tag = input.into();
            self.digest.clear();
        } else if is_digest(input) {
            self.digest = input.into();
            self.tag.clear();
        }
    }

    /// Applies one image overrider operation.
    pub fn apply(&mut self, component: ImageComponent, op: OverriderOperator, value: &str) {
        match (component, op) {
            (ImageComponent::Registry, OverriderOperator::Add) => self.registry.push_str(value),
            (ImageComponent::Registry, OverriderOperator::Replace) => self.registry = value.into(),
            (ImageComponent::Registry, OverriderOperator::Remove) => self.registry.clear(),
            (ImageComponent::Repository, OverriderOperator::Add) => self.repository.push_str(value),
            (ImageComponent::Repository, OverriderOperator::Replace) => self.repository = value.into(),
            (ImageComponent::Repository, OverriderOperator::Remove) => self.repository.clear(),
            (ImageComponent::Tag, OverriderOperator::Add) => {
                let current = if self.tag.is_empty() { self.digest.clone() } else { self.tag.clone() };
                self.set_tag_or_digest(&format!("{current}{value}"));
            }
            (ImageComponent::Tag, OverriderOperator::Replace) => self.set_tag_or_digest(value),
            (ImageComponent::Tag, OverriderOperator::Remove) => {
                if !self.tag.is_empty() {
                    self.tag.clear();
                } else {
                    self.digest.clear();
                }
            }
        }
    }
}

impl std::fmt::Display for ImageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.registry.is_empty() {
            write!(f, "{}/", self.registry)?;
        }
        f.write_str(&self.repository)?;
        if !self.tag.is_empty() {
            write!(f, ":{}", self.tag)?;
        }
        if !self.digest.is_empty() {
            write!(f, "@{}", self.digest)?;
        }
        Ok(())
    }
}

fn override_image(current: &str, img: &ImageOverrider) -> Result<String, String> {
    let mut r = ImageRef::parse(current)?;
    r.apply(img.component, img.operator, img.value.as_deref().unwrap_or(""));
    Ok(r.to_string())
}

pub(super) fn apply_image(obj: &mut Value, kind: &str, img: &ImageOverrider) -> Result<(), String> {
    if let Some(pred) = &img.predicate {
        let tokens = parse_pointer(&pred.path)?;
        if tokens.is_empty() {
            return Err("predicate path must not be the document root".into());
        }
        let slot = get_mut(obj, &tokens)?;
        let Value::String(current) = slot else {
            return Err(format!("value at {} is not a string", pred.path));
        };
        *slot = Value::String(override_image(current, img)?);
        return Ok(());
    }
    let Some(spec) = pod_spec_pointer(kind, true) else { return Ok(()) };
    let Some(containers) = obj.pointer_mut(&format!("{spec}/containers")) else { return Ok(()) };
    let Value::Array(containers) = containers else {
        return Err(format!("{spec}/containers is not a list"));
    };
    for (i, c) in containers.iter_mut().enumerate() {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let new = override_image(image, img).map_err(|e| format!("{spec}/containers/{i}/image: {e}"))?;
        match c.as_object_mut() {
            Some(m) => m.insert("image".into(), Value::String(new)),
            None => return Err(format!("{spec}/containers/{i} is not an object")),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_fixtures::{deployment, run, with_rules};
    use super::*;
    use crate::policy::matching::ClusterFacts;
    use crate::policy::types::{ImagePredicate, Overriders, RuleWithCluster};
    use crate::render::overrides::{ApplicableOverride, OverrideKind, apply};
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn image_parsing_table() {
        let d = "sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c";
        type Parts<'a> = (&'a str, &'a str, &'a str, &'a str);
        let cases: Vec<(&str, Parts)> = vec![
            ("pause", ("", "pause", "", "")),
            ("subpath/imagename:v1.0.0", ("", "subpath/imagename", "v1.0.0", "")),
            ("library/nginx", ("", "library/nginx", "", "")),
            ("fictional.registry.example/imagename:v1.0.0", ("fictional.registry.example", "imagename", "v1.0.0", "")),
            (
                "fictional.registry.example:10443/subpath/imagename:v1.0.0",
                ("fictional.registry.example:10443", "subpath/imagename", "v1.0.0", ""),
            ),
            ("localhost/img", ("localhost", "img", "", "")),
            ("localhost:5000/a/b:t", ("localhost:5000", "a/b", "t", "")),
            ("10.10.10.10:10443/subpath/imagename", ("10.10.10.10:10443", "subpath/imagename", "", "")),
            ("[::1]:5000/img:1", ("[::1]:5000", "img", "1", "")),
            (
                "reg.io/a@sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c",
                ("reg.io", "a", "", d),
            ),
            ("a:t@sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c", ("", "a", "t", d)),
            ("my-reg/a__b.c-d---e:1", ("", "my-reg/a__b.c-d---e", "1", "")),
        ];
        for (image, (reg, repo, tag, digest)) in cases {
            let r = ImageRef::parse(image).unwrap_or_else(|e| panic!("{image}: {e}"));
            assert_eq!(
                (r.registry.as_str(), r.repository.as_str(), r.tag.as_str(), r.digest.as_str()),
                (reg, repo, tag, digest),
                "{image}"
            );
            assert_eq!(r.to_string(), image, "round trip");
        }
        for bad in [
            "",
            "Nginx",
            "nginx:",
            "nginx:-x",
            "a//b",
            "a/",
            "/a",
            "nginx@sha256:abc",
            "a___b",
            "a:b:c",
            "UPPER.io:x/y",
        ] {
            assert!(ImageRef::parse(bad).is_err(), "{bad:?} must not parse");
        }
        assert!(ImageRef::parse("Reg.IO/app:1").is_ok(), "a domain may have upper case");
    }

    #[test]
    fn image_operations_table() {
        use ImageComponent::*;
        use OverriderOperator::*;
        let d = "sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c";
        let digested = format!("nginx@{d}");
        let cases: Vec<(&str, ImageComponent, OverriderOperator, &str, String)> = vec![
            ("nginx:1.25", Registry, Add, "fictional.registry.us", "fictional.registry.us/nginx:1.25".into()),
            ("reg.io/nginx", Registry, Add, "-mirror", "reg.io-mirror/nginx".into()),
            ("reg.io/nginx", Registry, Replace, "fictional.registry.cn", "fictional.registry.cn/nginx".into()),
            ("reg.io/nginx:1", Registry, Remove, "", "nginx:1".into()),
            ("reg.io/nginx:1", Repository, Replace, "team/web", "reg.io/team/web:1".into()),
            ("nginx:1", Repository, Add, "-debug", "nginx-debug:1".into()),
            ("reg.io/nginx:1", Repository, Remove, "", "reg.io/:1".into()),
            ("nginx:1", Tag, Replace, "2", "nginx:2".into()),
            ("nginx", Tag, Replace, "latest", "nginx:latest".into()),
            ("nginx:1", Tag, Add, "-alpine", "nginx:1-alpine".into()),
            ("nginx:1", Tag, Replace, "not a tag!", "nginx:1".into()),
            ("nginx:1", Tag, Replace, d, format!("nginx@{d}")),
            ("nginx:1", Tag, Remove, "", "nginx".into()),
            (&digested, Tag, Remove, "", "nginx".into()),
            (&digested, Tag, Replace, "v2", "nginx:v2".into()),
        ];
        for (image, c, op, value, want) in cases {
            let mut r = ImageRef::parse(image).expect("parse");
            r.apply(c, op, value);
            assert_eq!(r.to_string(), want, "{image} {c:?} {op:?} {value}");
        }
    }

    #[test]
    fn image_overrider_all_containers_and_predicate() {
        let mut obj = deployment();
        let o = Overriders {
            image_overrider: vec![ImageOverrider {
                predicate: None,
                component: ImageComponent::Registry,
                operator: OverriderOperator::Replace,
                value: Some("fictional.registry.us".into()),
            }],
            ..Default::default()
        };
        run(&mut obj, o).expect("apply");
        assert_eq!(
            obj.pointer("/spec/template/spec/containers/0/image"),
            Some(&json!("fictional.registry.us/nginx:1.25"))
        );
        let side = obj.pointer("/spec/template/spec/containers/1/image").and_then(Value::as_str).unwrap_or("");
        assert!(side.starts_with("fictional.registry.us/sub/side@sha256:"), "{side}");

        let mut obj = deployment();
        let o = Overriders {
            image_overrider: vec![ImageOverrider {
                predicate: Some(ImagePredicate { path: "/spec/template/spec/containers/0/image".into() }),
                component: ImageComponent::Tag,
                operator: OverriderOperator::Replace,
                value: Some("1.26".into()),
            }],
            ..Default::default()
        };
        run(&mut obj, o).expect("apply");
        assert_eq!(obj.pointer("/spec/template/spec/containers/0/image"), Some(&json!("nginx:1.26")));
        assert!(
            obj.pointer("/spec/template/spec/containers/1/image")
                .and_then(Value::as_str)
                .is_some_and(|s| s.contains("@sha256"))
        );

        // A predicate that points nowhere fails, naming the overrider.
        let mut obj = deployment();
        let o = Overriders {
            image_overrider: vec![ImageOverrider {
                predicate: Some(ImagePredicate { path: "/spec/template/spec/containers/5/image".into() }),
                component: ImageComponent::Tag,
                operator: OverriderOperator::Remove,
                value: None,
            }],
            ..Default::default()
        };
        let e = run(&mut obj, o).expect_err("missing");
        assert_eq!(
            (e.policy.as_str(), e.rule, e.overrider.as_str()),
            ("OverridePolicy/default/op", 0, "imageOverrider[0]")
        );
        assert!(e.reason.contains("out of bounds"), "{e}");
        // Kinds without a pod template are untouched.
        let mut cm = json!({"kind": "ConfigMap", "data": {"a": "b"}});
        let before = cm.clone();
        let labels = BTreeMap::new();
        let facts = ClusterFacts { name: "m", labels: &labels, provider: None, region: None, zones: &[] };
        let p = with_rules(vec![RuleWithCluster {
            target_cluster: None,
            overriders: Overriders {
                image_overrider: vec![ImageOverrider {
                    predicate: None,
                    component: ImageComponent::Tag,
                    operator: OverriderOperator::Replace,
                    value: Some("x".into()),
                }],
                ..Default::default()
            },
        }]);
        apply(&mut cm, "ConfigMap", &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &p }], &facts)
            .expect("no-op");
        assert_eq!(cm, before);
    }
}
