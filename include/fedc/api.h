/*
 * fedc/api.h — FEDC_API, the mark on everything libfedc exports.
 *
 * The library is built with hidden visibility, so only the functions and data
 * that the headers of include/fedc declare with FEDC_API are its ABI; whatever
 * else it has inside (the kernels, the IR's internals, the runner's helpers) is
 * invisible to a program that links it. tests/exports.sh holds the two lists
 * equal: the shared library's symbols and these headers' FEDC_API declarations.
 */
#ifndef FEDC_API_H
#define FEDC_API_H

#if defined(__GNUC__) || defined(__clang__)
#define FEDC_API __attribute__((visibility("default")))
#else
#define FEDC_API
#endif

/* FEDC_INTERNAL_API marks the few internals that fedc's own optional libraries
 * (libfedc_formats, libfedc_deploy) call in libfedc.so: exported, so that they link, but
 * declared only in src/ headers, never in include/fedc, so no user program sees
 * them. tests/exports.sh counts them with the API. */
#define FEDC_INTERNAL_API FEDC_API

#endif
