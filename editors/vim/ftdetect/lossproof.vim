" lossproof chaos-test scenarios
autocmd BufRead,BufNewFile *.lp set filetype=lossproof
