" Headless check of ftdetect/ and syntax/lossproof.vim, run by editors/test.sh:
"   vim -Nu NONE -i NONE -es --cmd 'set rtp^=editors/vim' --cmd 'filetype on' \
"       --cmd 'syntax on' -S editors/vim/test/check.vim editors/vscode/test/sample.lp
" then it opens editors/vscode/test/consumer.lp for the consumer declarations.
" Writes one line per check to $LP_VIM_REPORT (or stderr) and exits non-zero if
" any fails.
let s:failures = 0
let s:out = []

function! s:Report(ok, what) abort
  call add(s:out, (a:ok ? 'ok   ' : 'FAIL ') . a:what)
  if !a:ok
    let s:failures += 1
  endif
endfunction

" The syntax group at the first match of a:pattern (\V, literal) after line
" a:from, a:offset characters into the match, must match a:group (a regex).
function! s:Expect(from, pattern, offset, group) abort
  call cursor(a:from, 1)
  let [lnum, col] = searchpos('\V' . a:pattern, 'cW')
  if lnum == 0
    call s:Report(0, printf('%-40s not found', a:pattern))
    return
  endif
  let name = synIDattr(synID(lnum, col + a:offset, 1), 'name')
  call s:Report(name =~# a:group, printf('%d:%d %-34s %s (want %s)', lnum, col + a:offset, a:pattern, name, a:group))
endfunction

call s:Report(empty(v:errmsg), 'no error while loading' . (empty(v:errmsg) ? '' : ': ' . v:errmsg))
call s:Report(&filetype ==# 'lossproof', 'filetype is ' . &filetype)
call s:Report(get(b:, 'current_syntax', '') ==# 'lossproof', 'b:current_syntax is ' . get(b:, 'current_syntax', ''))

call s:Expect(1, '# a comment', 0, '^lpComment$')
call s:Expect(1, 'scenario crash', 0, '^lpKeyword$')
call s:Expect(1, 'crash', 0, '^lpScenarioName$')
call s:Expect(1, 'workload orders', 0, '^lpKeyword$')
call s:Expect(1, 'orders rate', 0, '^lpWorkload$')
call s:Expect(1, 'rate 200', 0, '^lpWorkloadParam$')
call s:Expect(1, '200/s', 0, '^lpRate$')
call s:Expect(1, '200/s', 4, '^lpUnit$')
call s:Expect(1, '50%', 0, '^lpPercent$')
call s:Expect(1, 'careless,', 0, '^lpConsumer$')
call s:Expect(1, 'consumer mysink', 0, '^lpKeyword$')
call s:Expect(1, 'mysink command', 0, '^lpConsumerName$')
call s:Expect(1, 'command "java', 0, '^lpConsumerClause$')
call s:Expect(1, '"java -jar', 1, '^lpConsumerString$')
call s:Expect(1, '{namespace}', 0, '^lpPlaceholder$')
call s:Expect(1, 'offsets in lake', 0, '^lpConsumerClause$')
call s:Expect(1, 'offsets in lake', 8, '^lpConsumerClause$')
call s:Expect(1, 'offsets in lake', 11, '^lpConsumerClause$')
call s:Expect(1, 'lake _state', 5, '^lpConsumerDecl$')
call s:Expect(1, 'consumer_batch', 0, '^lpSetting$')
call s:Expect(1, '"stdlib/faults.lp"', 1, '^lpString$')
call s:Expect(1, 'chaos <', 0, '^lpFragmentName$')
call s:Expect(1, 'chaos <', 6, '^lpBlock$')
call s:Expect(1, 'kill consumer', 0, '^lpFault$')
call s:Expect(1, 'consumer every', 0, '^lpTarget$')
call s:Expect(1, 'every 2s', 0, '^lpKeyword$')
call s:Expect(1, '2s±500ms', 0, '^lpDuration$')
call s:Expect(1, '2s±500ms', 1, '^lpUnit$')
call s:Expect(1, '2s±500ms', 2, '^lpJitter$')
call s:Expect(1, 'under load 30s', 11, '^lpDuration$')
call s:Expect(1, 'every 2s;', 8, '^lpDelimiter$')
call s:Expect(1, 'widen amount', 0, '^lpFaultWord$')
call s:Expect(1, 'amount >', 7, '^lpBlock$')
call s:Expect(1, 'use chaos', 4, '^lpFragmentName$')
call s:Expect(1, 'redeliver from start', 10, '^lpFaultWord$')
call s:Expect(1, 'drain within 60s', 6, '^lpKeyword$')
call s:Expect(1, 'at most 100 wrong rows', 3, '^lpShorthand$')
call s:Expect(1, 'fault fired', 0, '^lpShorthand$')
call s:Expect(1, 'expect < 5', 7, '^lpComparison$')
call s:Expect(1, '```sql', 0, '^lpFence$')
" Inside the fence: Vim's SQL syntax if it is installed, else the plain region.
let s:sql = empty(globpath(&runtimepath, 'syntax/sql.vim')) ? '^lpSqlFence$' : '^sql'
call s:Expect(search('\V```sql', 'n'), 'select count', 0, s:sql)
call s:Expect(search('\V```sql', 'n'), 'from diff where consumer = ''careless''', 0, s:sql)
call s:Expect(search('\V```sql', 'n'), 'where consumer', 24, '^\%(sql.*\|lpSqlFence\)$')
call s:Expect(search('\V```sql', 'n') + 1, '```', 0, '^lpFence$')
call s:Expect(1, 'expect empty', 7, '^lpKeyword$')
call s:Expect(search('\Vexpect empty', 'n') + 1, 'select *', 0, s:sql)

" Consumer declarations in detail (the VS Code test file of their own).
let s:consumer_lp = expand('<sfile>:p:h') . '/../../vscode/test/consumer.lp'
execute 'edit' fnameescape(s:consumer_lp)
call s:Report(&filetype ==# 'lossproof', 'consumer.lp: filetype is ' . &filetype)
call s:Expect(1, 'consumers careless', 0, '^lpKeyword$')
call s:Expect(1, 'consumer template', 0, '^lpKeyword$')
call s:Expect(1, 'template command', 0, '^lpConsumerName$')
call s:Expect(1, 'reads source lake changelog', 6, '^lpConsumerClause$')
call s:Expect(1, 'lake changelog', 5, '^lpConsumerClause$')
call s:Expect(1, '  consumer grouped', 2, '^lpKeyword$')
call s:Expect(1, '{group}', 0, '^lpPlaceholder$')
call s:Expect(1, '\\"{run}\\"', 0, '^lpEscape$')
call s:Expect(1, '\\"{run}\\"', 2, '^lpPlaceholder$')
call s:Expect(1, 'in group reads', 3, '^lpConsumerClause$')
call s:Expect(1, '# trailing', 0, '^lpComment$')
call s:Expect(1, 'mysink_{run}', 0, '^lpTemplate$')
call s:Expect(1, 'mysink_{run}', 7, '^lpPlaceholder$')
call s:Expect(1, '{consumer}.offsets', 10, '^lpTemplate$')
call s:Expect(1, '; drain', 0, '^lpDelimiter$')
call s:Expect(1, 'drain within', 0, '^lpKeyword$')
call s:Expect(1, 'kill consumer in group', 5, '^lpTarget$')
" Clause words mean nothing outside a declaration.
call s:Expect(1, 'kill consumer in group', 14, '^$')
call s:Expect(1, 'kill consumer in group', 17, '^$')
call s:Expect(1, 'expect consumer mysink', 7, '^lpTarget$')
call s:Expect(1, 'consumer_batch', 0, '^lpSetting$')
call s:Expect(1, '"{run} is', 1, '^lpString$')

" Table declarations (the VS Code test file of their own).
let s:table_lp = expand('<sfile>:p:h') . '/../../vscode/test/table.lp'
execute 'edit' fnameescape(s:table_lp)
call s:Report(&filetype ==# 'lossproof', 'table.lp: filetype is ' . &filetype)
call s:Expect(1, 'table accounts', 0, '^lpKeyword$')
call s:Expect(1, 'accounts <', 0, '^lpTableName$')
call s:Expect(1, 'tenant     text', 0, '^lpColumnName$')
call s:Expect(1, 'tenant     text', 11, '^lpColumnType$')
call s:Expect(1, 'numeric(12,2)', 0, '^lpColumnType$')
call s:Expect(1, 'numeric(12,2)', 8, '^lpNumber$')
call s:Expect(1, 'not null', 4, '^lpTableWord$')
call s:Expect(1, '# money', 0, '^lpComment$')
call s:Expect(1, 'double precision', 7, '^lpColumnType$')
call s:Expect(1, 'text[]', 4, '^lpArraySuffix$')
call s:Expect(1, 'numeric(12,2)[]', 13, '^lpArraySuffix$')
call s:Expect(1, 'primary key (', 0, '^lpTableWord$')
call s:Expect(1, 'replica identity full', 17, '^lpTableWord$')
call s:Expect(1, 'references accounts', 0, '^lpTableWord$')
call s:Expect(1, 'on delete', 3, '^lpWorkloadParam$')
" Table words and types mean nothing outside a declaration; `table` in a
" fault is a keyword of the language.
call s:Expect(1, 'rows 30', 0, '^lpWorkloadParam$')
call s:Expect(1, 'alter table', 6, '^lpKeyword$')
call s:Expect(1, 'widen account_id', 6, '^$')

call add(s:out, printf('vim syntax check: %d failed', s:failures))
" $LP_VIM_REPORT: a file for the report (writing to /dev/stderr clobbers a
" redirected log, as Vim opens it anew).
call writefile(s:out, empty($LP_VIM_REPORT) ? '/dev/stderr' : $LP_VIM_REPORT)
if s:failures
  cquit!
endif
qall!
