# Writes ${OUT} with MK_GIT_COMMIT ("<sha>[-dirty]", else $ENV{MKERNEL_BUILD_COMMIT} for a
# tree copied without .git, else "unknown"); rewritten only on change, run at every build so
# the commit recorded by mk-bench is the one built.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD OUTPUT_VARIABLE sha
                ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR sha STREQUAL "")
  if(DEFINED ENV{MKERNEL_BUILD_COMMIT} AND NOT "$ENV{MKERNEL_BUILD_COMMIT}" STREQUAL "")
    set(sha "$ENV{MKERNEL_BUILD_COMMIT}")
  else()
    set(sha "unknown")
  endif()
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
