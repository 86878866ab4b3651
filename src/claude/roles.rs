//! Who may run each verb: the model (inside Claude Code) or a person (at a shell). A
//! person's decision — confirming a criterion by hand, waiving a finding, clearing a
//! blocking follow-up, raising or resetting a cap, clearing a halt, restarting, counting
//! another command as a task's evidence — is refused inside Claude Code with one text,
//! `refuse_person`, which names what the model may do instead and never the person's
//! command (a model that reads a command as its way forward runs it). `cli`'s test keeps
//! every clap subcommand in `VERBS`.

use crate::error::Error;

/// Who decides with a verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The model may run it inside Claude Code.
    Model,
    /// A person's decision: refused inside Claude Code (all its forms).
    Person,
}

/// Every verb (clap subcommand path) and its role. A verb that is the model's may still
/// have a person's form, checked where the verb runs: `followup resolve` of a blocking
/// follow-up, `state init --restart`, `--force` over an existing state or a cap above its
/// default, `verify run --accept-other`. `hook …` is Claude Code's own (the PreToolUse
/// guard denies it from the model's Bash); `cancel` is the model's: stopping never
/// completes anything, and only a person lifts it.
pub const VERBS: &[(&str, Role)] = &[
    ("new", Role::Model),
    ("finish", Role::Model),
    ("statusline", Role::Model),
    ("report", Role::Model),
    ("completions", Role::Model),
    ("notify-run", Role::Model),
    ("snapshot", Role::Model),
    ("tasks count", Role::Model),
    ("tasks lint", Role::Model),
    ("tasks list", Role::Model),
    ("tasks next", Role::Model),
    ("tasks show", Role::Model),
    ("tasks check", Role::Model),
    ("state merge", Role::Model),
    ("state get", Role::Model),
    ("state init", Role::Model),
    ("status", Role::Model),
    ("hook", Role::Model),
    ("verify run", Role::Model),
    ("verify status", Role::Model),
    ("critique record", Role::Model),
    ("critique skeleton", Role::Model),
    ("critique status", Role::Model),
    ("goal", Role::Model),
    ("last-mile", Role::Model),
    ("doctor", Role::Model),
    ("task start", Role::Model),
    ("task complete", Role::Model),
    ("task fail", Role::Model),
    ("task justify", Role::Person),
    ("task rollback", Role::Model),
    ("ac list", Role::Model),
    ("ac map", Role::Model),
    ("ac propose", Role::Model),
    ("ac confirm", Role::Person),
    ("ac status", Role::Model),
    ("followup add", Role::Model),
    ("followup list", Role::Model),
    ("followup resolve", Role::Model),
    ("learn", Role::Model),
    ("resume", Role::Person),
    ("cancel", Role::Model),
    ("group merge", Role::Model),
    ("plan show", Role::Model),
    ("plan accept", Role::Person),
    ("headless run", Role::Person),
    ("headless export", Role::Person),
    ("headless import", Role::Person),
    ("headless merge", Role::Person),
    ("headless pr", Role::Person),
    ("waves", Role::Model),
];

/// The role of `verb` (`"ac confirm"`); `None` for a verb not in `VERBS`.
pub fn role(verb: &str) -> Option<Role> {
    VERBS.iter().find(|(v, _)| *v == verb).map(|(_, r)| *r)
}

/// A person's decision, in words (never its command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    ConfirmCriterion,
    JustifyFinding,
    ResolveBlocking,
    Restart,
    ReplaceState,
    RaiseCap,
    ClearHalt,
    AcceptOther,
    AcceptPlan,
    AcceptMissingTest,
    SkipRedGreen,
    DefaultVerify,
    RunHeadless,
    Deliver,
}

impl Decision {
    fn words(self) -> &'static str {
        match self {
            Decision::ConfirmCriterion => "confirming a criterion by hand",
            Decision::JustifyFinding => "waiving an integrity finding of a task's change",
            Decision::ResolveBlocking => "resolving a blocking (VERIFY/high) follow-up",
            Decision::Restart => "restarting an execution (its counters and caps start over)",
            Decision::ReplaceState => "replacing an existing state file",
            Decision::RaiseCap => "raising a cap above its default or its current value",
            Decision::ClearHalt => "clearing a halt or a cancel, or raising a cap",
            Decision::AcceptOther => {
                "counting a command other than the task's Verify as its evidence"
            }
            Decision::AcceptPlan => "making tasks.md as it stands the frozen plan",
            Decision::AcceptMissingTest => {
                "accepting that a test the final check ran before the first task no longer runs"
            }
            Decision::SkipRedGreen => {
                "starting an execution whose criteria are not shown red before the change"
            }
            Decision::RunHeadless => "starting an unattended run of a spec (a person's or CI's)",
            Decision::Deliver => {
                "merging CI jobs' work into a branch or opening its pull request (a person's or CI's)"
            }
            Decision::DefaultVerify => {
                "choosing the Verify of a spec's tasks that have none (what shows each done)"
            }
        }
    }

    /// What the model may do instead, beside the shared three.
    fn model_instead(self) -> Option<&'static str> {
        match self {
            Decision::ConfirmCriterion => Some(
                "propose it for a person with `specrun ac propose <id> --reason \"<how you checked it>\"` (it counts once a person confirms), or map it to a test with `specrun ac map`",
            ),
            Decision::JustifyFinding => Some("undo the change the finding names"),
            Decision::AcceptOther => Some("run the task's own Verify: `specrun verify run --task <id>`"),
            Decision::AcceptPlan => Some("put tasks.md back as frozen (`specrun plan show` prints it)"),
            Decision::AcceptMissingTest => Some("make the test run again and run the final check (`specrun verify run --final`)"),
            Decision::SkipRedGreen => Some("run `specrun state init` with the red-before check on (the default)"),
            _ => None,
        }
    }
}

/// What the model reads where a person's decision is needed: never the person's command.
pub const PERSON_DECIDES: &str =
    "a person decides at a shell (`specrun status` there names the command)";

/// The one refusal of a person's decision inside Claude Code (exit 1): what was refused,
/// in words, and the model's legal next steps.
pub fn refuse_person(decision: Decision) -> Error {
    let extra = decision
        .model_instead()
        .map(|s| format!("{s}; "))
        .unwrap_or_default();
    Error::PersonsDecision {
        message: format!(
            "refused inside Claude Code: {} is a person's decision. What you may do: {extra}fail the task (`specrun task fail <id> --reason \"<what is missing>\"`), record a follow-up (`specrun followup add --category VERIFY --priority high --title \"<what a person must decide>\"`), or end your turn; {PERSON_DECIDES}",
            decision.words()
        ),
    }
}

/// `Err(refuse_person(decision))` inside Claude Code, `Ok(())` at a shell.
pub fn person_only(decision: Decision) -> Result<(), Error> {
    if crate::claude::releases::inside() {
        Err(refuse_person(decision))
    } else {
        Ok(())
    }
}

/// `command` for a person at a shell; inside Claude Code `PERSON_DECIDES` instead, so a
/// message the model reads never hands it a person's command.
pub fn for_person(command: &str) -> String {
    if crate::claude::releases::inside() {
        PERSON_DECIDES.to_string()
    } else {
        format!("a person runs `{command}`")
    }
}

/// A person's command as a surface shows it: the command at a shell, `PERSON_DECIDES`
/// inside Claude Code (where a step field would otherwise hand it to the model).
pub fn person_command(command: String) -> String {
    if crate::claude::releases::inside() {
        PERSON_DECIDES.to_string()
    } else {
        command
    }
}

/// Words and flags of a person's command line: a message the model may read holds none.
pub const PERSON_MARKERS: &[&str] = &[
    "ac confirm",
    "task justify",
    "specrun resume",
    "--raise-",
    "--restart",
    "--accept-other",
    "--default-verify",
    "plan accept",
    "--missing-test",
    "--no-red-green",
    "headless run",
    "headless merge",
    "headless pr",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_models_steps_and_no_persons_command() {
        for d in [
            Decision::ConfirmCriterion,
            Decision::JustifyFinding,
            Decision::ResolveBlocking,
            Decision::Restart,
            Decision::ReplaceState,
            Decision::RaiseCap,
            Decision::ClearHalt,
            Decision::AcceptOther,
            Decision::SkipRedGreen,
            Decision::DefaultVerify,
            Decision::RunHeadless,
            Decision::Deliver,
        ] {
            let text = refuse_person(d).to_string();
            for step in [
                "specrun task fail",
                "specrun followup add",
                "end your turn",
                "a person decides at a shell",
            ] {
                assert!(text.contains(step), "{d:?}: {text}");
            }
            for marker in PERSON_MARKERS {
                assert!(!text.contains(marker), "{d:?} names {marker}: {text}");
            }
        }
        assert_eq!(role("ac confirm"), Some(Role::Person));
        assert_eq!(role("resume"), Some(Role::Person));
        assert_eq!(role("task complete"), Some(Role::Model));
        assert_eq!(role("nope"), None);
    }
}
