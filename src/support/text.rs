//! Small text helpers over messages.

/// The last non-empty line of a message, unless it sits inside (or is) a fenced code
/// block: a claim quoted in a code block is not a claim.
pub fn final_line(message: &str) -> Option<&str> {
    let mut in_fence = false;
    let mut last: Option<&str> = None;
    for line in message.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            last = None;
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        last = (!in_fence).then_some(trimmed);
    }
    last
}
