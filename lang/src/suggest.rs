//! "did you mean" suggestions.

/// The candidate closest to `word`, if it is close enough to be a likely
/// typo: at most one edit for short words, about a third of the word for
/// longer ones.
#[must_use]
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    if word.is_empty() {
        return None;
    }
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (strsim::damerau_levenshtein(&word.to_lowercase(), c), c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, c)| (*distance, *c))
        .map(|(_, c)| c)
}

/// `did you mean `x`?` as help text, or a list of the valid choices.
#[must_use]
pub fn help_for(word: &str, candidates: &[&str], what: &str) -> String {
    match did_you_mean(word, candidates.iter().copied()) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!("{what}: {}", list(candidates)),
    }
}

/// `a`, `b` and `c`.
#[must_use]
pub fn list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("`{i}`")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_words_only() {
        let words = ["consumer", "connector", "broker"];
        assert_eq!(did_you_mean("conusmer", words), Some("consumer"));
        assert_eq!(did_you_mean("brokr", words), Some("broker"));
        assert_eq!(did_you_mean("postgres", words), None);
        assert_eq!(did_you_mean("", words), None);
    }
}
