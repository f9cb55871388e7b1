#ifndef C_TERMINAL_SHIMS_H
#define C_TERMINAL_SHIMS_H

#include <stddef.h>

/// Opens a new pseudo-terminal master (posix_openpt, grantpt, unlockpt) and writes the slave's path
/// into `path` (NUL-terminated, at most `capacity` bytes). Returns the master descriptor, or -1 with
/// errno set.
int workout_open_pty_master(char *path, size_t capacity);

/// Puts the terminal `fd` in raw mode (cfmakeraw). Returns 0, or -1 with errno set.
int workout_make_raw(int fd);

/// Line settings for `workout_serial_configure` and `workout_serial_read_config`.
typedef struct workout_serial_config {
    /// Bits per second (a standard rate: 50 … 4000000).
    unsigned baud;
    /// 5, 6, 7 or 8.
    int data_bits;
    /// 'N' none, 'O' odd, 'E' even, 'M' mark, 'S' space.
    char parity;
    /// 1 or 2.
    int stop_bits;
    /// 0 none, 1 XON/XOFF, 2 RTS/CTS, 3 DTR/DSR (not available through termios on Linux).
    int flow;
} workout_serial_config;

/// Results of `workout_serial_configure` besides 0 (done) and -1 (failed, errno set).
enum {
    WORKOUT_SERIAL_BAD_BAUD = 1,
    WORKOUT_SERIAL_BAD_DATA_BITS = 2,
    WORKOUT_SERIAL_BAD_PARITY = 3,
    WORKOUT_SERIAL_BAD_STOP_BITS = 4,
    WORKOUT_SERIAL_BAD_FLOW = 5,
    /// The terminal took the settings but kept another speed (a driver that cannot change speed,
    /// such as Linux's usb_serial_simple, which keeps 9600): read the settings to see which.
    WORKOUT_SERIAL_SPEED_NOT_KEPT = 6,
};

/// Puts the terminal `fd` in raw mode with `config` (termios: cfmakeraw, CLOCAL, CREAD, speed, size,
/// parity incl. CMSPAR, stop bits, CRTSCTS or IXON/IXOFF) and reads the settings back. Returns 0,
/// -1 with errno set, or the WORKOUT_SERIAL_BAD_* code of the first setting the terminal refused or
/// did not keep. With `check_frame` 0, data bits and parity are not checked: Linux pseudo-terminals
/// always keep 8 data bits and no parity (they carry bytes, not bits). With `accept_kept_speed` 1, a
/// speed the terminal did not keep is accepted (the rest is still checked); with 0 it gives
/// WORKOUT_SERIAL_SPEED_NOT_KEPT.
int workout_serial_configure(
    int fd, const workout_serial_config *config, int check_frame, int accept_kept_speed);

/// Reads the terminal's current settings into `config`. Returns 0, or -1 with errno set.
int workout_serial_read_config(int fd, workout_serial_config *config);

/// Sets (`on` != 0) or clears RTS/CTS hardware flow control (CRTSCTS in c_cflag) on the terminal
/// `fd`. Returns 0, or -1 with errno set.
int workout_set_hardware_flow(int fd, int on);

/// Sets (`exclusive` != 0, TIOCEXCL) or clears (TIOCNXCL) exclusive mode: further opens of the
/// terminal fail with EBUSY (except for privileged processes). Returns 0, or -1 with errno set.
int workout_set_exclusive(int fd, int exclusive);

/// The major number of a device number (`st_rdev`).
unsigned workout_device_major(unsigned long long device);

/// The minor number of a device number (`st_rdev`).
unsigned workout_device_minor(unsigned long long device);

#endif
