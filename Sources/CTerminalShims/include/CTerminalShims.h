#ifndef C_TERMINAL_SHIMS_H
#define C_TERMINAL_SHIMS_H

#include <stddef.h>

/// Opens a new pseudo-terminal master (posix_openpt, grantpt, unlockpt) and writes the slave's path
/// into `path` (NUL-terminated, at most `capacity` bytes). Returns the master descriptor, or -1 with
/// errno set.
int workout_open_pty_master(char *path, size_t capacity);

/// Puts the terminal `fd` in raw mode (cfmakeraw). Returns 0, or -1 with errno set.
int workout_make_raw(int fd);

#endif
