//! [`Message`]: what a consumer tells the executor, as JSON lines in a file
//! the executor names (`--messages FILE`), beside its log for people. The
//! executor decides on these (a consumer that stopped on purpose, commits
//! the lake refused), never on log text.

use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// One message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "message", rename_all = "snake_case")]
pub enum Message {
    /// It stopped on purpose, on a change it must not guess at (exit 3):
    /// the seed is FAIL with this reason.
    Fatal { reason: String },
    /// The lake's base check refused one of its commits (another commit
    /// won the race, or a file it rewrote is gone), as the lake said it.
    Conflict { error: String },
}

/// Where a consumer writes its messages: a file, or nowhere (a consumer run
/// in a test or a benchmark). Cheap to clone; lines are written whole.
#[derive(Debug, Clone, Default)]
pub struct Messages(Option<Arc<Mutex<std::fs::File>>>);

impl Messages {
    /// Append to `file` (created if missing).
    ///
    /// # Errors
    /// When the file cannot be opened.
    pub fn to_file(file: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)?;
        Ok(Self(Some(Arc::new(Mutex::new(file)))))
    }

    /// Messages go nowhere.
    #[must_use]
    pub fn none() -> Self {
        Self(None)
    }

    /// Write one message. A message that cannot be written is lost with a
    /// line on stderr: the consumer's work goes on.
    ///
    /// # Panics
    /// Never: a message is plain data and always serialises.
    pub fn send(&self, message: &Message) {
        let Some(file) = &self.0 else { return };
        let mut line = serde_json::to_string(message).expect("a message is plain data");
        line.push('\n');
        let mut file = file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = file.write_all(line.as_bytes()) {
            eprintln!("cannot write a message for the executor: {e}");
        }
    }

    /// Every message in `file`, in order; none when it does not exist. A
    /// line that is not a message (a consumer killed mid-line) is skipped.
    #[must_use]
    pub fn read(file: &Path) -> Vec<Message> {
        let Ok(text) = std::fs::read_to_string(file) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_their_file() {
        let dir = std::env::temp_dir().join(format!("lp-messages-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.jsonl");
        let _ = std::fs::remove_file(&file);
        let messages = Messages::to_file(&file).unwrap();
        let sent = [
            Message::Conflict {
                error: "commit conflict on orders".into(),
            },
            Message::Fatal {
                reason: "schema change refused".into(),
            },
        ];
        for m in &sent {
            messages.clone().send(m);
        }
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(b"{\"message\":\"fat")
            .unwrap();
        assert_eq!(Messages::read(&file), sent);
        assert!(Messages::read(&dir.join("none.jsonl")).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
