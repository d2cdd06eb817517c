//! The tools' output: stdout, and a reader that went away.

use std::io::Write;

/// Writes `text` to stdout. A reader that went away (`tacos routes | head`)
/// is an error of kind `BrokenPipe`, which `main` treats as a quiet end
/// (`println!` would panic).
pub fn print_out(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Whether an operator tool's error is only that stdout's reader went away.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
