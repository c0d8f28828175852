//! Name rules: DNS-1123 labels and subdomains, and the names of templates (which become file
//! names of the output directory).

/// DNS-1123 label: 1..=`max` chars of `[a-z0-9-]`, starting and ending alphanumeric.
pub fn check_dns1123_label(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > max {
        return Err(format!("`{name}` is longer than {max} characters"));
    }
    let ok_chars = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    if !ok_chars || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return Err(format!(
            "`{name}` is not a valid DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)"
        ));
    }
    Ok(())
}

/// DNS-1123 subdomain: ≤ 253 chars, dot-separated DNS-1123 labels.
pub fn check_dns1123_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > 253 {
        return Err(format!("`{name}` is longer than 253 characters"));
    }
    if name.split('.').all(|label| check_dns1123_label(label, 63).is_ok()) {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"
        ))
    }
}

/// Template names end up in file names of the output directory: non-empty, ≤ 253 chars,
/// `[a-z0-9.-]` only, not `.` or `..`.
pub fn check_template_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > 253 {
        return Err(format!("`{name}` is longer than 253 characters"));
    }
    if name == "." || name == ".." {
        return Err(format!("`{name}` is not a valid object name"));
    }
    if name.contains('/') || name.contains('\0') {
        return Err(format!("`{}` must not contain '/' or NUL", name.escape_debug()));
    }
    if name.contains(':') {
        return Err(format!(
            "`{name}`: names with ':' (such as RBAC `system:` names) are not supported by fedsched yet"
        ));
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-') {
        return Err(format!("`{}` may contain only lowercase letters, digits, '.' and '-'", name.escape_debug()));
    }
    Ok(())
}

/// A template's `kind` becomes part of a file name of the output directory: an identifier
/// (`[A-Za-z][A-Za-z0-9]*`, at most 63 characters), as every Kubernetes kind is.
pub fn check_kind(kind: &str) -> Result<(), String> {
    let bytes = kind.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphabetic()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a valid kind (a letter, then letters and digits, at most 63 characters)",
            kind.escape_debug()
        ))
    }
}

/// A template's `apiVersion`: `VERSION` (the core group) or `GROUP/VERSION`, the group a
/// DNS-1123 subdomain and the version a DNS-1123 label (so no `/..`, no second `/`).
pub fn check_api_version(api_version: &str) -> Result<(), String> {
    let shown = api_version.escape_debug();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (Some(g), v),
        None => (None, api_version),
    };
    if let Some(g) = group
        && let Err(e) = check_dns1123_subdomain(g)
    {
        return Err(format!("`{shown}`: the group {e}"));
    }
    if let Err(e) = check_dns1123_label(version, 63) {
        return Err(format!("`{shown}`: the version {e} (GROUP/VERSION, such as apps/v1)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_api_versions() {
        for ok in ["Deployment", "ConfigMap", "V2Thing"] {
            assert!(check_kind(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Foo/..", "..", "a b", "1Pod", "Dé", "Foo-Bar", &"K".repeat(64)] {
            assert!(check_kind(bad).is_err(), "{bad}");
        }
        for ok in ["v1", "apps/v1", "example.io/v1alpha1"] {
            assert!(check_api_version(ok).is_ok(), "{ok}");
        }
        for bad in ["apps/v1/..", "apps/..", "../v1", "a/b/c", "apps/", "/v1", "Apps/v1", "v1 ", "x/../y/v1"] {
            assert!(check_api_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names() {
        assert!(check_dns1123_subdomain("a.b-c").is_ok());
        assert!(check_dns1123_subdomain("A").is_err());
        assert!(check_dns1123_subdomain("a..b").is_err());
        assert!(check_dns1123_label("a.b", 63).is_err());
        assert!(check_template_name("..").is_err());
        assert!(check_template_name("a/b").is_err());
        assert!(check_template_name("-ok.").is_ok());
    }
}
