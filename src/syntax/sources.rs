//! The source files of a run besides the program itself (library scripts loaded on first
//! use). Each gets its own range of byte offsets, starting at a multiple of [`FILE_STRIDE`],
//! so a [`crate::syntax::ast::Span`] says which file it is in without a file field; the
//! program's own text keeps the offsets from 0. The registry is process-wide and
//! append-only.

use std::sync::{Arc, Mutex};

/// The offset distance between two registered files (the largest file size).
pub const FILE_STRIDE: usize = 1 << 32;

struct Entry {
    name: String,
    text: Arc<str>,
}

static FILES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// Registers a file's text; returns the offset its spans start at.
pub fn register(name: &str, text: &str) -> usize {
    let mut files = FILES.lock().unwrap_or_else(|e| e.into_inner());
    files.push(Entry {
        name: name.to_string(),
        text: Arc::from(text),
    });
    files.len() * FILE_STRIDE
}

/// The registered file an offset falls in: its name, text and base offset.
pub fn lookup(offset: usize) -> Option<(String, Arc<str>, usize)> {
    let k = offset / FILE_STRIDE;
    if k == 0 {
        return None;
    }
    let files = FILES.lock().unwrap_or_else(|e| e.into_inner());
    files
        .get(k - 1)
        .map(|e| (e.name.clone(), e.text.clone(), k * FILE_STRIDE))
}

static MAIN: Mutex<Option<Arc<str>>> = Mutex::new(None);

thread_local! {
    /// The program of the runs on this thread: several programs run at once in one process
    /// (the test harness's threads) must each see their own text.
    static THREAD_MAIN: std::cell::RefCell<Option<Arc<str>>> = const { std::cell::RefCell::new(None) };
}

/// Records the program's own text (offsets from 0), for messages that point into it from
/// elsewhere: for this thread, and for the process (worker threads of the run read that).
pub fn set_main(text: &str) {
    let text: Arc<str> = Arc::from(text);
    THREAD_MAIN.with(|m| *m.borrow_mut() = Some(text.clone()));
    *MAIN.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
}

/// The program's own text, if recorded: this thread's, else the process's last.
pub fn main_text() -> Option<Arc<str>> {
    THREAD_MAIN
        .with(|m| m.borrow().clone())
        .or_else(|| MAIN.lock().unwrap_or_else(|e| e.into_inner()).clone())
}

/// The source text between two offsets (of the program or of a registered file).
pub fn snippet(start: usize, end: usize) -> Option<String> {
    let (text, base) = if start < FILE_STRIDE {
        (main_text()?, 0)
    } else {
        let (_, text, base) = lookup(start)?;
        (text, base)
    };
    text.get(start.checked_sub(base)?..end.checked_sub(base)?)
        .map(str::to_string)
}
