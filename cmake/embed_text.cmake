# Turns a text file into a C++ source defining `extern const std::string_view SYMBOL`.
function(attnrt_embed_text input output symbol)
  string(REGEX REPLACE "::[^:]+$" "" namespace_name "${symbol}")
  string(REGEX REPLACE "^.*::" "" variable_name "${symbol}")
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${output}
            -DNAMESPACE=${namespace_name} -DVARIABLE=${variable_name}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/embed_text_run.cmake
    DEPENDS ${input} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/embed_text_run.cmake
    COMMENT "Embedding ${input}")
endfunction()
