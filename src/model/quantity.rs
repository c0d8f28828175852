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

#[cfg(test)]
mod tests {
    use super::*;

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
