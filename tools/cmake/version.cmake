# Writes ${OUT} with MK_GIT_COMMIT: $ENV{MKERNEL_BUILD_COMMIT} when set (a tree copied to
# another machine, whose .git may be missing or stale), else "<sha>[-dirty]" from git, else
# "unknown"; rewritten only on change, run at every build so
# the commit recorded by mk-bench is the one built.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD OUTPUT_VARIABLE sha
                ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(DEFINED ENV{MKERNEL_BUILD_COMMIT} AND NOT "$ENV{MKERNEL_BUILD_COMMIT}" STREQUAL "")
  set(sha "$ENV{MKERNEL_BUILD_COMMIT}")
elseif(NOT rc EQUAL 0 OR sha STREQUAL "")
  set(sha "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE dirty ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT dirty STREQUAL "")
    set(sha "${sha}-dirty")
  endif()
endif()
set(text "#define MK_GIT_COMMIT \"${sha}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
