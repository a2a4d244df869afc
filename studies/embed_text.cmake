# cmake -DIN=file -DOUT=file.cpp -P embed_text.cmake: writes a C++ file defining
# railyard::studies::detail::builtin_catalogue_text(), the bytes of IN (as hex, so that no character needs escaping).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT}.tmp "// Generated from ${IN} by studies/embed_text.cmake; do not edit.\n"
  "#include <string_view>\nnamespace railyard::studies::detail {\n"
  "static const unsigned char kBytes[] = {${bytes}};\n"
  "std::string_view builtin_catalogue_text() { return {reinterpret_cast<const char*>(kBytes), sizeof kBytes}; }\n"
  "}\n")
file(RENAME ${OUT}.tmp ${OUT})
