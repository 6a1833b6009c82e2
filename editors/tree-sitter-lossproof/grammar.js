/**
 * @file Tree-sitter grammar for lossproof chaos-test scenarios (.lp)
 * @license MIT
 *
 * The grammar is deliberately vocabulary-free, like the real (pest) grammar in
 * `lang/`: fault verbs, targets and shorthand words are plain identifiers, and
 * queries/highlights.scm classifies them with `#any-of?` lists generated from
 * editors/vocabulary.json.  Only the structural words (the ones that decide
 * the shape of a statement) are literals here, so a new fault in the stdlib
 * never needs a new parser.
 */

/// <reference types="tree-sitter-cli/dsl" />
// @ts-check

// BEGIN GENERATED units (editors/generate.mjs from editors/vocabulary.json; do not edit)
const UNITS = ['ms', 's', 'm', 'h'];
// END GENERATED units

const unitPattern = new RegExp(UNITS.map((u) => u.replace(/[^A-Za-z0-9_]/g, '\\$&')).join('|'));

module.exports = grammar({
  name: 'lossproof',

  // No `word` rule: units (s, m, ...) would be captured by keyword extraction.

  // Newlines separate statements, so they are not extras.
  extras: ($) => [/[ \t\r\f\v]/, $.comment],

  externals: ($) => [
    $.fence_language,
    $.sql,
    $._error_sentinel,
  ],

  rules: {
    source_file: ($) => seq(
      repeat(choice(seq($._top_level_statement, $._separator), $._separator)),
      optional($._top_level_statement),
    ),

    // A consumer or table declaration is top-level only: in a block,
    // `consumer` is a plain word (a target, as in `kill consumer`) and so is
    // `table` (`alter table orders widen amount`).
    _top_level_statement: ($) => choice($.consumer_declaration, $.table_declaration, $._statement),

    _separator: ($) => choice($._newline, ';'),

    _newline: (_) => /\n/,

    block: ($) => seq(
      '<',
      repeat(choice(seq($._statement, $._separator), $._separator)),
      optional($._statement),
      '>',
    ),

    _statement: ($) => choice(
      $.scenario,
      $.workload,
      $.consumers,
      $.setting,
      $.include,
      $.fragment,
      $.use,
      $.phase,
      $.window,
      $.drain,
      $.expectation,
      $.assertion,
      $.action,
    ),

    // scenario crash | scenario "a name"
    scenario: ($) => seq('scenario', field('name', choice($._name, $.string))),

    // workload orders rate 200/s connections 4 mix insert 50% ...
    workload: ($) => seq('workload', field('name', $.identifier), repeat($._argument)),

    // consumers careless, correct
    consumers: ($) => seq('consumers', $.identifier, repeat(seq(',', $.identifier))),

    // consumer mysink command "java -jar sink.jar --namespace {namespace}" offsets in lake _state
    // consumer pydbz command "python3 pydbzengine_sink.py" reads source lake changelog
    // The clauses are plain words (the analyser checks them); a word may be
    // a template such as mysink_{run}.
    consumer_declaration: ($) => seq(
      'consumer',
      field('name', $._name),
      repeat(choice($.identifier, $.string, $.template)),
    ),

    // table accounts <
    //   account_id bigint primary key
    //   balance    numeric(12,2) not null
    //   tags       text[]
    //   foreign key (tenant, id) references tenants on delete cascade
    // >
    // One column or constraint per line; its words are plain identifiers
    // (the analyser checks them), highlighted in a table body only.
    table_declaration: ($) => seq(
      'table',
      field('name', $._name),
      repeat($._newline),
      field('body', $.table_body),
    ),

    table_body: ($) => seq(
      '<',
      repeat(choice(seq($.table_line, $._separator), $._separator)),
      optional($.table_line),
      '>',
    ),

    table_line: ($) => repeat1(choice($.identifier, $.table_arguments, $.array_suffix)),

    // text[] | numeric(12,2)[]: an array of the type before it
    array_suffix: (_) => '[]',

    // (tenant, account_id) | (12,2)
    table_arguments: ($) => seq('(', choice($.identifier, $.number), repeat(seq(',', choice($.identifier, $.number))), ')'),

    // set consumer_batch 500
    setting: ($) => seq('set', field('name', $._name), field('value', repeat1($._argument))),

    // include "stdlib/faults.lp"
    include: ($) => seq('include', field('path', $.string)),

    // fragment chaos < ... >
    fragment: ($) => seq('fragment', field('name', $._name), repeat($._newline), field('body', $.block)),

    // use chaos
    use: ($) => seq('use', field('name', $._name)),

    // under load 30s < ... > | quiet 10s < ... >
    phase: ($) => seq(
      field('kind', choice(seq('under', 'load'), 'quiet')),
      field('duration', $._duration),
      repeat($._newline),
      field('body', $.block),
    ),

    // between 10s and 20s < ... >
    window: ($) => seq(
      'between',
      field('start', $._duration),
      'and',
      field('end', $._duration),
      repeat($._newline),
      field('body', $.block),
    ),

    // drain within 60s
    drain: ($) => seq('drain', 'within', field('timeout', $._duration)),

    // expect consumer correct clean | expect every fault fired
    expectation: ($) => seq('expect', repeat1($._argument)),

    // assert "name" expect < 5 ```sql ... ```
    assertion: ($) => seq(
      'assert',
      field('name', $.string),
      'expect',
      field('expected', $.expected),
      repeat($._newline),
      field('query', $.sql_block),
    ),

    expected: ($) => choice(
      seq(field('operator', $.comparison_operator), field('value', $._value)),
      'empty',
      'true',
    ),

    comparison_operator: (_) => choice('=', '!=', '<', '<=', '>', '>='),

    sql_block: ($) => seq(
      '```',
      optional(field('language', $.fence_language)),
      optional(field('content', $.sql)),
      '```',
    ),

    // Any other statement: a verb from the stdlib and its words, optionally
    // with a block of its own (kill consumer every 2s, at 5s < ... >).
    action: ($) => seq(
      field('verb', $.identifier),
      repeat($._argument),
      optional(field('body', $.block)),
    ),

    _argument: ($) => choice($._value, ','),

    _value: ($) => choice(
      $.identifier,
      $.string,
      $.number,
      $.duration,
      $.jitter,
      $.percent,
      $.rate,
    ),

    _duration: ($) => choice($.duration, $.jitter),

    _name: ($) => alias($.identifier, $.name),

    // 30s, 500ms, 1.5s
    duration: ($) => seq(field('value', $.number), field('unit', $.unit)),

    // 2s±500ms, 2s+-500ms
    jitter: ($) => seq(
      field('base', $.duration),
      field('operator', alias(token.immediate(choice('±', '+-')), $.jitter_operator)),
      field('spread', $.duration),
    ),

    // 30%
    percent: ($) => seq(field('value', $.number), token.immediate('%')),

    // 200/s
    rate: ($) => seq(field('value', $.number), token.immediate('/'), field('unit', $.unit)),

    unit: (_) => token.immediate(prec(1, unitPattern)),

    number: (_) => /\d+(\.\d+)?/,

    string: ($) => seq(
      '"',
      repeat(choice($._string_content, $.escape_sequence, $.placeholder)),
      token.immediate('"'),
    ),

    // A `{` that does not open a placeholder is content too.
    _string_content: (_) => token.immediate(prec(1, choice(/[^"\\\n{]+/, '{'))),

    // {run}, {consumer}, {namespace}, {group}: filled in a consumer's command
    // (the analyser checks the names); highlighted there only.
    placeholder: (_) => token.immediate(prec(1, /\{[A-Za-z_][A-Za-z0-9_]*\}/)),

    escape_sequence: (_) => token.immediate(/\\./),

    identifier: (_) => /[A-Za-z_][A-Za-z0-9_-]*/,

    // A word of a consumer declaration that is not an identifier: it has a
    // `.`, `/`, `{` or `}`, or starts with a digit (lake mysink_{run}).
    template: (_) => /[0-9.\/{}][A-Za-z0-9_.\/{}-]*|[A-Za-z_][A-Za-z0-9_-]*[.\/{}][A-Za-z0-9_.\/{}-]*/,

    comment: (_) => token(seq('#', /[^\n]*/)),
  },
});
