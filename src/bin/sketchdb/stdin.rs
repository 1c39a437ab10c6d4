//! Who reads standard input. The shell reads its commands from it, so a command run inside
//! the shell that names `-` as an input would read the shell's own lines (or wait on the
//! terminal); every place that opens standard input asks [`claim`] first.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::CliError;

static HELD_BY_SHELL: AtomicBool = AtomicBool::new(false);

/// From now on standard input carries the shell's commands.
pub fn held_by_shell() {
    HELD_BY_SHELL.store(true, Ordering::Relaxed);
}

/// Ok when `what` (the option or argument naming `-`) may read standard input: a usage
/// error inside the shell.
pub fn claim(what: &str) -> Result<(), CliError> {
    if HELD_BY_SHELL.load(Ordering::Relaxed) {
        return Err(CliError::Usage(format!(
            "{what} `-` would read standard input, which carries the shell's own commands: give a file, \
             or run the command outside the shell (`sketchdb --db FILE ... -`)"
        )));
    }
    Ok(())
}
