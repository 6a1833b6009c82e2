//! SIGINT and SIGTERM to `lossproof run`: the seed under way stops, is
//! cleaned up and recorded INVALID, and the run ends after it.

/// A run's stop signal, see [`super::Options::interrupt`] and [`interrupt_on_signals`].
pub type Interrupt = tokio::sync::watch::Receiver<Option<&'static str>>;

/// An [`Interrupt`] that turns on SIGINT (Ctrl-C) or SIGTERM. Installing it
/// replaces the default handlers: the process no longer dies on them, the
/// seed under way is stopped and cleaned up instead. Needs a Tokio runtime.
pub fn interrupt_on_signals() -> crate::Result<Interrupt> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, rx) = tokio::sync::watch::channel(None);
    let mut int = signal(SignalKind::interrupt()).map_err(crate::Error::io("SIGINT handler"))?;
    let mut term = signal(SignalKind::terminate()).map_err(crate::Error::io("SIGTERM handler"))?;
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        let _ = tx.send(Some(name));
        // Later signals are absorbed: clean-up is bounded and finishes.
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
    });
    Ok(rx)
}

/// An [`Interrupt`] that never turns on (tests, benches).
#[must_use]
pub fn never_interrupted() -> Interrupt {
    let (tx, rx) = tokio::sync::watch::channel(None);
    std::mem::forget(tx);
    rx
}

/// Resolves with the signal's name once `interrupt` turns on.
pub(super) async fn interrupted(mut interrupt: Interrupt) -> &'static str {
    loop {
        if let Some(name) = *interrupt.borrow_and_update() {
            return name;
        }
        if interrupt.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
