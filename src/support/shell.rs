//! The one quoting rule for every command specrun prints (hints, refusals, the guard's
//! halt line, status and snapshot steps, last-mile, goal): a spec name, id, path or
//! command in it is one `sh` word however it is spelled, so the printed line works when
//! pasted. Pure.

/// A word safe to paste into `sh`: plain names stay as they are, anything else is
/// single-quoted (a `'` inside becomes `'\''`).
pub(crate) fn word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-+:@%/=,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `--spec NAME` with the name as one word.
pub(crate) fn spec_flag(name: &str) -> String {
    format!("--spec {}", word(name))
}

/// `path` (a file or directory) as one word.
pub(crate) fn path(path: &std::path::Path) -> String {
    word(&path.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_and_the_rest_is_quoted() {
        assert_eq!(word("demo-1.2"), "demo-1.2");
        assert_eq!(word("a b"), "'a b'");
        assert_eq!(word("it's"), r"'it'\''s'");
        assert_eq!(word(""), "''");
        assert_eq!(spec_flag("a;b"), "--spec 'a;b'");
        assert_eq!(path(std::path::Path::new("/x/$y")), "'/x/$y'");
    }
}
