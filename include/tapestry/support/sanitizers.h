// TAPESTRY_UNDER_ASAN: defined when this translation unit is built with AddressSanitizer (GCC's
// __SANITIZE_ADDRESS__, clang's __has_feature(address_sanitizer)), for the code that must step
// aside for it — the huge-page buffer cache (runtime/buffer.cpp) hands out pages ASan cannot
// guard — and for the tests of that code.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TAPESTRY_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAPESTRY_UNDER_ASAN 1
#endif
#endif
