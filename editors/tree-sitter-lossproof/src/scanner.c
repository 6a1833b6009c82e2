// External scanner for lossproof: the body of a ``` fence is raw SQL that may
// contain anything (including <, >, ; and quotes) up to the next ```.
#include "tree_sitter/parser.h"

#include <stdbool.h>

enum TokenType {
  FENCE_LANGUAGE,
  SQL,
  ERROR_SENTINEL,
};

void *tree_sitter_lossproof_external_scanner_create(void) { return NULL; }

void tree_sitter_lossproof_external_scanner_destroy(void *payload) { (void)payload; }

unsigned tree_sitter_lossproof_external_scanner_serialize(void *payload, char *buffer) {
  (void)payload;
  (void)buffer;
  return 0;
}

void tree_sitter_lossproof_external_scanner_deserialize(void *payload, const char *buffer,
                                                        unsigned length) {
  (void)payload;
  (void)buffer;
  (void)length;
}

static inline bool is_word_char(int32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '+';
}

static inline bool is_word_start(int32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Consumes raw text up to (not including) the next ``` or the end of input.
// `has_content` says whether characters were already consumed by the caller.
static bool scan_sql(TSLexer *lexer, bool has_content) {
  for (;;) {
    if (lexer->eof(lexer)) {
      lexer->mark_end(lexer);
      break;
    }
    if (lexer->lookahead == '`') {
      lexer->mark_end(lexer);
      unsigned ticks = 0;
      while (lexer->lookahead == '`' && ticks < 3) {
        lexer->advance(lexer, false);
        ticks++;
      }
      if (ticks == 3) break;
      has_content = true;
      continue;
    }
    lexer->advance(lexer, false);
    has_content = true;
  }
  if (!has_content) return false;
  lexer->result_symbol = SQL;
  return true;
}

bool tree_sitter_lossproof_external_scanner_scan(void *payload, TSLexer *lexer,
                                                 const bool *valid_symbols) {
  (void)payload;
  // During error recovery every symbol is valid: do not swallow the file.
  if (valid_symbols[ERROR_SENTINEL]) return false;

  bool consumed = false;
  if (valid_symbols[FENCE_LANGUAGE] && is_word_start(lexer->lookahead)) {
    // ```sql<newline>: a language tag is a single word alone on the fence line.
    while (is_word_char(lexer->lookahead)) {
      lexer->advance(lexer, false);
    }
    lexer->mark_end(lexer);
    consumed = true;
    while (lexer->lookahead == ' ' || lexer->lookahead == '\t' || lexer->lookahead == '\r') {
      lexer->advance(lexer, false);
    }
    if (lexer->lookahead == '\n' || lexer->eof(lexer)) {
      lexer->result_symbol = FENCE_LANGUAGE;
      return true;
    }
    // Not a tag (```select 1```): what was read is SQL.
  }

  if (valid_symbols[SQL]) return scan_sql(lexer, consumed);
  return false;
}
