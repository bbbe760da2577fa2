# Warnings are errors on attnrt's own targets (never on dependencies).
function(attnrt_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Werror)
endfunction()
