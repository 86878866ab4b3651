//! Quoting for text pasted into `sh`.

/// A word safe to paste into `sh`: plain names stay as they are, anything else is
/// single-quoted.
pub fn shell_word(word: &str) -> String {
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
