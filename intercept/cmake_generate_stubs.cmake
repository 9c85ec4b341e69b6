# Generates the not-supported stubs: one weak definition per libcudart export.
# A forwarded call's real (strong) definition overrides its stub at link time,
# so the export list is the only list of names kept by hand.
# Inputs: EXPORTS (the list file), OUTPUT (the C file to write).
file(STRINGS "${EXPORTS}" names REGEX "^[A-Za-z_]")
set(text "/* Generated from cudart_exports.txt by cmake_generate_stubs.cmake. Do not edit. */\n")
string(APPEND text "int vgpu_not_supported(const char* name);\n")
foreach(name IN LISTS names)
  string(APPEND text "__attribute__((weak, visibility(\"default\"))) int ${name}(void) { return vgpu_not_supported(\"${name}\"); }\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "${text}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
