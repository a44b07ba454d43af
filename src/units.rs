//! Small types that carry units and meaning, so that sizes and durations are never bare integers.

use std::fmt;

/// A number of bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const KIB: u64 = 1 << 10;
    pub const MIB: u64 = 1 << 20;
    pub const GIB: u64 = 1 << 30;

    pub const fn get(self) -> u64 {
        self.0
    }
    pub fn saturating_sub(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(other.0))
    }

    /// Parses "2KiB", "32GiB", "1.5 GiB", "512MB", "4096" (bytes).
    pub fn parse(text: &str) -> Option<Bytes> {
        let t = text.trim();
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let num: f64 = num.parse().ok()?;
        let mult = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1u64,
            "k" | "kib" => Self::KIB,
            "kb" => 1000,
            "m" | "mib" => Self::MIB,
            "mb" => 1000 * 1000,
            "g" | "gib" => Self::GIB,
            "gb" => 1000 * 1000 * 1000,
            "t" | "tib" => Self::GIB << 10,
            "tb" => 1000 * 1000 * 1000 * 1000,
            _ => return None,
        };
        if !num.is_finite() || num < 0.0 {
            return None;
        }
        Some(Bytes((num * mult as f64).round() as u64))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v >= Self::GIB {
            write!(f, "{:.1} GiB", v as f64 / Self::GIB as f64)
        } else if v >= Self::MIB {
            write!(f, "{:.1} MiB", v as f64 / Self::MIB as f64)
        } else if v >= Self::KIB {
            write!(f, "{:.1} KiB", v as f64 / Self::KIB as f64)
        } else {
            write!(f, "{v} B")
        }
    }
}

/// On the wire and in config files a size is a number of bytes or text such as "4GiB".
impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u64),
            Text(String),
        }
        match <Raw as serde::Deserialize>::deserialize(d)? {
            Raw::Num(n) => Ok(Bytes(n)),
            Raw::Text(t) => Bytes::parse(&t)
                .ok_or_else(|| serde::de::Error::custom(format!("{t:?} is not a size such as \"4GiB\" or 4096"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(Bytes::parse("2KiB"), Some(Bytes(2048)));
        assert_eq!(Bytes::parse("32GiB"), Some(Bytes(32 << 30)));
        assert_eq!(Bytes::parse("4096"), Some(Bytes(4096)));
        assert_eq!(Bytes::parse("1.5 GiB"), Some(Bytes(3 << 29)));
        assert_eq!(Bytes::parse("ten"), None);
        assert_eq!(Bytes::parse("3 parsecs"), None);
    }
}

/// Serializes a `Duration` as fractional milliseconds, the unit every timing on the wire uses.
pub mod millis {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1e3)
    }
}
