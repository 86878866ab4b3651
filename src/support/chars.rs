//! Cuts of text by characters, never by bytes: text that came from a file (a commit id,
//! a tree id, a title in the state) may hold a multi-byte character, and a byte index
//! inside one panics (`&s[..10]` on `aaaaaaaaaé`).

/// The first `n` characters of `s` (all of it when shorter).
pub(crate) fn prefix(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// `s` cut to at most `max` characters, ending in `more` when it was cut.
pub(crate) fn clip(s: &str, max: usize, more: &str) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(more.chars().count());
    format!("{}{more}", prefix(s, keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_between_characters() {
        assert_eq!(prefix("aaaaaaaaaé", 10), "aaaaaaaaaé");
        assert_eq!(prefix("aaaaaaaaaéé", 10), "aaaaaaaaaé");
        assert_eq!(prefix("😀x", 1), "😀");
        assert_eq!(prefix("ab", 10), "ab");
        assert_eq!(clip("abcdef", 4, "…"), "abc…");
        assert_eq!(clip("éééééé", 5, "..."), "éé...");
        assert_eq!(clip("abc", 3, "..."), "abc");
        assert_eq!(clip("abcd", 2, "..."), "...");
    }
}
