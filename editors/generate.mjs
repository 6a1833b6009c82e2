#!/usr/bin/env node
// Copies the word lists of editors/vocabulary.json into every editor grammar.
//
//   node editors/generate.mjs          rewrite the generated parts
//   node editors/generate.mjs --check  exit 1 if any generated part is stale
//
// Plain Node (>= 18), no dependencies. Generated parts:
//   vscode/syntaxes/lossproof.tmLanguage.json   repository entries vocabulary,
//                                               vocab-* and numbers
//   tree-sitter-lossproof/queries/highlights.scm        GENERATED block
//   tree-sitter-lossproof/queries/helix/highlights.scm  whole file (Helix names)
//   tree-sitter-lossproof/grammar.js                    GENERATED units block
//   vim/syntax/lossproof.vim                            GENERATED block
//
// A change to the units changes grammar.js, so the tree-sitter parser must be
// regenerated too (`tree-sitter generate --abi 14` in tree-sitter-lossproof/;
// editors/test.sh checks it). Word lists only reach queries, so a new fault,
// target or shorthand needs no new parser.

import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const check = process.argv.includes('--check');

// Word classes in priority order: a word listed in two classes is
// highlighted as the earlier class (but see DECLARATION_KEYWORDS).
const CLASSES = [
  'keywords',
  'faults',
  'targets',
  'consumers',
  'workloads',
  'workload_params',
  'settings',
  'shorthands',
  'fault_words',
  'consumer_clauses',
  'table_words',
  'column_types',
];

// Classes highlighted only inside one kind of statement, whose hand-written
// rule in each grammar uses the generated list: the words are generic (`in`,
// `group`, `source`) and mean nothing elsewhere. Last in CLASSES, so a word
// that is also in a global class keeps that class everywhere.
const CONTEXTUAL = {
  // consumer NAME command "..." [offsets in group|lake TABLE] [reads topics|source] [lake mirror|changelog]
  consumer_clauses: { tm: 'consumer-declaration', ts: 'consumer_declaration', vim: 'lpConsumerDecl' },
  // table NAME < COLUMN TYPE [primary key] [not null] [large] [references T [on delete cascade]] … >
  // (`delete` and `cascade` stay workload operations, in a table body too.)
  table_words: { tm: 'table-declaration', ts: 'table_line', vim: 'lpTableDecl' },
  column_types: { tm: 'table-declaration', ts: 'table_line', vim: 'lpTableDecl' },
};

// Keywords that are a keyword only as the first word of a declaration and a
// word of another class everywhere else: `consumer mysink command "..."` (a
// top-level line) against `kill consumer` (a target). The word lists give
// them the other class; each grammar's declaration rule highlights the
// keyword (TextMate #consumer-declaration, the tree-sitter literal, Vim's
// lpConsumerDecl). Vim gets them as `syntax match`, not `syntax keyword`, so
// that the declaration region can start on them.
const DECLARATION_KEYWORDS = new Set(['consumer', 'table']);

const UNITS = 'units';

// TextMate scopes (VS Code).
const TM_SCOPE = {
  keywords: 'keyword.control.lossproof',
  faults: 'entity.name.function.fault.lossproof',
  targets: 'support.type.target.lossproof',
  consumers: 'constant.language.consumer.lossproof',
  workloads: 'constant.language.workload.lossproof',
  workload_params: 'keyword.other.workload-param.lossproof',
  settings: 'variable.other.setting.lossproof',
  shorthands: 'keyword.other.shorthand.lossproof',
  fault_words: 'keyword.other.fault-word.lossproof',
  consumer_clauses: 'keyword.other.consumer-clause.lossproof',
  table_words: 'keyword.other.table-word.lossproof',
  column_types: 'storage.type.column.lossproof',
};

// Tree-sitter captures (nvim-treesitter names).
const TS_CAPTURE = {
  keywords: 'keyword',
  faults: 'function.builtin',
  targets: 'type',
  consumers: 'constant.builtin',
  workloads: 'constant.builtin',
  workload_params: 'property',
  settings: 'property',
  shorthands: 'keyword.operator',
  fault_words: 'keyword.operator',
  consumer_clauses: 'keyword',
  table_words: 'keyword',
  column_types: 'type.builtin',
};

// nvim-treesitter capture -> Helix capture, for queries/helix/highlights.scm.
const HELIX_CAPTURE = {
  'keyword.import': 'keyword.control.import',
  property: 'variable.other.member',
  number: 'constant.numeric',
  'number.unit': 'constant.numeric.unit',
  'string.escape': 'constant.character.escape',
};
// (constant, keyword, string.special, variable.builtin: the same in Helix.)

// Vim highlight groups.
const VIM_GROUP = {
  keywords: 'lpKeyword',
  faults: 'lpFault',
  targets: 'lpTarget',
  consumers: 'lpConsumer',
  workloads: 'lpWorkload',
  workload_params: 'lpWorkloadParam',
  settings: 'lpSetting',
  shorthands: 'lpShorthand',
  fault_words: 'lpFaultWord',
  consumer_clauses: 'lpConsumerClause',
  table_words: 'lpTableWord',
  column_types: 'lpColumnType',
};

const WORD = /^[A-Za-z_][A-Za-z0-9_-]*$/;

function fail(message) {
  console.error(`generate.mjs: ${message}`);
  process.exit(2);
}

function loadVocabulary() {
  const path = join(here, 'vocabulary.json');
  let vocab;
  try {
    vocab = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    fail(`cannot read ${path}: ${err.message}`);
  }
  for (const key of Object.keys(vocab)) {
    if (key !== UNITS && !CLASSES.includes(key)) {
      fail(`vocabulary class "${key}" has no editor scope: add it to CLASSES and the scope tables in generate.mjs`);
    }
  }
  for (const key of [...CLASSES, UNITS]) {
    const words = vocab[key];
    if (!Array.isArray(words) || words.length === 0) fail(`vocabulary.json: "${key}" must be a non-empty array`);
    for (const word of words) {
      if (typeof word !== 'string' || !WORD.test(word)) fail(`vocabulary.json: "${key}" has a word that is not an identifier: ${JSON.stringify(word)}`);
    }
  }
  return vocab;
}

// Each word once, in the first class (by priority) that lists it; a
// DECLARATION_KEYWORDS word that another class lists goes to that class.
function disjointClasses(vocab) {
  const seen = new Set();
  const out = {};
  const elsewhere = (word) => CLASSES.some((cls) => cls !== 'keywords' && vocab[cls].includes(word));
  for (const cls of CLASSES) {
    out[cls] = [];
    for (const word of vocab[cls]) {
      if (seen.has(word)) continue;
      if (cls === 'keywords' && DECLARATION_KEYWORDS.has(word) && elsewhere(word)) continue;
      seen.add(word);
      out[cls].push(word);
    }
  }
  return out;
}

// Longest first, so that an alternation never stops at a prefix (ms before m).
function unitsByLength(vocab) {
  return [...new Set(vocab[UNITS])].sort((a, b) => b.length - a.length); // stable
}

function replaceBlock(text, begin, end, body, file) {
  const start = text.indexOf(begin);
  const stop = text.indexOf(end);
  if (start < 0 || stop < 0 || stop < start) fail(`${file}: missing "${begin}" ... "${end}" markers`);
  const lineEnd = text.indexOf('\n', start);
  return text.slice(0, lineEnd + 1) + body + text.slice(stop);
}

// ---- VS Code / TextMate -------------------------------------------------

function textmate(vocab, classes, file, current) {
  const grammar = JSON.parse(current);
  const repo = grammar.repository ?? fail(`${file}: no repository`);
  const B = '(?<![\\w-])';
  const E = '(?![\\w-])';
  repo.vocabulary = {
    patterns: CLASSES.filter((cls) => !CONTEXTUAL[cls]).map((cls) => ({ include: `#vocab-${cls}` })),
  };
  for (const cls of CLASSES) {
    const where = CONTEXTUAL[cls] ? ` (only in #${CONTEXTUAL[cls].tm}, not in #vocabulary)` : '';
    repo[`vocab-${cls}`] = {
      comment: `generated from vocabulary.json "${cls}"${where}`,
      match: `${B}(?:${classes[cls].join('|')})${E}`,
      name: TM_SCOPE[cls],
    };
  }
  const units = `(${unitsByLength(vocab).join('|')})`;
  const num = '(\\d+(?:\\.\\d+)?)';
  const N = '(?<![\\w.-])';
  const unit = { name: 'keyword.other.unit.lossproof' };
  repo.numbers = {
    comment: 'generated: units from vocabulary.json "units"',
    patterns: [
      {
        comment: '200/s',
        match: `${N}${num}(/)${units}${E}`,
        name: 'constant.numeric.rate.lossproof',
        captures: { 2: { name: 'punctuation.separator.rate.lossproof' }, 3: unit },
      },
      {
        comment: '30s, 500ms, 2s±500ms, 2s+-500ms',
        match: `${N}${num}${units}(?:(±|\\+-)${num}${units})?${E}`,
        name: 'constant.numeric.duration.lossproof',
        captures: { 2: unit, 3: { name: 'keyword.operator.jitter.lossproof' }, 5: unit },
      },
      {
        comment: '30%',
        match: `${N}${num}(%)`,
        name: 'constant.numeric.percent.lossproof',
        captures: { 2: { name: 'keyword.other.unit.percent.lossproof' } },
      },
      {
        comment: '3, 1.5',
        match: `${N}\\d+(?:\\.\\d+)?${E}`,
        name: 'constant.numeric.lossproof',
      },
    ],
  };
  return `${JSON.stringify(grammar, null, 2)}\n`;
}

// ---- tree-sitter ----------------------------------------------------------

const quote = (w) => `"${w}"`;

function predicateLines(capture, words) {
  // Wrap long lists the way `tree-sitter query` formatters do.
  const lines = [];
  let line = '   ';
  for (const w of words.map(quote)) {
    if (line.length + w.length + 1 > 80) {
      lines.push(line);
      line = '   ';
    }
    line += ` ${w}`;
  }
  lines.push(line);
  return lines;
}

function highlightsBlock(vocab, classes) {
  const out = [];
  for (const cls of CLASSES) {
    const capture = TS_CAPTURE[cls];
    const context = CONTEXTUAL[cls];
    if (context) {
      out.push(`; ${cls} (in ${context.ts} only)`);
      out.push(`(${context.ts}`);
      out.push(`  (identifier) @${capture}`);
    } else {
      out.push(`; ${cls}`);
      out.push(`((identifier) @${capture}`);
    }
    out.push(`  (#any-of? @${capture}`);
    const lines = predicateLines(capture, classes[cls]);
    lines[lines.length - 1] += '))';
    out.push(...lines, '');
  }
  out.push(`; ${UNITS}`);
  out.push('((unit) @number.unit');
  out.push(`  (#any-of? @number.unit ${unitsByLength(vocab).map(quote).join(' ')}))`);
  return `${out.join('\n')}\n`;
}

function helixHighlights(nvimText) {
  const body = nvimText.replace(/@([A-Za-z_][\w.]*)/g, (all, name) => `@${HELIX_CAPTURE[name] ?? name}`);
  return [
    '; GENERATED by editors/generate.mjs from ../highlights.scm: do not edit.',
    '; The same query with Helix capture names (constant.numeric, ...).',
    body,
  ].join('\n');
}

function grammarUnitsBlock(vocab) {
  return `const UNITS = [${unitsByLength(vocab).map((u) => `'${u}'`).join(', ')}];\n`;
}

// ---- Vim --------------------------------------------------------------------

// Words that `:syntax keyword` would take as options, not keywords.
const VIM_SYNTAX_OPTIONS = new Set([
  'cchar', 'conceal', 'concealends', 'contained', 'containedin', 'contains', 'display',
  'extend', 'fold', 'nextgroup', 'oneline', 'skipempty', 'skipnl', 'skipwhite', 'transparent',
]);

function vimBlock(vocab, classes) {
  const out = [];
  const asMatch = (w) => VIM_SYNTAX_OPTIONS.has(w) || DECLARATION_KEYWORDS.has(w);
  for (const cls of CLASSES) {
    const group = VIM_GROUP[cls];
    // A contextual class is `contained`, in the region CONTEXTUAL names.
    const opts = CONTEXTUAL[cls] ? ' contained' : '';
    for (const w of classes[cls].filter(asMatch)) {
      out.push(`syntax match ${group} /\\v%([A-Za-z0-9_-])@<!${w}%([A-Za-z0-9_-])@!/${opts}`);
    }
    const start = `syntax keyword ${group}${opts}`;
    let line = start;
    for (const w of classes[cls].filter((w) => !asMatch(w))) {
      if (line.length + w.length + 1 > 100) {
        out.push(line);
        line = start;
      }
      line += ` ${w}`;
    }
    if (line !== start) out.push(line);
  }
  out.push(`let s:lp_units = '${unitsByLength(vocab).join('|')}'`);
  return `${out.join('\n')}\n`;
}

// ---- main -------------------------------------------------------------------

const vocab = loadVocabulary();
const classes = disjointClasses(vocab);

const TS = join(here, 'tree-sitter-lossproof');
const targets = [];

function target(path, make) {
  targets.push({ path, make });
}

target(join(here, 'vscode/syntaxes/lossproof.tmLanguage.json'), (cur, file) => textmate(vocab, classes, file, cur));

const highlightsPath = join(TS, 'queries/highlights.scm');
const BEGIN_SCM = '; BEGIN GENERATED vocabulary';
const END_SCM = '; END GENERATED vocabulary';
target(highlightsPath, (cur, file) => replaceBlock(cur, BEGIN_SCM, END_SCM, highlightsBlock(vocab, classes), file));
// Built from the new highlights.scm (targets run in order).
target(join(TS, 'queries/helix/highlights.scm'), () => helixHighlights(results.get(highlightsPath)));
target(join(TS, 'grammar.js'), (cur, file) =>
  replaceBlock(cur, '// BEGIN GENERATED units', '// END GENERATED units', grammarUnitsBlock(vocab), file));
target(join(here, 'vim/syntax/lossproof.vim'), (cur, file) =>
  replaceBlock(cur, '" BEGIN GENERATED vocabulary', '" END GENERATED vocabulary', vimBlock(vocab, classes), file));

const results = new Map();
const stale = [];
for (const { path, make } of targets) {
  const rel = relative(process.cwd(), path) || path;
  const current = existsSync(path) ? readFileSync(path, 'utf8') : null;
  const next = make(current ?? '', rel);
  results.set(path, next);
  if (next === current) continue;
  stale.push(rel);
  if (!check) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, next);
  }
}

// Every word of vocabulary.json must appear, as a whole word, in each editor's
// grammar files (the Rust stdlib test checks the same).
const EDITOR_GRAMMARS = [
  'vscode/syntaxes/lossproof.tmLanguage.json',
  'tree-sitter-lossproof/queries/highlights.scm',
  'tree-sitter-lossproof/queries/helix/highlights.scm',
  'vim/syntax/lossproof.vim',
];
const missing = [];
for (const rel of EDITOR_GRAMMARS) {
  const text = results.get(join(here, rel));
  for (const key of [...CLASSES, UNITS]) {
    for (const word of vocab[key]) {
      if (!new RegExp(`(?<![A-Za-z0-9_-])${word}(?![A-Za-z0-9_-])`).test(text)) missing.push(`${rel}: ${key} "${word}"`);
    }
  }
}
// A contextual class is highlighted only where its hand-written rule uses it.
for (const [cls, where] of Object.entries(CONTEXTUAL)) {
  const tm = JSON.parse(results.get(join(here, 'vscode/syntaxes/lossproof.tmLanguage.json'))).repository[where.tm];
  if (!JSON.stringify(tm?.patterns ?? []).includes(`"#vocab-${cls}"`)) {
    missing.push(`vscode/syntaxes/lossproof.tmLanguage.json: #${where.tm} does not include #vocab-${cls}`);
  }
  const vim = results.get(join(here, 'vim/syntax/lossproof.vim'));
  const region = vim.match(new RegExp(`^syntax region ${where.vim}\\b.*(?:\\n\\s*\\\\.*)*`, 'm'))?.[0] ?? '';
  if (!new RegExp(`contains=[^ ]*\\b${VIM_GROUP[cls]}\\b`).test(region)) {
    missing.push(`vim/syntax/lossproof.vim: region ${where.vim} does not contain ${VIM_GROUP[cls]}`);
  }
}
if (missing.length) {
  console.error(`generate.mjs: missing from editor grammars:\n  ${missing.join('\n  ')}`);
  process.exit(1);
}

if (check) {
  if (stale.length) {
    console.error(`generate.mjs --check: out of date with vocabulary.json:\n  ${stale.join('\n  ')}\nrun: node editors/generate.mjs`);
    process.exit(1);
  }
  console.log(`generate.mjs --check: ${targets.length} generated files up to date`);
} else {
  console.log(stale.length ? `generate.mjs: updated\n  ${stale.join('\n  ')}` : 'generate.mjs: nothing to update');
}
