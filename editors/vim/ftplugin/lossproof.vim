" Vim filetype plugin for lossproof scenarios (.lp)
if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1

setlocal commentstring=#\ %s
setlocal comments=:#
setlocal iskeyword=@,48-57,_,-
setlocal matchpairs+=<:>

let b:undo_ftplugin = 'setlocal commentstring< comments< iskeyword< matchpairs<'
