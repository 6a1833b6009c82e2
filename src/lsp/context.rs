//! What surrounds a position in a document: the statement it is in, the word at it, and how far
//! the statement's words follow a fault's or shorthand's pattern. Completion and hover read
//! text that is often half-written and does not parse, so this works on the words of the line.

use lossproof_lang::vocabulary::{ParamKind, PatternPart, Vocabulary};

/// The word at a position and the statement around it.
pub(super) struct Context<'a> {
    /// The statement's words before the word.
    pub before: Vec<&'a str>,
    /// The word: for completion, its part before the position (possibly empty).
    pub word: &'a str,
    /// The word's byte range in the text.
    pub start: usize,
    pub end: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect()
}

impl<'a> Context<'a> {
    /// For completion at `offset`: the word is what is typed before it. `None` in a comment, a
    /// string or a SQL fence.
    pub(super) fn completion(text: &'a str, offset: usize) -> Option<Self> {
        let statement = statement_start(text, offset)?;
        let start = word_start(text, offset);
        Some(Self {
            before: words(&text[statement..start]),
            word: &text[start..offset],
            start,
            end: offset,
        })
    }

    /// For hover at `offset`: the whole word around it. `None` off a word, in a comment, a
    /// string or a SQL fence.
    pub(super) fn hover(text: &'a str, offset: usize) -> Option<Self> {
        let offset = offset.min(text.len());
        if !text.is_char_boundary(offset) {
            return None;
        }
        let start = word_start(text, offset);
        let end = offset
            + text[offset..]
                .find(|c: char| !is_word_char(c))
                .unwrap_or(text.len() - offset);
        if start == end {
            return None;
        }
        let statement = statement_start(text, start)?;
        Some(Self {
            before: words(&text[statement..start]),
            word: &text[start..end],
            start,
            end,
        })
    }

    /// The statement's first word, or the word itself when it is the first.
    pub(super) fn first(&self) -> &'a str {
        self.before.first().copied().unwrap_or(self.word)
    }
}

fn word_start(text: &str, offset: usize) -> usize {
    text[..offset]
        .rfind(|c: char| !is_word_char(c))
        .map_or(0, |i| {
            i + text[i..].chars().next().map_or(1, char::len_utf8)
        })
}

/// Where the statement holding `offset` starts: after the last line break, `;`, `<` or `>` on
/// its line. `None` when `offset` is in a comment, a string or a SQL fence.
fn statement_start(text: &str, offset: usize) -> Option<usize> {
    if text[..offset].matches("```").count() % 2 == 1 {
        return None;
    }
    let line = text[..offset].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let mut start = line;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text[line..offset].char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '#' => return None,
            ';' | '<' | '>' => start = line + i + 1,
            _ => {}
        }
    }
    (!in_string).then_some(start)
}

/// One step of a pattern whose optional groups have been expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    Word(&'static str),
    Param(ParamKind),
}

/// Every way of writing a pattern: each optional group left out or put in.
pub(super) fn alternatives(parts: &[PatternPart]) -> Vec<Vec<Step>> {
    let mut out: Vec<Vec<Step>> = vec![Vec::new()];
    for part in parts {
        match part {
            PatternPart::Literal(word) => {
                for alt in &mut out {
                    alt.push(Step::Word(word));
                }
            }
            PatternPart::Param { kind, .. } => {
                for alt in &mut out {
                    alt.push(Step::Param(*kind));
                }
            }
            PatternPart::Optional(group) => {
                let groups = alternatives(group);
                out = out
                    .iter()
                    .flat_map(|alt| {
                        std::iter::once(alt.clone()).chain(groups.iter().map(move |group| {
                            let mut longer = alt.clone();
                            longer.extend_from_slice(group);
                            longer
                        }))
                    })
                    .collect();
            }
        }
    }
    out
}

/// How far `words` follow one way of writing a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Follow<'w> {
    /// The step that may come next; `None` when the words complete the pattern.
    pub next: Option<Step>,
    /// The table the words named (for a column that follows).
    pub table: Option<&'w str>,
    /// The last word is a target that may be followed by a consumer name (`kill consumer`).
    pub consumer: bool,
}

/// Whether `words` are a beginning of `steps`, and what may follow them. `None` when they
/// differ from the pattern or go past its end.
pub(super) fn follow<'w>(
    steps: &[Step],
    words: &[&'w str],
    vocab: &dyn Vocabulary,
) -> Option<Follow<'w>> {
    let mut table = None;
    let mut consumer = false;
    let mut j = 0;
    for (i, step) in steps.iter().enumerate() {
        let Some(&word) = words.get(j) else {
            return Some(Follow {
                next: Some(steps[i]),
                table,
                consumer,
            });
        };
        match step {
            Step::Word(literal) if *literal != word => return None,
            Step::Param(ParamKind::Table | ParamKind::Topic) => table = Some(word),
            Step::Param(ParamKind::Process | ParamKind::Target)
                if vocab
                    .targets()
                    .iter()
                    .any(|t| t.name == word && t.takes_consumer) =>
            {
                match words.get(j + 1) {
                    Some(next) if vocab.consumers().iter().any(|c| c.name == *next) => j += 1,
                    None => consumer = true,
                    Some(_) => {}
                }
            }
            _ => {}
        }
        j += 1;
    }
    (j == words.len()).then_some(Follow {
        next: None,
        table,
        consumer,
    })
}

#[cfg(test)]
mod tests {
    use lossproof_lang::vocabulary::compile_pattern;
    use lossproof_vocabulary::Stdlib;

    use super::*;

    #[test]
    fn completion_context_is_the_statement_before_the_cursor() {
        let text = "under load 30s < kill consumer every 2s; alter table orders wi";
        let ctx = Context::completion(text, text.len()).unwrap();
        assert_eq!(ctx.before, ["alter", "table", "orders"]);
        assert_eq!(ctx.word, "wi");
        assert_eq!(&text[ctx.start..ctx.end], "wi");

        let text = "  kill consumer ";
        let ctx = Context::completion(text, text.len()).unwrap();
        assert_eq!(ctx.before, ["kill", "consumer"]);
        assert_eq!(ctx.word, "");

        assert!(Context::completion("kill consumer # a comm", 22).is_none());
        assert!(Context::completion("scenario \"a na", 14).is_none());
        let fenced = "assert \"x\" ```sql\nselect ";
        assert!(Context::completion(fenced, fenced.len()).is_none());
    }

    #[test]
    fn hover_context_is_the_whole_word() {
        let text = "scenario \"é\"\nunder load 30s < crash-loop kill consumer careless at 1s >";
        let at = text.find("kill").unwrap() + 2;
        let ctx = Context::hover(text, at).unwrap();
        assert_eq!(ctx.word, "kill");
        assert_eq!(ctx.before, ["crash-loop"]);
        assert!(Context::hover(text, text.find(" <").unwrap() + 1).is_none());
    }

    #[test]
    fn follows_patterns_with_optional_groups() {
        let steps = alternatives(&compile_pattern(
            "redeliver from start [{times:count} times]",
        ));
        assert_eq!(steps.len(), 2);
        let widen = &alternatives(&compile_pattern(
            "alter table {table:table} widen {column:widenable_column}",
        ))[0];
        let next = follow(widen, &["alter", "table", "orders", "widen"], &Stdlib).unwrap();
        assert_eq!(next.next, Some(Step::Param(ParamKind::WidenableColumn)));
        assert_eq!(next.table, Some("orders"));
        assert!(follow(widen, &["alter", "table", "orders", "drop"], &Stdlib).is_none());

        let kill = &alternatives(&compile_pattern("kill {target:process}"))[0];
        let open = follow(kill, &["kill", "consumer"], &Stdlib).unwrap();
        assert_eq!((open.next, open.consumer), (None, true));
        let named = follow(kill, &["kill", "consumer", "careless"], &Stdlib).unwrap();
        assert_eq!((named.next, named.consumer), (None, false));
        assert!(follow(kill, &["kill", "consumer", "every"], &Stdlib).is_none());
    }
}
