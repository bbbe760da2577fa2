file(READ ${INPUT} content)
file(WRITE ${OUTPUT}
"// Generated from ${INPUT}; do not edit.\n#include <string_view>\nnamespace ${NAMESPACE} {\nextern const std::string_view ${VARIABLE};\nconst std::string_view ${VARIABLE} = R\"attnrt_embedded(${content})attnrt_embedded\";\n}\n")
