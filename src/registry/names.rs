//! Tool names as the resolver compares them: the normalized key for variants (case, `.`, `-`, `_`), and the
//! provider-safe form (`^[A-Za-z0-9_-]{1,64}$`) that model providers accept.

const MAX_SAFE_LEN: usize = 64;
const HASH_HEX: usize = 8;

/// Maps a registry name to `^[A-Za-z0-9_-]{1,64}$`: other characters become `_`, and an over-long name keeps
/// its head plus a stable hash of the whole name, so distinct long names stay distinct.
pub fn provider_safe_name(name: &str) -> String {
    let mapped: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if mapped.len() <= MAX_SAFE_LEN {
        return mapped;
    }
    let head = &mapped[..MAX_SAFE_LEN - HASH_HEX - 1];
    format!("{head}_{:08x}", fnv1a32(name.as_bytes()))
}

/// FNV-1a: tiny, stable across versions and platforms, good enough to keep long names apart.
fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

/// The comparison key for name variants: lowercase, without `.`, `-` and `_`.
pub fn normalize_name(name: &str) -> String {
    normalized(name).collect()
}

/// Whether two names are the same under `normalize_name`, without allocating either.
pub fn same_name(a: &str, b: &str) -> bool {
    normalized(a).eq(normalized(b))
}

/// Whether `name` has more than `n` characters once normalized, reading at most `n + 1` of them past separators.
pub fn normalized_longer_than(name: &str, n: usize) -> bool {
    normalized(name).nth(n).is_some()
}

pub(super) fn normalized(name: &str) -> impl Iterator<Item = char> + '_ {
    name.chars().filter(|c| !matches!(c, '.' | '-' | '_')).flat_map(char::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_name_compares_as_normalize_name_does() {
        for (a, b) in [("UserID", "user_id"), ("user.id", "USER-ID"), ("ÉTÉ", "été"), ("", "_-.")] {
            assert!(same_name(a, b), "{a} {b}");
            assert_eq!(normalize_name(a), normalize_name(b));
        }
        for (a, b) in [("user_ids", "user_id"), ("user", "user_id"), ("usr_id", "user_id")] {
            assert!(!same_name(a, b), "{a} {b}");
        }
    }

    #[test]
    fn safe_names() {
        assert_eq!(provider_safe_name("weather.get"), "weather_get");
        assert_eq!(provider_safe_name("a-b_c"), "a-b_c");
        let long_a = format!("{}.a", "x".repeat(80));
        let long_b = format!("{}.b", "x".repeat(80));
        let (a, b) = (provider_safe_name(&long_a), provider_safe_name(&long_b));
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert_eq!(a, provider_safe_name(&long_a), "stable");
    }
}
