//! Kubernetes resource quantities (`500m`, `4`, `16Gi`, `1.5`, `2e3`), held as milli-units in
//! an `i64` so every dimension is compared the same way. CPU `1` = 1000, memory `1Ki` =
//! 1_024_000. Saturates instead of overflowing (an exabyte-scale quantity is still "huge").

use std::fmt;

/// Why a quantity string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {text:?}: {reason}")]
pub struct QuantityError {
    pub text: String,
    pub reason: &'static str,
}

/// Parses a Kubernetes quantity into milli-units.
pub fn parse_milli(text: &str) -> Result<i64, QuantityError> {
    let err = |reason| QuantityError { text: text.to_string(), reason };
    let s = text.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    let (sign, s) = match s.as_bytes()[0] {
        b'-' => (-1i128, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    // Split number and suffix.
    let num_end = s.char_indices().find(|(_, c)| !(c.is_ascii_digit() || *c == '.')).map(|(i, _)| i).unwrap_or(s.len());
    let (num, suffix) = s.split_at(num_end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(err("no number"));
    }
    // Value as a rational: digits / 10^frac_digits.
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    let digits = format!("{int_part}{frac_part}");
    let mut mantissa: i128 = 0;
    for b in digits.bytes() {
        mantissa = mantissa.saturating_mul(10).saturating_add(i128::from(b - b'0'));
    }
    let mut scale_den: i128 = 10i128.saturating_pow(frac_part.len() as u32);
    // Multiplier relative to base units, times 1000 for milli.
    let (mul, den): (i128, i128) = match suffix {
        "" => (1000, 1),
        "m" => (1, 1),
        "u" => (1, 1000),
        "n" => (1, 1_000_000),
        "k" => (1000 * 1000, 1),
        "M" => (1000 * 1_000_000, 1),
        "G" => (1000 * 1_000_000_000, 1),
        "T" => (1000 * 1_000_000_000_000, 1),
        "P" => (1000 * 1_000_000_000_000_000, 1),
        "E" => (1000 * 1_000_000_000_000_000_000, 1),
        "Ki" => (1000 << 10, 1),
        "Mi" => (1000 << 20, 1),
        "Gi" => (1000 << 30, 1),
        "Ti" => (1000 << 40, 1),
        "Pi" => (1000 << 50, 1),
        "Ei" => (1000 << 60, 1),
        other => {
            if let Some(exp) = other.strip_prefix(['e', 'E']) {
                let e: i32 = exp.parse().map_err(|_| err("bad exponent"))?;
                if e >= 0 {
                    (1000i128.saturating_mul(10i128.saturating_pow(e.unsigned_abs().min(30))), 1)
                } else {
                    scale_den = scale_den.saturating_mul(10i128.saturating_pow(e.unsigned_abs().min(30)));
                    (1000, 1)
                }
            } else {
                return Err(err("unknown suffix"));
            }
        }
    };
    let num = mantissa.saturating_mul(mul);
    let den = scale_den.saturating_mul(den);
    // Kubernetes rounds up fractional milli-units (a request of 0.1m is 1m).
    let value = (num + den - 1) / den;
    let value = sign * value;
    Ok(value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

/// Formats milli-units for people: CPU-like values as cores or millicores, byte-like values
/// with binary suffixes when exact.
pub fn format_milli(resource: &str, milli: i64) -> String {
    if resource == "cpu" || milli % 1000 != 0 {
        if milli % 1000 == 0 {
            return format!("{}", milli / 1000);
        }
        return format!("{milli}m");
    }
    let v = milli / 1000;
    if is_byte_resource(resource) {
        for (suffix, shift) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
            let unit = 1i64 << shift;
            if v != 0 && v % unit == 0 {
                return format!("{}{suffix}", v / unit);
            }
        }
    }
    format!("{v}")
}

fn is_byte_resource(resource: &str) -> bool {
    resource == "memory" || resource.contains("storage") || resource.starts_with("hugepages-")
}

/// A quantity remembered with its resource name for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown<'a>(pub &'a str, pub i64);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_milli(self.0, self.1))
    }
}

/// How Kubernetes writes a quantity it has read: Go's `resource.Quantity` parsed from `text`
/// (`ParseQuantity`) and written back as JSON (`MarshalJSON`) — what Karmada's typed
/// conversion makes of a quantity a script returns in `requires` or a component. A text
/// Kubernetes takes for canonical is kept as written (`2.048`, `2048m`, `1e3`, `100`); any other
/// is rewritten in canonical form: the value (rounded up to nano-units) with the largest
/// suffix of its format that keeps it whole (`1.5` → `1500m`, `1000` → `1k`, `0.1` → `100m`,
/// `1024Mi` → `1Gi`, `3.14159` → `3141590u`).
pub fn go_canonical(text: &str) -> Result<String, QuantityError> {
    let err = |reason| QuantityError { text: text.to_string(), reason };
    if text.is_empty() {
        return Err(err("empty"));
    }
    if text == "0" {
        return Ok(text.to_string());
    }
    let b = text.as_bytes();
    let mut pos = 0;
    let negative = match b.first() {
        Some(b'-') => {
            pos = 1;
            true
        }
        Some(b'+') => {
            pos = 1;
            false
        }
        _ => false,
    };
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    let digits_from = |pos: usize| pos + b[pos..].iter().take_while(|c| c.is_ascii_digit()).count();
    let num_end = digits_from(pos);
    let num = if num_end == pos { "0" } else { &text[pos..num_end] };
    let (denom, mut pos) = match b.get(num_end) {
        Some(b'.') => {
            let end = digits_from(num_end + 1);
            (&text[num_end + 1..end], end)
        }
        _ => ("", num_end),
    };
    if pos == b.len() && num_end == b.len() && num == "0" && denom.is_empty() {
        return Ok("0".into());
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    if b[pos..].iter().any(|c| !c.is_ascii_digit()) {
        return Err(err("not a quantity"));
    }
    let suffix = &text[suffix_start..];
    let (binary, exponent, format) = match suffix {
        "" => (false, 0, Format::DecimalSi),
        "n" => (false, -9, Format::DecimalSi),
        "u" => (false, -6, Format::DecimalSi),
        "m" => (false, -3, Format::DecimalSi),
        "k" => (false, 3, Format::DecimalSi),
        "M" => (false, 6, Format::DecimalSi),
        "G" => (false, 9, Format::DecimalSi),
        "T" => (false, 12, Format::DecimalSi),
        "P" => (false, 15, Format::DecimalSi),
        "E" => (false, 18, Format::DecimalSi),
        "Ki" => (true, 10, Format::BinarySi),
        "Mi" => (true, 20, Format::BinarySi),
        "Gi" => (true, 30, Format::BinarySi),
        "Ti" => (true, 40, Format::BinarySi),
        "Pi" => (true, 50, Format::BinarySi),
        "Ei" => (true, 60, Format::BinarySi),
        s if s.len() > 1 && s.starts_with(['e', 'E']) => {
            let e: i64 = s[1..].parse().map_err(|_| err("bad exponent"))?;
            (false, i32::try_from(e).map_err(|_| err("bad exponent"))?, Format::DecimalExponent)
        }
        _ => return Err(err("unknown suffix")),
    };
    let shifted = format!("{num}{denom}");
    // Kubernetes' fast path: an amount that fits an int64 exactly at nano-units or coarser.
    let fits = match format {
        Format::BinarySi if exponent >= 0 && denom.is_empty() => {
            15 - num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 > 0
        }
        Format::BinarySi => false,
        _ => 18 - (num.len() + denom.len()) as i32 >= 0,
    };
    let scale = if binary { 0 } else { exponent - denom.len() as i32 };
    if fits && scale >= -9 {
        let value: i64 = shifted.parse().map_err(|_| err("not a number"))?;
        let factor = if binary { 1i64 << exponent } else { 1 };
        if let Some(amount) = value.checked_mul(factor) {
            let keep = match format {
                Format::BinarySi => exponent % 10 == 0 && value & 7 != 0,
                _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
            };
            if keep {
                return Ok(text.to_string());
            }
            let digits = amount.to_string();
            return Ok(canonical(Decimal { negative, digits, exp: scale }, format));
        }
    }
    // The exact amount: digits × 10^exp (× 2^exponent for a binary suffix).
    let mut d = Decimal { negative, digits: shifted, exp: -(denom.len() as i32) };
    if binary {
        for _ in 0..exponent {
            d.digits = mul_small(&d.digits, 2);
        }
    } else {
        d.exp += exponent;
    }
    d.normalize();
    // Rounded up (away from zero) to nano-units.
    if d.exp < -9 && !d.is_zero() {
        let drop = (-9 - d.exp) as usize;
        let keep = d.digits.len().saturating_sub(drop);
        let rest_nonzero = d.digits[keep..].bytes().any(|c| c != b'0');
        d.digits = if keep == 0 { "0".into() } else { d.digits[..keep].to_string() };
        if rest_nonzero {
            d.digits = add_one(&d.digits);
        }
        d.exp = -9;
        d.normalize();
    }
    let mut format = format;
    if format == Format::BinarySi {
        // Capped at the largest int64; below one unit, decimal.
        let max = Decimal { negative: false, digits: i64::MAX.to_string(), exp: 0 };
        if d.cmp_abs(&max) == std::cmp::Ordering::Greater {
            d.digits = max.digits;
            d.exp = 0;
        }
        if d.exp < 0 && !d.is_zero() && d.digits.len() as i32 + d.exp <= 0 {
            format = Format::DecimalSi;
        }
    }
    Ok(canonical(d, format))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSi,
    DecimalExponent,
    BinarySi,
}

/// `±digits × 10^exp`, digits without leading zeros ("0" for zero).
#[derive(Debug, Clone)]
struct Decimal {
    negative: bool,
    digits: String,
    exp: i32,
}

impl Decimal {
    fn normalize(&mut self) {
        let t = self.digits.trim_start_matches('0');
        self.digits = if t.is_empty() { "0".into() } else { t.into() };
    }

    fn is_zero(&self) -> bool {
        self.digits == "0"
    }

    /// |self| against |other| (both normalized).
    fn cmp_abs(&self, other: &Decimal) -> std::cmp::Ordering {
        let (a, b) = (self.integer_digits(), other.integer_digits());
        let m = self.exp.min(other.exp);
        let pad = |d: &Decimal| format!("{}{}", d.digits, "0".repeat((d.exp - m) as usize));
        let (x, y) = (pad(self), pad(other));
        a.cmp(&b).then(x.len().cmp(&y.len())).then(x.cmp(&y))
    }

    fn integer_digits(&self) -> i32 {
        if self.is_zero() { 0 } else { self.digits.len() as i32 + self.exp }
    }

    /// The whole number, if it is one.
    fn whole(&self) -> Option<String> {
        if self.exp >= 0 {
            return Some(format!("{}{}", self.digits, "0".repeat(self.exp as usize)));
        }
        let cut = self.digits.len() as i64 + i64::from(self.exp);
        let frac = if cut <= 0 { &self.digits[..] } else { &self.digits[cut as usize..] };
        if frac.bytes().any(|c| c != b'0') {
            return None;
        }
        Some(if cut <= 0 { "0".into() } else { self.digits[..cut as usize].to_string() })
    }
}

fn mul_small(digits: &str, m: u32) -> String {
    let mut out = Vec::with_capacity(digits.len() + 2);
    let mut carry = 0u32;
    for c in digits.bytes().rev() {
        let v = u32::from(c - b'0') * m + carry;
        out.push(b'0' + (v % 10) as u8);
        carry = v / 10;
    }
    while carry > 0 {
        out.push(b'0' + (carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// `digits / d` and whether it divides exactly.
fn div_small(digits: &str, d: u32) -> (String, bool) {
    let mut out = String::with_capacity(digits.len());
    let mut rem = 0u32;
    for c in digits.bytes() {
        let v = rem * 10 + u32::from(c - b'0');
        out.push((b'0' + (v / d) as u8) as char);
        rem = v % d;
    }
    let t = out.trim_start_matches('0');
    (if t.is_empty() { "0".into() } else { t.into() }, rem == 0)
}

fn add_one(digits: &str) -> String {
    let mut out: Vec<u8> = digits.bytes().collect();
    for c in out.iter_mut().rev() {
        if *c == b'9' {
            *c = b'0';
        } else {
            *c += 1;
            return String::from_utf8(out).unwrap_or_default();
        }
    }
    out.insert(0, b'1');
    String::from_utf8(out).unwrap_or_default()
}

/// Kubernetes' canonical text of an amount (`CanonicalizeBytes`).
fn canonical(mut d: Decimal, format: Format) -> String {
    d.normalize();
    if d.is_zero() {
        return "0".into();
    }
    let sign = if d.negative { "-" } else { "" };
    let mut format = format;
    if format == Format::BinarySi {
        let small = d.cmp_abs(&Decimal { negative: false, digits: "1024".into(), exp: 0 }) == std::cmp::Ordering::Less;
        match d.whole() {
            Some(mut n) if !small => {
                let mut e = 0;
                while e < 6 {
                    match div_small(&n, 1024) {
                        (q, true) if n != "0" => {
                            n = q;
                            e += 1;
                        }
                        _ => break,
                    }
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][e];
                return format!("{sign}{n}{suffix}");
            }
            _ => format = Format::DecimalSi,
        }
    }
    // Factors of ten into the exponent, then the exponent down to a multiple of 3.
    let trailing = d.digits.len() - d.digits.trim_end_matches('0').len();
    d.digits.truncate(d.digits.len() - trailing);
    d.exp += trailing as i32;
    let down = d.exp.rem_euclid(3);
    d.digits.push_str(&"0".repeat(down as usize));
    d.exp -= down;
    let suffix = match format {
        Format::DecimalExponent if d.exp == 0 => String::new(),
        Format::DecimalExponent => format!("e{}", d.exp),
        _ => match d.exp {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        }
        .to_string(),
    };
    format!("{sign}{}{suffix}", d.digits)
}

/// A JSON number as Go's `encoding/json` writes it (the text a quantity given as a number is
/// read from): an integer as it is, a float in its shortest digits, with an exponent
/// (`1e-7`, `1e+21`) below 1e-6 and from 1e21.
pub fn go_json_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() => {
            let a = f.abs();
            if a != 0.0 && !(1e-6..1e21).contains(&a) {
                let e = format!("{f:e}");
                match e.split_once('e') {
                    Some((m, x)) if !x.starts_with('-') => format!("{m}e+{x}"),
                    _ => e,
                }
            } else {
                format!("{f}")
            }
        }
        _ => n.to_string(),
    }
}

/// A quantity of a script's result as Karmada writes it back: [`go_canonical`] of its text
/// (a number's as Go's JSON writes it).
pub fn go_quantity_value(v: &serde_json::Value) -> Result<String, QuantityError> {
    match v {
        serde_json::Value::String(s) => go_canonical(s.trim()),
        serde_json::Value::Number(n) => go_canonical(&go_json_number(n)),
        other => Err(QuantityError { text: other.to_string(), reason: "not a quantity" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Kubernetes (apimachinery in Karmada f8fdd02's vendor tree) wrote back for each, a
    /// `ResourceList` read from JSON and marshalled again.
    #[test]
    fn quantities_are_written_back_as_kubernetes_writes_them() {
        use serde_json::json;
        for (input, go) in [
            (json!("2.048"), Some("2.048")),
            (json!(1), Some("1")),
            (json!("2048m"), Some("2048m")),
            (json!(1.5), Some("1500m")),
            (json!(0.5), Some("500m")),
            (json!("1e3"), Some("1e3")),
            (json!(100), Some("100")),
            (json!("1024Mi"), Some("1Gi")),
            (json!(2.0), Some("2")),
            (json!(0.001), Some("1m")),
            (json!("1.5Gi"), Some("1536Mi")),
            (json!(3.14158), Some("3141580u")),
            (json!(12345678901234567890u64), Some("12345678901234567890")),
            (json!(9223372036854776000u64), Some("9223372036854776k")),
            (json!(0.1), Some("100m")),
            (json!(1.0000001), Some("1000000100n")),
            (json!("1000"), Some("1k")),
            (json!("0"), Some("0")),
            (json!("000"), Some("0")),
            (json!("-1.5"), Some("-1500m")),
            (json!("+1"), Some("+1")),
            (json!("1.0000000001"), Some("1000000001n")),
            (json!("0.0000000001"), Some("1n")),
            (json!("1Ki"), Some("1Ki")),
            (json!("1536Mi"), Some("1536Mi")),
            (json!("1023"), Some("1023")),
            (json!("0.5Gi"), Some("512Mi")),
            (json!("1.5Ki"), Some("1536")),
            (json!("1500Ki"), Some("1500Ki")),
            (json!("8Ki"), Some("8Ki")),
            (json!("100Mi"), Some("100Mi")),
            (json!("1E"), Some("1E")),
            (json!("1000E"), Some("1")),
            (json!("1e21"), Some("1e21")),
            (json!("1.5e3"), Some("1500")),
            (json!("1e-3"), Some("1e-3")),
            (json!("12e2"), Some("1200")),
            (json!("0.000001"), Some("1u")),
            (json!(1e-7), Some("100e-9")),
            (json!("5n"), Some("5n")),
            (json!("1.5n"), Some("2n")),
            (json!("0.1m"), Some("100u")),
            (json!("1000000"), Some("1M")),
            (json!("123456789012345678"), Some("123456789012345678")),
            (json!("1234567890123456789"), Some("1234567890123456789")),
            (json!("2000m"), Some("2")),
            (json!("1k"), Some("1k")),
            (json!("1000k"), Some("1M")),
            (json!("1.2.3"), None),
            (json!("1x"), None),
            (json!("3Mi"), Some("3Mi")),
            (json!("3072Ki"), Some("3Mi")),
            (json!("1025Ki"), Some("1025Ki")),
            (json!("9Ei"), Some("9223372036854775807")),
            (json!(" 2 "), Some("2")),
        ] {
            let got = go_quantity_value(&input);
            match go {
                Some(want) => assert_eq!(got.as_deref(), Ok(want), "{input}"),
                None => assert!(got.is_err(), "{input}: {got:?}"),
            }
        }
    }

    #[test]
    fn parses_kubernetes_quantities() {
        let cases = [
            ("1", 1000),
            ("500m", 500),
            ("1.5", 1500),
            ("0.1", 100),
            ("100u", 1),
            ("1Ki", 1024 * 1000),
            ("16Gi", 16 * (1i64 << 30) * 1000),
            ("1k", 1_000_000),
            ("2e3", 2_000_000),
            ("1.5Gi", 3 * (1i64 << 29) * 1000),
            ("-2", -2000),
            ("110", 110_000),
        ];
        for (text, want) in cases {
            assert_eq!(parse_milli(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "abc", "1x", "1.2.3", ".", "1Gb"] {
            assert!(parse_milli(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        assert_eq!(parse_milli("100Ei"), Ok(i64::MAX));
    }

    #[test]
    fn formats_for_people() {
        assert_eq!(format_milli("cpu", 1500), "1500m");
        assert_eq!(format_milli("cpu", 4000), "4");
        assert_eq!(format_milli("memory", 16 * (1i64 << 30) * 1000), "16Gi");
        assert_eq!(format_milli("pods", 110_000), "110");
    }
}
