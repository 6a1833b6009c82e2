" Vim syntax file
" Language:    lossproof chaos-test scenario (.lp)
" Maintainer:  lossproof developers
" The word lists between the GENERATED markers come from editors/vocabulary.json
" (run `node editors/generate.mjs` after changing it).

if exists('b:current_syntax')
  finish
endif

scriptencoding utf-8
let s:cpo_save = &cpo
set cpo&vim

" Raw SQL inside ``` fences (assertions). Included first: sql.vim may change
" case sensitivity and iskeyword, which are set for lossproof below.
let s:has_sql = !empty(globpath(&runtimepath, 'syntax/sql.vim'))
if s:has_sql
  syntax include @lpSql syntax/sql.vim
  unlet! b:current_syntax
endif

syntax case match
syntax iskeyword @,48-57,_,-

" BEGIN GENERATED vocabulary (editors/generate.mjs from editors/vocabulary.json; do not edit)
syntax match lpKeyword /\v%([A-Za-z0-9_-])@<!table%([A-Za-z0-9_-])@!/
syntax keyword lpKeyword scenario workload consumers set include fragment use under load quiet drain
syntax keyword lpKeyword within between and at every times randomly with chance assert expect true
syntax keyword lpKeyword empty
syntax keyword lpFault kill stop pause resume restart alter redeliver duplicate recreate drop delay
syntax keyword lpFault limit cut reset blackhole inject compact expire run fill
syntax match lpTarget /\v%([A-Za-z0-9_-])@<!consumer%([A-Za-z0-9_-])@!/
syntax keyword lpTarget connect connector broker postgres registry compactor
syntax keyword lpConsumer careless correct
syntax keyword lpWorkload orders
syntax keyword lpWorkloadParam rate connections customers rows mix preload insert update delete
syntax keyword lpWorkloadParam cascade
syntax keyword lpSetting consumer_batch autocommit_interval replica_identity compaction_every
syntax keyword lpSetting partitions
syntax keyword lpShorthand clean damaged most wrong fresh of the time consistent fault fired
syntax keyword lpFaultWord widen add column rename to from start slot network jitter for kilobytes
syntax keyword lpFaultWord per second close junk into topic messages snapshots nightly
syntax keyword lpConsumerClause contained command offsets in group lake reads topics source mirror
syntax keyword lpConsumerClause contained changelog
syntax keyword lpTableWord contained primary key foreign references on not null large replica
syntax keyword lpTableWord contained identity full default
syntax keyword lpColumnType contained smallint integer bigint numeric real double boolean text
syntax keyword lpColumnType contained varchar char uuid date timestamp timestamptz interval json
syntax keyword lpColumnType contained jsonb bytea precision
let s:lp_units = 'ms|s|m|h'
" END GENERATED vocabulary

" Numbers: 3, 1.5, 30s, 500ms, 2s±500ms, 2s+-500ms, 30%, 200/s
let s:num = '%(^|[^A-Za-z0-9_.-])@<=\d+%(\.\d+)?'
let s:end = '%([A-Za-z0-9_-])@!'
let s:dur = '\d+%(\.\d+)?%(' . s:lp_units . ')'
execute 'syntax match lpNumber /\v' . s:num . s:end . '/'
execute 'syntax match lpPercent /\v' . s:num . '\%/ contains=lpUnit'
execute 'syntax match lpRate /\v' . s:num . '\/%(' . s:lp_units . ')' . s:end . '/ contains=lpUnit'
execute 'syntax match lpDuration /\v' . s:num . '%(' . s:lp_units . ')%(%(±|\+-)' . s:dur . ')?' . s:end . '/ contains=lpUnit,lpJitter'
execute 'syntax match lpUnit /\v%(\d|\/)@<=%(' . s:lp_units . '|\%)/ contained'
syntax match lpJitter /±\|+-/ contained

" Names after scenario / fragment / use / set
syntax match lpScenarioName /\v%(<scenario\s+)@<=[A-Za-z_][A-Za-z0-9_-]*/
syntax match lpFragmentName /\v%(<%(fragment|use)\s+)@<=[A-Za-z_][A-Za-z0-9_-]*/
syntax match lpSettingName /\v%(<set\s+)@<=[A-Za-z_][A-Za-z0-9_-]*/

" consumer NAME command "PROGRAM ARGS" [offsets in group|lake TABLE]
"          [reads topics|source] [lake mirror|changelog]
" A line of its own; its clause words (lpConsumerClause, contained) are
" highlighted there only. `consumer` is a `syntax match` (lpTarget, as in
" `kill consumer`), so this region, defined later, wins where both start.
syntax region lpConsumerDecl matchgroup=lpKeyword start=/\v^\s*\zsconsumer%([A-Za-z0-9_-])@!/ end=/\v;@=|$/ oneline
      \ contains=lpConsumerName,lpConsumerClause,lpConsumerString,lpTemplate,lpComment
syntax match lpConsumerName /\v%(<consumer\s+)@<=[A-Za-z_][A-Za-z0-9_-]*/ contained
" A word that is not an identifier: lake mysink_{run}
syntax match lpTemplate /\v%(\s)@<=%([0-9.\/{}]|[A-Za-z_][A-Za-z0-9_-]*[.\/{}])[A-Za-z0-9_.\/{}-]*/ contained contains=lpPlaceholder
syntax region lpConsumerString start=/"/ skip=/\\./ end=/"\|$/ oneline contained contains=lpEscape,lpPlaceholder
syntax match lpPlaceholder /\v\{[A-Za-z_][A-Za-z0-9_]*\}/ contained

" table NAME < COLUMN TYPE [primary key] [not null] [large] [references T …] … >
" Its words (lpTableWord) and types (lpColumnType), both contained, are
" highlighted in the body only. `table` is a `syntax match`, so this region,
" defined later, wins where both start.
syntax region lpTableDecl matchgroup=lpKeyword start=/\v^\s*\zstable%([A-Za-z0-9_-])@!/ matchgroup=lpBlock end=/>/
      \ contains=lpTableName,lpColumnName,lpTableWord,lpColumnType,lpArraySuffix,lpWorkloadParam,lpNumber,lpComment,lpBlock,lpDelimiter
syntax match lpTableName /\v%(<table\s+)@<=[A-Za-z_][A-Za-z0-9_-]*/ contained
" `text[]`: an array of the type before it.
syntax match lpArraySuffix /\[\]/ contained
" A column's name: the first word of a body line that is not a constraint.
syntax match lpColumnName /\v^\s*\zs%(%(primary|foreign|replica)%([A-Za-z0-9_-])@!)@![A-Za-z_][A-Za-z0-9_-]*/ contained

" Blocks < ... >, and comparisons after `expect` in an assertion.
syntax match lpBlock /[<>]/
syntax match lpDelimiter /[;,]/
syntax match lpComparison /\v%(<expect\s+)@<=%(\<\=|\>\=|!\=|\=|\<|\>)/

syntax match lpEscape /\\./ contained
syntax region lpString start=/"/ skip=/\\./ end=/"\|$/ oneline contains=lpEscape
syntax match lpComment /#.*$/ contains=@Spell

if s:has_sql
  syntax region lpSqlFence matchgroup=lpFence start=/```\%(\h[[:alnum:]_+-]*\s*$\)\=/ end=/```/ keepend contains=@lpSql
else
  syntax region lpSqlFence matchgroup=lpFence start=/```\%(\h[[:alnum:]_+-]*\s*$\)\=/ end=/```/ keepend
endif

highlight default link lpKeyword Keyword
highlight default link lpFault Function
highlight default link lpFaultWord Statement
highlight default link lpTarget Type
highlight default link lpConsumer Constant
highlight default link lpWorkload Constant
highlight default link lpWorkloadParam Identifier
highlight default link lpSetting Identifier
highlight default link lpShorthand Statement
highlight default link lpNumber Number
highlight default link lpPercent Number
highlight default link lpRate Number
highlight default link lpDuration Number
highlight default link lpUnit Special
highlight default link lpJitter Operator
highlight default link lpScenarioName Title
highlight default link lpFragmentName Function
highlight default link lpSettingName Identifier
highlight default link lpConsumerName Constant
highlight default link lpConsumerClause Keyword
highlight default link lpConsumerString String
highlight default link lpTemplate String
highlight default link lpPlaceholder Special
highlight default link lpTableName Constant
highlight default link lpColumnName Identifier
highlight default link lpTableWord Keyword
highlight default link lpColumnType Type
highlight default link lpArraySuffix Delimiter
highlight default link lpBlock Delimiter
highlight default link lpDelimiter Delimiter
highlight default link lpComparison Operator
highlight default link lpString String
highlight default link lpEscape SpecialChar
highlight default link lpComment Comment
highlight default link lpFence Delimiter
if !s:has_sql
  highlight default link lpSqlFence String
endif

syntax sync fromstart

let b:current_syntax = 'lossproof'

let &cpo = s:cpo_save
unlet s:cpo_save
