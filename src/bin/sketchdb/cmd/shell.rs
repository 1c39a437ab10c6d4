//! The interactive shell: `sketchdb DB` with no subcommand. Each line is split like a POSIX
//! shell line and parsed as the same subcommands the command line takes; `.help` lists them,
//! `.quit` (or end of input) leaves. With a terminal, rustyline gives history and completion
//! of command and collection names (`.complete TEXT` prints what tab would offer); piped
//! input is read line by line without prompts. The shell's one database handle is read-only
//! until the first command that writes, so it runs beside a writer process.

use std::io::{BufRead, IsTerminal};

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use crate::error::CliError;
use crate::output::{self, outln};

/// What the shell needs from the command set.
pub trait ShellCommands {
    /// Runs one parsed line (argv without the program name).
    fn execute(&mut self, argv: Vec<String>) -> Result<(), CliError>;
    /// The help text listing the commands.
    fn help(&self) -> String;
    /// Command names, for completion.
    fn command_names(&self) -> Vec<String>;
    /// Collection names, for completion (best effort), read through the shell's own handle.
    fn collection_names(&mut self) -> Vec<String>;
}

/// Where the word being completed starts in `before` (the line up to the cursor), and the
/// candidates: command names for the first word, collection names after it.
fn completions(commands: &[String], collections: &[String], before: &str) -> (usize, Vec<String>) {
    let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let word = &before[start..];
    let pool = if start == 0 { commands } else { collections };
    (start, pool.iter().filter(|c| c.starts_with(word)).cloned().collect())
}

struct ShellHelper {
    commands: Vec<String>,
    collections: Vec<String>,
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, hits) = completions(&self.commands, &self.collections, &line[..pos]);
        Ok((start, hits.into_iter().map(|c| Pair { display: c.clone(), replacement: c }).collect()))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}
impl Highlighter for ShellHelper {}
impl Validator for ShellHelper {}
impl Helper for ShellHelper {}

/// Runs one line; returns false when the shell should stop.
fn run_line(cmds: &mut dyn ShellCommands, line: &str, interactive: bool, line_no: usize) -> Result<bool, CliError> {
    // `.complete` keeps trailing blanks: "query " completes a collection name.
    let untrimmed = line.trim_start();
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(true);
    }
    match line {
        ".quit" | ".exit" => return Ok(false),
        ".help" | "help" => {
            outln!("{}", cmds.help())?;
            return Ok(true);
        }
        _ if line == ".complete" || line.starts_with(".complete ") => {
            // What tab would offer at the end of the text after `.complete `, one per line.
            let text = untrimmed.strip_prefix(".complete").unwrap_or_default().trim_start();
            let (commands, collections) = (cmds.command_names(), cmds.collection_names());
            for c in completions(&commands, &collections, text).1 {
                outln!("{c}")?;
            }
            return Ok(true);
        }
        _ if line.starts_with('.') => {
            return Err(CliError::Usage(format!("unknown dot-command `{line}` (try .help)")));
        }
        _ => {}
    }
    let argv = shlex::split(line).ok_or_else(|| {
        let at = if interactive { String::new() } else { format!("line {line_no}: ") };
        CliError::Usage(format!("{at}unbalanced quotes"))
    })?;
    cmds.execute(argv)?;
    Ok(true)
}

/// Runs the shell until `.quit` or end of input. Errors are printed and the shell goes on;
/// with piped input the exit status is non-zero when any line failed.
pub fn run(cmds: &mut dyn ShellCommands) -> Result<bool, CliError> {
    crate::stdin::held_by_shell();
    let mut failed = false;
    if !std::io::stdin().is_terminal() {
        for (i, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line.map_err(|e| CliError::Input(format!("stdin line {}: {e}", i + 1)))?;
            match run_line(cmds, &line, false, i + 1) {
                Ok(true) => {}
                Ok(false) | Err(CliError::Closed) => break,
                Err(e) => {
                    output::report_error(&e.context(format!("line {}", i + 1)), output::json_mode());
                    failed = true;
                }
            }
        }
        return Ok(!failed);
    }
    let mut editor = rustyline::Editor::<ShellHelper, rustyline::history::DefaultHistory>::new()
        .map_err(|e| CliError::Io(format!("terminal: {e}")))?;
    outln!("sketchdb {} — .help for commands, .quit to leave", env!("CARGO_PKG_VERSION"))?;
    loop {
        editor.set_helper(Some(ShellHelper { commands: cmds.command_names(), collections: cmds.collection_names() }));
        match editor.readline("sketchdb> ") {
            Ok(line) => {
                let _ = editor.add_history_entry(line.as_str());
                match run_line(cmds, &line, true, 0) {
                    Ok(true) => {}
                    Ok(false) | Err(CliError::Closed) => break,
                    Err(e) => {
                        output::report_error(&e, output::json_mode());
                        failed = true;
                    }
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => return Err(CliError::Io(format!("terminal: {e}"))),
        }
    }
    Ok(!failed)
}
