//! `lossproof lsp` over the real protocol: JSON-RPC with Content-Length framing on the
//! child's stdin and stdout, every read bounded by a timeout.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use lossproof_lang::{Parser, format};
use serde_json::{Value, json};

use crate::support::root;

/// The longest any one message may take to arrive.
const TIMEOUT: Duration = Duration::from_secs(20);

/// A running `lossproof lsp`, killed when dropped (so a failing test never leaves it behind).
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    /// Notifications that arrived while waiting for something else.
    pending: Vec<Value>,
    next_id: i64,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Read framed messages from the server until its stdout closes.
fn read_messages(stdout: ChildStdout, tx: &Sender<Value>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let Some(length) = length else { return };
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let value = serde_json::from_slice(&body).expect("the server sends JSON");
        if tx.send(value).is_err() {
            return;
        }
    }
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lossproof"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start lossproof lsp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || read_messages(stdout, &tx));
        Server {
            stdin: child.stdin.take(),
            child,
            messages,
            pending: Vec::new(),
            next_id: 0,
        }
    }

    fn send(&mut self, message: &Value) {
        let body = message.to_string();
        let stdin = self.stdin.as_mut().expect("stdin is open");
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write to the server");
        stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        let mut message = json!({ "jsonrpc": "2.0", "method": method });
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(&message);
    }

    fn recv(&mut self) -> Value {
        match self.messages.recv_timeout(TIMEOUT) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("no message from the server in {TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its stdout"),
        }
    }

    /// Send a request and return its result.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(&message);
        loop {
            let message = self.recv();
            if message.get("method").is_none() && message["id"] == id {
                assert!(message.get("error").is_none(), "{method} failed: {message}");
                return message["result"].clone();
            }
            self.pending.push(message);
        }
    }

    /// The next diagnostics published for `uri`.
    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let wanted = |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        };
        let message = match self.pending.iter().position(wanted) {
            Some(i) => self.pending.remove(i),
            None => loop {
                let message = self.recv();
                if wanted(&message) {
                    break message;
                }
                self.pending.push(message);
            },
        };
        message["params"]["diagnostics"]
            .as_array()
            .expect("a list of diagnostics")
            .clone()
    }

    fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "lossproof", "version": 1, "text": text } }),
        );
        self.diagnostics(uri)
    }

    /// Wait for the server to exit by itself.
    fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the server") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit in {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `file://` URI of a path, percent-encoding what a URI path cannot hold.
fn uri(path: &Path) -> String {
    let mut out = String::from("file://");
    for byte in path.display().to_string().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// LSP position of a byte offset, computed here independently of the server: zero-based line,
/// UTF-16 code units into the line.
fn position(text: &str, offset: usize) -> Value {
    let before = &text[..offset];
    let line = before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let character: usize = before[line_start..].chars().map(char::len_utf16).sum();
    json!({ "line": line, "character": character })
}

/// What `lossproof check` reports for `text` as file `path`: each diagnostic's code and range.
fn expected(path: &Path, text: &str) -> Vec<(String, Value)> {
    let analysis = crate::support::check_text(path, text);
    assert!(!analysis.diagnostics.is_empty());
    analysis
        .diagnostics
        .iter()
        .map(|d| {
            assert_eq!(d.span.source, 0, "{d:?}");
            let range = json!({
                "start": position(text, d.span.start),
                "end": position(text, d.span.end),
            });
            (d.code.as_str().to_owned(), range)
        })
        .collect()
}

fn codes_and_ranges(diagnostics: &[Value]) -> Vec<(String, Value)> {
    diagnostics
        .iter()
        .map(|d| {
            assert_eq!(d["source"], "lossproof");
            (
                d["code"].as_str().expect("a string code").to_owned(),
                d["range"].clone(),
            )
        })
        .collect()
}

fn labels(completion: &Value) -> Vec<&str> {
    completion
        .as_array()
        .or_else(|| completion["items"].as_array())
        .expect("completion items")
        .iter()
        .map(|item| item["label"].as_str().expect("label"))
        .collect()
}

#[test]
#[allow(clippy::too_many_lines)] // One protocol session, step by step.
fn language_server_session_over_stdio() {
    let mut server = Server::start(&["lsp"]);
    let init = server.request(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
    );
    let capabilities = &init["capabilities"];
    assert_eq!(capabilities["documentFormattingProvider"], true);
    assert_eq!(capabilities["hoverProvider"], true);
    assert!(capabilities["completionProvider"].is_object());
    assert_eq!(capabilities["textDocumentSync"]["change"], 1); // full text
    server.notify("initialized", json!({}));

    // Diagnostics: what `lossproof check` reports, code for code and range for range.
    let err = root().join("tests/inputs/err");
    let one = err.join("05-unknown-target.lp");
    let one_text = std::fs::read_to_string(&one).expect("read input");
    let got = server.open(&uri(&one), &one_text);
    assert_eq!(codes_and_ranges(&got), expected(&one, &one_text));
    assert_eq!(got[0]["severity"], 1);
    assert_eq!(
        got[0]["message"],
        "unknown target `conusmer`\nhelp: did you mean `consumer`?"
    );

    let many = err.join("39-many-errors.lp");
    let many_text = std::fs::read_to_string(&many).expect("read input");
    let got = server.open(&uri(&many), &many_text);
    assert!(got.len() >= 4, "{got:?}");
    assert_eq!(codes_and_ranges(&got), expected(&many, &many_text));

    // The whole check, not the analyser alone: a declared consumer's program that cannot be
    // found is reported as `lossproof check` reports it.
    // (Not among the snapshot inputs: its help names the folder it looked in.)
    let missing = root().join("tests/inputs/check/program-not-found.lp");
    let missing_text = std::fs::read_to_string(&missing).expect("read input");
    let got = server.open(&uri(&missing), &missing_text);
    assert_eq!(codes_and_ranges(&got), expected(&missing, &missing_text));
    assert_eq!(got[0]["code"], "lp::check::command-not-found", "{got:?}");

    // Columns count UTF-16 code units: `𝄞` is two, `é` and `±` one each.
    let unicode = err.join("unicode-not-on-disk.lp");
    let unicode_text = "scenario \"𝄞 é±\"; under load 30s < kill conusmer every 2s >\n";
    let got = server.open(&uri(&unicode), unicode_text);
    assert_eq!(codes_and_ranges(&got), expected(&unicode, unicode_text));
    assert_eq!(got[0]["range"]["start"]["character"], 40);

    // A problem inside an included file is shown on the `include` line that brought it in,
    // pointing to where it is in that file.
    let include = err.join("43-include-content.lp");
    let include_text = std::fs::read_to_string(&include).expect("read input");
    let got = server.open(&uri(&include), &include_text);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["code"], "lp::check::include-content");
    let path_at = include_text
        .find("\"../lib/phase.lp\"")
        .expect("include path");
    assert_eq!(got[0]["range"]["start"], position(&include_text, path_at));
    let related = &got[0]["relatedInformation"][0]["location"];
    assert_eq!(
        related["uri"],
        uri(&root().join("tests/inputs/lib/phase.lp"))
    );
    assert_eq!(
        related["range"]["start"],
        json!({ "line": 1, "character": 0 })
    );

    // Assertion SQL is planned against the reconciler's tables, as `check` does.
    let unplanned = root().join("tests/inputs/plan/unknown-table.lp");
    let unplanned_text = std::fs::read_to_string(&unplanned).expect("read input");
    let got = server.open(&uri(&unplanned), &unplanned_text);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["code"], "lp::check::sql-does-not-plan", "{got:?}");
    assert_eq!(
        got[0]["range"]["start"]["line"], 5,
        "line 6 of the file: {got:?}"
    );

    // Fixing the text clears the diagnostics; closing a document clears its own.
    let fixed = "scenario fixed\nunder load 30s <\n  kill consumer every 2s\n  \n>\nexpect consumer correct clean\n";
    server.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": uri(&many), "version": 2 },
            "contentChanges": [{ "text": fixed }],
        }),
    );
    assert_eq!(server.diagnostics(&uri(&many)), Vec::<Value>::new());
    server.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": uri(&one) } }),
    );
    assert_eq!(server.diagnostics(&uri(&one)), Vec::<Value>::new());

    // Formatting: one edit to the canonical text.
    let messy_path = err.join("messy-not-on-disk.lp");
    let messy = "scenario   messy\nunder load 30s <kill consumer every 2s+-500ms;   pause broker at 5s>\n\n\n\nexpect consumer correct    clean";
    let parsed = Parser::parse(messy, 0);
    assert!(!parsed.has_errors());
    let canonical = format(&parsed.file, messy);
    assert_ne!(canonical, messy);
    assert!(server.open(&uri(&messy_path), messy).is_empty());
    let edits = server.request(
        "textDocument/formatting",
        json!({
            "textDocument": { "uri": uri(&messy_path) },
            "options": { "tabSize": 2, "insertSpaces": true },
        }),
    );
    assert_eq!(edits.as_array().map(Vec::len), Some(1), "{edits}");
    assert_eq!(edits[0]["newText"], canonical.as_str());
    assert_eq!(
        edits[0]["range"],
        json!({ "start": { "line": 0, "character": 0 }, "end": position(messy, messy.len()) })
    );

    // Completion: on an empty line of a block, every word; after a fault's words, what fits.
    let completion = server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": uri(&many) }, "position": { "line": 3, "character": 2 } }),
    );
    let offered = labels(&completion);
    assert!(offered.contains(&"kill"), "{offered:?}");
    assert!(offered.contains(&"consumer"), "{offered:?}");
    let kill = completion
        .as_array()
        .expect("items")
        .iter()
        .find(|item| item["label"] == "kill")
        .expect("kill");
    assert_eq!(kill["detail"], "kill TARGET");
    let widen = "under load 30s < alter table orders widen  >\n";
    let widen_path = err.join("widen-not-on-disk.lp");
    server.open(&uri(&widen_path), widen);
    let after_widen = widen.find("widen ").expect("widen") + "widen ".len();
    let completion = server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": uri(&widen_path) }, "position": position(widen, after_widen) }),
    );
    assert_eq!(labels(&completion), ["amount", "quantity"]);

    // A consumer declaration: a clause's choices after its keyword, the
    // clauses not given yet otherwise, and each clause word explained.
    let own = "consumer mysink command \"python3 sink.py\" reads \nunder load 30s < >\n";
    let own_path = err.join("own-not-on-disk.lp");
    server.open(&uri(&own_path), own);
    let after_reads = own.find("reads ").expect("reads") + "reads ".len();
    let completion = server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": uri(&own_path) }, "position": position(own, after_reads) }),
    );
    assert_eq!(labels(&completion), ["topics", "source"]);
    let after_command = own.find("\" ").expect("string end") + 2;
    let completion = server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": uri(&own_path) }, "position": position(own, after_command) }),
    );
    assert_eq!(labels(&completion), ["offsets", "reads", "lake"]);
    let hover = server.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri(&own_path) }, "position": position(own, after_reads - 3) }),
    );
    let shown = hover["contents"]["value"].as_str().expect("markdown");
    assert!(shown.contains("reads source"), "{shown}");

    // A table declaration: types after a column's name, the tables declared
    // after `references`, its words explained; a fault sees its columns.
    let shop = "table accounts <\n  id bigint primary key\n  profile \n>\ntable notes <\n  id bigint primary key\n  account bigint references \n  body text large\n>\n";
    let shop_path = err.join("shop-not-on-disk.lp");
    server.open(&uri(&shop_path), shop);
    let mut complete_at = |offset: usize| {
        server.request(
            "textDocument/completion",
            json!({ "textDocument": { "uri": uri(&shop_path) }, "position": position(shop, offset) }),
        )
    };
    let after_profile = shop.find("profile ").expect("profile") + "profile ".len();
    let completion = complete_at(after_profile);
    let types = labels(&completion);
    assert!(
        types.contains(&"jsonb") && types.contains(&"numeric"),
        "{types:?}"
    );
    let after_references = shop.find("references ").expect("references") + "references ".len();
    assert_eq!(
        labels(&complete_at(after_references)),
        ["accounts", "notes"]
    );
    let whole = "table notes <\n  id bigint primary key\n  n integer\n  body text large\n>\nworkload docs \nunder load 30s <\n  alter table notes widen \n>\n";
    let whole_path = err.join("whole-not-on-disk.lp");
    server.open(&uri(&whole_path), whole);
    let after_widen = whole.find("widen ").expect("widen") + "widen ".len();
    let completion = server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": uri(&whole_path) }, "position": position(whole, after_widen) }),
    );
    assert_eq!(labels(&completion), ["n"]);
    let after_workload = whole.find("workload docs ").expect("workload") + "workload docs ".len();
    let completion = server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": uri(&whole_path) }, "position": position(whole, after_workload) }),
    );
    assert_eq!(labels(&completion), ["rate", "connections", "rows", "mix"]);
    let hover = server.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri(&shop_path) }, "position": position(shop, shop.find("large").unwrap() + 1) }),
    );
    let shown = hover["contents"]["value"].as_str().expect("markdown");
    assert!(shown.contains("TOAST"), "{shown}");

    // Hover on a fault: its usage and what it does.
    let hover = server.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri(&many) }, "position": { "line": 2, "character": 3 } }),
    );
    let shown = hover["contents"]["value"].as_str().expect("markdown");
    assert!(shown.contains("kill TARGET"), "{shown}");
    assert!(shown.contains("SIGKILL"), "{shown}");
    assert_eq!(
        hover["range"],
        json!({ "start": { "line": 2, "character": 2 }, "end": { "line": 2, "character": 6 } })
    );

    // Shutdown, then exit: the server ends by itself, successfully.
    assert_eq!(server.request("shutdown", Value::Null), Value::Null);
    server.notify("exit", Value::Null);
    let status = server.wait(Duration::from_secs(5));
    assert!(status.success(), "{status}");
}

/// VS Code's client adds `--stdio`; the server also ends when its input does.
#[test]
fn language_server_exits_at_end_of_input() {
    let mut server = Server::start(&["lsp", "--stdio"]);
    drop(server.stdin.take());
    let status = server.wait(Duration::from_secs(5));
    assert!(status.success(), "{status}");
}
