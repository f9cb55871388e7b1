#ifndef C_PROCESS_SHIMS_H
#define C_PROCESS_SHIMS_H

/// Caps the C library's malloc arenas at `count` (glibc's mallopt(M_ARENA_MAX)). Returns 1 when set, 0 when
/// the C library refused or has no such setting.
int workout_limit_malloc_arenas(int count);

#endif
