# cmake -DINPUT=<fatbin> -DOUTPUT=<header> -DNAME=<array> -P embed_fatbin.cmake
# Writes the fatbin as an 8-byte-aligned C array (what cufftXtSetJITCallback reads).
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" body "${body}")
file(WRITE ${OUTPUT} "// Generated from ${INPUT} by cuda/toeplitz/lto/embed_fatbin.cmake: do not edit.\n#pragma once\n"
     "alignas(8) static const unsigned char ${NAME}[${bytes}] = {\n${body}\n};\n")
