//! Percent-encoding (RFC 3986) for URL path segments and query values, and its inverse.

/// Percent-encodes everything but RFC 3986's unreserved characters, so the result is safe as
/// one path segment or one query value.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xf)] as char);
        }
    }
    out
}

/// Decodes `%XX` escapes and, as in a form-encoded query, `+` as a space. A `%` not followed
/// by two hex digits stays as it is; invalid UTF-8 is replaced (U+FFFD).
pub fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_reserved_characters() {
        assert_eq!(encode("a+b/c=="), "a%2Bb%2Fc%3D%3D");
        assert_eq!(encode("app=web,tier in (a b)"), "app%3Dweb%2Ctier%20in%20%28a%20b%29");
        assert_eq!(encode("AZaz09-._~"), "AZaz09-._~");
        assert_eq!(encode("é"), "%C3%A9");
    }

    #[test]
    fn decode_inverts_encode() {
        for s in ["a+b/c==", "x y", "é/ü?&=#", "", "%"] {
            assert_eq!(decode(&encode(s)), s);
        }
    }

    #[test]
    fn decode_keeps_broken_escapes() {
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("a+b"), "a b");
        assert_eq!(decode("%41%2f"), "A/");
    }
}
