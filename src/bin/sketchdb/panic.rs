//! The panic hook: a panic's text never reaches the terminal by itself.
//!
//! The library catches the storage engine's panics on damaged files and returns them as
//! typed errors; Rust's default hook would still print the engine's message ("internal error:
//! entered unreachable code") before the catch. This hook prints nothing unless `--verbose`
//! asked for the detail, and keeps the last message so that a panic nothing caught (a bug)
//! ends as one clean error line naming it.

use std::sync::Mutex;

/// The text of the last panic (message and location).
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the default hook. With `verbose`, each panic's message and location go to stderr
/// as one `sketchdb: detail:` line, caught or not.
pub fn install(verbose: bool) {
    std::panic::set_hook(Box::new(move |info| {
        let text = info.to_string().replace('\n', " ");
        if verbose {
            eprintln!("sketchdb: detail: {text}");
        }
        if let Ok(mut last) = LAST.lock() {
            *last = Some(text);
        }
    }));
}

/// What a panic that reached `main` says: the payload's message, else the hook's last text.
pub fn describe(payload: &(dyn std::any::Any + Send)) -> String {
    let message =
        payload.downcast_ref::<&str>().map(|s| (*s).to_string()).or_else(|| payload.downcast_ref::<String>().cloned());
    let last = LAST.lock().ok().and_then(|l| l.clone());
    match (message, last) {
        (_, Some(text)) => text,
        (Some(m), None) => m,
        (None, None) => "a panic without a message".to_string(),
    }
}
