/* What every internal header needs of the compiler: hidden declarations and
 * a macro made a string. */
#ifndef PS_COMPILER_H
#define PS_COMPILER_H

#define PS_HIDDEN __attribute__((visibility("hidden")))
#define PS_STR_(x) #x
#define PS_STR(x) PS_STR_(x)

#endif
