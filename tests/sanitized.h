// KVFORGE_SANITIZED: 1 when the tests are built with AddressSanitizer or
// ThreadSanitizer, by g++ (__SANITIZE_*__) or clang (__has_feature), else 0.
// For the few tests that bound a time and must allow for the slowdown.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVFORGE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KVFORGE_SANITIZED 1
#endif
#endif
#ifndef KVFORGE_SANITIZED
#define KVFORGE_SANITIZED 0
#endif
