//! Which programs a verify command runs (pure): the command's words through a shell-word
//! reader, split into simple commands, each past its wrappers (`env`, `timeout`, `npx`,
//! `uv run`, `sh -c '…'`, a package manager's script), down to the program that does the
//! work. Only a run whose program is a test runner yields test results (a `printf` of
//! runner-shaped lines is not a test run), and a claim ("clippy is clean") needs a run of
//! that program. DESIGN-NOTES "A run is genuine" gives the rules.

use std::collections::BTreeSet;

use crate::evidence::testlog::Runner;

/// How deep `sh -c` and package scripts are followed.
const MAX_DEPTH: usize = 4;

/// One program the command runs: its name (the last path part) and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invocation {
    pub program: String,
    pub args: Vec<String>,
}

impl Invocation {
    /// The first argument that is not an option (a subcommand: `cargo test`, `go vet`).
    pub(crate) fn subcommand(&self) -> Option<&str> {
        let mut skip_next = false;
        for a in &self.args {
            if skip_next {
                skip_next = false;
                continue;
            }
            if a.starts_with('+') {
                continue;
            }
            if a.starts_with('-') {
                // Options of cargo and go that take a value as the next word.
                skip_next = matches!(
                    a.as_str(),
                    "--manifest-path" | "--config" | "-Z" | "-C" | "--color"
                );
                continue;
            }
            return Some(a);
        }
        None
    }

    /// `program` or `program subcommand`, as a claim names it (`cargo clippy`, `ruff`).
    pub(crate) fn name(&self) -> String {
        match self.subcommand() {
            Some(s) if SUBCOMMANDED.contains(&self.program.as_str()) => {
                format!("{} {s}", self.program)
            }
            _ => self.program.clone(),
        }
    }
}

/// Programs whose work is named by their subcommand.
const SUBCOMMANDED: &[&str] = &[
    "cargo", "go", "npm", "pnpm", "yarn", "bun", "make", "just", "task", "dotnet", "mvn", "gradle",
    "poetry", "uv",
];

/// The simple commands of a shell line, each as its words: quotes (`'…'`, `"…"`, `\`) are
/// read as `sh` reads them; `;`, `&`, `|`, `&&`, `||`, newlines, `(`, `)`, `` ` `` and `$(`
/// separate commands; redirections and their targets are dropped. Not a full grammar:
/// what it cannot read (a variable as the program) names no known program.
pub(crate) fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let end_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                if !matches!(n, '"' | '\\' | '$' | '`') {
                                    word.push('\\');
                                }
                                word.push(n);
                            }
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    if n != '\n' {
                        word.push(n);
                    }
                }
            }
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                end_word(&mut word, &mut in_word, &mut words);
                out.push(std::mem::take(&mut words));
            }
            // `2>&1`, `<&3`: a descriptor duplicated, not a separator.
            '&' if word.ends_with(['>', '<']) => word.push('&'),
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' => {
                end_word(&mut word, &mut in_word, &mut words);
                out.push(std::mem::take(&mut words));
            }
            c if c.is_whitespace() => end_word(&mut word, &mut in_word, &mut words),
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for q in chars.by_ref() {
                    if q == '\n' {
                        break;
                    }
                }
                out.push(std::mem::take(&mut words));
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut words);
    out.push(words);
    out.into_iter()
        .map(drop_redirections)
        .filter(|w| !w.is_empty())
        .collect()
}

/// The words without redirections (`>f`, `2>&1`, `< in`, `> out`).
fn drop_redirections(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut target_next = false;
    for w in words {
        if target_next {
            target_next = false;
            continue;
        }
        let op = w.trim_start_matches(|c: char| c.is_ascii_digit());
        if op.starts_with('>') || op.starts_with('<') {
            let target = op.trim_start_matches(['>', '<', '&']);
            target_next = target.is_empty() && !op.ends_with('&');
            continue;
        }
        out.push(w);
    }
    out
}

/// The programs `command` runs, past wrappers; `script` gives a package script's text
/// (`npm test` → package.json's `scripts.test`), `None` when there is none.
pub(crate) fn invocations(
    command: &str,
    script: &dyn Fn(&str) -> Option<String>,
) -> Vec<Invocation> {
    let mut out = Vec::new();
    collect(command, script, 0, &mut out);
    out
}

fn collect(
    command: &str,
    script: &dyn Fn(&str) -> Option<String>,
    depth: usize,
    out: &mut Vec<Invocation>,
) {
    for words in simple_commands(command) {
        let Some(inv) = unwrap(&words) else { continue };
        if depth < MAX_DEPTH {
            if let Some(inner) = shell_string(&inv) {
                collect(&inner, script, depth + 1, out);
                continue;
            }
            if let Some(text) = package_script(&inv).and_then(|name| script(&name)) {
                out.push(inv);
                collect(&text, script, depth + 1, out);
                continue;
            }
        }
        out.push(inv);
    }
}

/// The test runners among the programs `command` runs.
pub(crate) fn runners(command: &str, script: &dyn Fn(&str) -> Option<String>) -> BTreeSet<Runner> {
    invocations(command, script)
        .iter()
        .filter_map(runner_of)
        .collect()
}

/// The test runner an invocation is, if any.
pub(crate) fn runner_of(inv: &Invocation) -> Option<Runner> {
    let has = |w: &str| inv.args.iter().any(|a| a == w);
    match inv.program.as_str() {
        "cargo" => match inv.subcommand()? {
            "test" | "t" => Some(Runner::Cargo),
            "nextest" => Some(Runner::Nextest),
            _ => None,
        },
        "cargo-nextest" => Some(Runner::Nextest),
        "pytest" | "py.test" => Some(Runner::Pytest),
        p if is_python(p) => {
            let at = inv.args.iter().position(|a| a == "-m")?;
            (inv.args.get(at + 1).map(String::as_str) == Some("pytest")).then_some(Runner::Pytest)
        }
        "go" => (inv.subcommand()? == "test").then_some(Runner::GoTest),
        "jest" => Some(Runner::Jest),
        "vitest" => Some(Runner::Vitest),
        "node" | "nodejs" => (has("--test") || inv.args.iter().any(|a| a.starts_with("--test=")))
            .then_some(Runner::NodeTest),
        _ => None,
    }
}

fn is_python(program: &str) -> bool {
    let rest = program.strip_prefix("python").unwrap_or("-");
    rest.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// The words of one simple command past assignments, keywords and wrappers.
fn unwrap(words: &[String]) -> Option<Invocation> {
    let mut i = 0;
    loop {
        let w = words.get(i)?;
        if is_assignment(w) || matches!(w.as_str(), "!" | "{" | "}" | "then" | "do" | "else") {
            i += 1;
            continue;
        }
        let name = w.rsplit('/').next().unwrap_or(w);
        let rest = &words[i + 1..];
        let skipped = match name {
            "env" => options(rest, &["-u", "--unset", "-C", "--chdir", "-S"], true),
            "timeout" => options(rest, &["-s", "--signal", "-k", "--kill-after"], false) + 1,
            "nice" => options(rest, &["-n", "--adjustment"], false),
            "stdbuf" => options(rest, &["-i", "-o", "-e"], false),
            "nohup" | "time" | "command" | "exec" | "builtin" => options(rest, &[], false),
            "npx" | "pnpx" | "bunx" => options(rest, &["-p", "--package", "-c", "--call"], false),
            "uv" | "poetry" | "pipenv" | "hatch" | "pdm" | "rye"
                if rest.first().map(String::as_str) == Some("run") =>
            {
                1 + options(
                    &rest[1..],
                    &["--with", "-p", "--python", "--env", "-e"],
                    false,
                )
            }
            "pnpm" | "yarn" | "npm" if rest.first().map(String::as_str) == Some("exec") => {
                1 + options(&rest[1..], &["-c", "--package"], false)
            }
            _ => {
                return Some(Invocation {
                    program: name.to_string(),
                    args: rest.to_vec(),
                })
            }
        };
        i += 1 + skipped;
    }
}

/// How many leading words of `rest` are options (with their values, for `valued`) and, for
/// `env`, assignments; a `--` ends them.
fn options(rest: &[String], valued: &[&str], assignments: bool) -> usize {
    let mut i = 0;
    while let Some(w) = rest.get(i) {
        if w == "--" {
            return i + 1;
        }
        if w.starts_with('-') && w.len() > 1 {
            i += if valued.contains(&w.as_str()) { 2 } else { 1 };
            continue;
        }
        if assignments && is_assignment(w) {
            i += 1;
            continue;
        }
        break;
    }
    i
}

/// `NAME=value`.
pub(crate) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The variables a command sets for itself (`NAME=v cmd`, `env NAME=v cmd`): a plan that
/// needs `NODE_OPTIONS` writes it into its Verify command, where the record shows it.
pub(crate) fn assigned(command: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for words in simple_commands(command) {
        let mut env = false;
        for w in &words {
            if is_assignment(w) {
                out.insert(w.split_once('=').map_or("", |(n, _)| n).to_string());
            } else if w.rsplit('/').next() == Some("env") {
                env = true;
            } else if !(env && w.starts_with('-')) {
                if w.rsplit('/').next() == Some("export") {
                    continue;
                }
                break;
            }
        }
    }
    out
}

/// The string a shell runs for `sh -c '…'`.
fn shell_string(inv: &Invocation) -> Option<String> {
    if !matches!(inv.program.as_str(), "sh" | "bash" | "dash" | "zsh" | "ksh") {
        return None;
    }
    let at = inv
        .args
        .iter()
        .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))?;
    inv.args.get(at + 1).cloned()
}

/// The name of the project target an invocation runs: a package script (`npm run lint`),
/// or a `make`/`just`/`task` target (`make test`).
pub(crate) fn script_name(inv: &Invocation) -> Option<String> {
    match inv.program.as_str() {
        "make" | "gmake" | "just" | "task" => inv.subcommand().map(str::to_string),
        _ => package_script(inv),
    }
}

/// The package script an invocation runs (`npm test`, `npm run lint`, `yarn build`).
fn package_script(inv: &Invocation) -> Option<String> {
    let sub = inv.subcommand()?;
    let named = || {
        inv.args
            .iter()
            .skip_while(|a| a.as_str() != sub)
            .skip(1)
            .find(|a| !a.starts_with('-'))
            .cloned()
    };
    match (inv.program.as_str(), sub) {
        ("npm" | "pnpm" | "yarn" | "bun", "test" | "t" | "tst") => Some("test".into()),
        ("npm" | "pnpm" | "yarn" | "bun", "run" | "run-script") => named(),
        ("pnpm" | "yarn", s) if !KNOWN_PM_COMMANDS.contains(&s) => Some(s.to_string()),
        _ => None,
    }
}

/// pnpm's and yarn's own commands (any other word is a script's name).
const KNOWN_PM_COMMANDS: &[&str] = &[
    "install", "add", "remove", "up", "upgrade", "why", "list", "ls", "info", "init", "link",
    "publish", "pack", "dlx", "create", "config", "cache", "import", "audit", "outdated",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    fn runs(command: &str) -> Vec<&'static str> {
        runners(command, &none).iter().map(|r| r.as_str()).collect()
    }

    #[test]
    fn words_are_read_as_sh_reads_them() {
        assert_eq!(
            simple_commands(r#"FOO='a b' cargo "te"st 2>&1 | tee "out log"; echo \"x\" # note"#),
            vec![
                vec!["FOO=a b", "cargo", "test"],
                vec!["tee", "out log"],
                vec!["echo", "\"x\""],
            ]
        );
        assert_eq!(
            simple_commands("go test ./... > log.txt && make"),
            vec![vec!["go", "test", "./..."], vec!["make"]]
        );
    }

    #[test]
    fn only_a_runner_is_a_test_run() {
        assert_eq!(runs("cargo test --locked"), ["cargo-test"]);
        assert_eq!(runs("cargo +nightly -q nextest run"), ["nextest"]);
        assert_eq!(
            runs("timeout -s KILL 60 env -u X A=1 pytest -v"),
            ["pytest"]
        );
        assert_eq!(runs("python3 -m pytest -rA tests"), ["pytest"]);
        assert_eq!(runs("uv run pytest"), ["pytest"]);
        assert_eq!(runs("npx --yes jest --verbose"), ["jest"]);
        assert_eq!(runs("npx vitest run --reporter=verbose"), ["vitest"]);
        assert_eq!(runs("/usr/bin/node --test"), ["node-test"]);
        assert_eq!(runs("sh -c 'cd lib && go test -v ./...'"), ["go-test"]);
        assert_eq!(runs("cargo build && cargo test"), ["cargo-test"]);
        for fake in [
            "printf 'ok 1 - sub basic\\n'",
            "echo 'test result: ok. 3 passed'",
            "cat log.txt",
            "echo cargo test",
            "node script.js --testing",
            "python -c 'print(1)'",
            "$RUNNER test",
            "cargo clippy",
            "go vet ./...",
        ] {
            assert!(runs(fake).is_empty(), "{fake}: {:?}", runs(fake));
        }
    }

    #[test]
    fn a_package_script_is_followed_to_its_program() {
        let scripts = |name: &str| match name {
            "test" => Some("node --test".to_string()),
            "lint" => Some("eslint .".to_string()),
            "fake" => Some("echo 'ok 1 - x'".to_string()),
            _ => None,
        };
        let r = |c: &str| runners(c, &scripts).len();
        assert_eq!(r("npm test"), 1);
        assert_eq!(r("npm run test -- --x"), 1);
        assert_eq!(r("yarn test"), 1);
        assert_eq!(r("npm run fake"), 0);
        assert_eq!(r("npm run missing"), 0);
        let names: Vec<String> = invocations("npm run lint", &scripts)
            .iter()
            .map(Invocation::name)
            .collect();
        assert_eq!(names, ["npm run", "eslint"]);
        // A script that runs itself ends.
        let looping = |_: &str| Some("npm test".to_string());
        assert!(runners("npm test", &looping).is_empty());
    }

    #[test]
    fn the_variables_a_command_sets_for_itself_are_declared() {
        let a = assigned("NODE_OPTIONS=--x env -i PYTHONPATH=lib pytest; export RUBYOPT=1");
        assert_eq!(
            a.into_iter().collect::<Vec<_>>(),
            ["NODE_OPTIONS", "PYTHONPATH", "RUBYOPT"]
        );
        assert!(assigned("echo NODE_OPTIONS=x").is_empty());
    }
}
