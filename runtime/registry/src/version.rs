//! The `{version}` path segment: a version number or `latest`.

use std::str::FromStr;

use crate::RegistryError;

/// Which version of a subject a request names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionId {
    /// `latest` (or `-1`, which Confluent also accepts): the newest live version.
    Latest,
    /// A version number, 1 to 2^31-1.
    Number(u32),
}

impl FromStr for VersionId {
    type Err = RegistryError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.eq_ignore_ascii_case("latest") || text == "-1" {
            return Ok(Self::Latest);
        }
        match text.parse::<i32>() {
            Ok(n) if n >= 1 => Ok(Self::Number(n.unsigned_abs())),
            _ => Err(RegistryError::InvalidVersion(text.to_owned())),
        }
    }
}

impl std::fmt::Display for VersionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Latest => f.write_str("latest"),
            Self::Number(n) => write!(f, "{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers_and_latest_only() {
        assert_eq!("latest".parse::<VersionId>().unwrap(), VersionId::Latest);
        assert_eq!("-1".parse::<VersionId>().unwrap(), VersionId::Latest);
        assert_eq!("7".parse::<VersionId>().unwrap(), VersionId::Number(7));
        for bad in ["0", "-2", "x", "", "2147483648"] {
            assert!(
                matches!(
                    bad.parse::<VersionId>(),
                    Err(RegistryError::InvalidVersion(_))
                ),
                "{bad}"
            );
        }
    }
}
