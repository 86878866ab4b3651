//! Small text helpers over messages.

/// A line as a claim reads: markdown emphasis and code ticks, quotes, a leading quote or
/// list marker and trailing punctuation taken off (`**TASK_COMPLETE 1.1**`,
/// `` `TASK_COMPLETE 1.1` ``, `"ALL_TASKS_COMPLETE".`, `> - TASK_COMPLETE: 2`).
pub(crate) fn claim_text(line: &str) -> String {
    let kept: String = line
        .chars()
        .filter(|c| !matches!(c, '*' | '`' | '"' | '“' | '”' | '‘' | '’'))
        .collect();
    let body = kept
        .trim()
        .trim_start_matches(['>', '-', '+', ' ', '\'', '_']);
    body.trim_end_matches(['.', '!', ',', ';', ' ', '\'', '_'])
        .to_string()
}

/// Every non-empty line of a message, last first, fenced ones included (a claim hidden in a
/// fence still asks to be checked).
pub(crate) fn lines_last_first(message: &str) -> impl Iterator<Item = &str> {
    message
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("```") && !l.starts_with("~~~"))
}

/// The last non-empty line of a message, unless it sits inside (or is) a fenced code
/// block: a claim quoted in a code block is not a claim.
pub(crate) fn final_line(message: &str) -> Option<&str> {
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
