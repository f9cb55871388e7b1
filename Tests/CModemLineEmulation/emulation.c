// Test support, linked only into the SerialProbe executable (never into the library, the tool or
// a test bundle): it lets libserialport's real code open, configure, read and write a
// pseudo-terminal, which it otherwise refuses, so tests exercise the libserialport path over real
// bytes on any machine, without serial hardware, root, kernel modules or LD_PRELOAD.
//
// A pseudo-terminal differs from a serial port in two facts libserialport checks:
//   1. it has no modem lines: TIOCMGET/TIOCMSET/TIOCMBIS/TIOCMBIC answer ENOTTY (sp_open reads
//      them and fails);
//   2. it is not in sysfs: /sys/class/tty/pts/N does not exist (sp_get_port_by_name looks there).
// This file defines `ioctl`, `__lxstat`/`lstat`, `readlink` and `tcsetattr` in the executable. The linker
// exports a definition that a linked shared library (libserialport.so) refers to, and the dynamic
// linker binds the library's references to the executable's definition before libc's, so
// libserialport's calls come here. For a pseudo-terminal descriptor the four modem ioctls keep the
// line states in a variable (as a UART with a loop-back plug would show them), and the sysfs
// lookups of /sys/class/tty/pts/N answer as for a native (non-USB) port; everything else goes to
// the C library's own function unchanged (found with dlsym(RTLD_NEXT)).
//
// `workout_emulate_usb_serial_simple()` turns the process's pseudo-terminals into what Linux's
// usb_serial_simple driver makes of an ANT USB2/USB-m stick (0fcf:1008/1009): the modem ioctls
// answer ENOTTY, and tcsetattr succeeds but the speed stays at 9600 (and the frame at 8N1).
#define _GNU_SOURCE
#include "CModemLineEmulation.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

static atomic_long calls;
static atomic_int no_modem_lines;
static atomic_int pinned_speed;
static atomic_int modem_lines = TIOCM_DTR | TIOCM_RTS | TIOCM_CTS | TIOCM_DSR | TIOCM_CD;
static const char pts_prefix[] = "/sys/class/tty/pts/";

long workout_modem_emulation_calls(void) {
    return atomic_load(&calls);
}

static int is_pseudo_terminal(int fd) {
    struct stat status;
    if (fstat(fd, &status) != 0 || !S_ISCHR(status.st_mode)) return 0;
    unsigned major_number = major(status.st_rdev);
    return major_number >= 136 && major_number <= 143;
}

int ioctl(int fd, unsigned long request, ...) {
    static int (*real)(int, unsigned long, ...);
    if (!real) real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    va_list arguments;
    va_start(arguments, request);
    void *argument = va_arg(arguments, void *);
    va_end(arguments);
    int is_modem_request =
        request == TIOCMGET || request == TIOCMSET || request == TIOCMBIS || request == TIOCMBIC;
    if (!is_modem_request || !is_pseudo_terminal(fd)) return real(fd, request, argument);
    if (atomic_load(&no_modem_lines)) {
        // usb_serial_simple has no tiocmget/tiocmset: usb-serial answers ENOTTY.
        atomic_fetch_add(&calls, 1);
        errno = ENOTTY;
        return -1;
    }
    int *bits = argument;
    if (bits == NULL) {
        errno = EFAULT;
        return -1;
    }
    atomic_fetch_add(&calls, 1);
    switch (request) {
    case TIOCMGET: *bits = atomic_load(&modem_lines); break;
    case TIOCMSET: atomic_store(&modem_lines, *bits); break;
    case TIOCMBIS: atomic_fetch_or(&modem_lines, *bits); break;
    default: atomic_fetch_and(&modem_lines, ~*bits); break;
    }
    return 0;
}

/// A symbolic link's status for /sys/class/tty/pts/N, as sysfs shows a tty.
static int pts_link_status(const char *path, struct stat *status) {
    if (strncmp(path, pts_prefix, sizeof pts_prefix - 1) != 0) return 0;
    memset(status, 0, sizeof *status);
    status->st_mode = S_IFLNK | 0777;
    atomic_fetch_add(&calls, 1);
    return 1;
}

// libserialport built against glibc < 2.33 calls lstat through __lxstat; later builds call lstat.
int __lxstat(int version, const char *path, struct stat *status);
int __lxstat(int version, const char *path, struct stat *status) {
    static int (*real)(int, const char *, struct stat *);
    if (pts_link_status(path, status)) return 0;
    if (!real) real = (int (*)(int, const char *, struct stat *))dlsym(RTLD_NEXT, "__lxstat");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(version, path, status);
}

int lstat(const char *restrict path, struct stat *restrict status) {
    static int (*real)(const char *, struct stat *);
    if (pts_link_status(path, status)) return 0;
    if (!real) real = (int (*)(const char *, struct stat *))dlsym(RTLD_NEXT, "lstat");
    return real(path, status);
}

ssize_t readlink(const char *restrict path, char *restrict buffer, size_t size) {
    static ssize_t (*real)(const char *, char *, size_t);
    if (strncmp(path, pts_prefix, sizeof pts_prefix - 1) == 0) {
        char target[64];
        int length = snprintf(target, sizeof target, "../../devices/pts/%s", path + sizeof pts_prefix - 1);
        if (length < 0) return -1;
        size_t count = (size_t)length < size ? (size_t)length : size;
        memcpy(buffer, target, count);
        atomic_fetch_add(&calls, 1);
        return (ssize_t)count;
    }
    if (!real) real = (ssize_t (*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "readlink");
    return real(path, buffer, size);
}

void workout_emulate_usb_serial_simple(void) {
    atomic_store(&no_modem_lines, 1);
    atomic_store(&pinned_speed, 1);
}

void workout_emulate_fixed_speed(void) {
    atomic_store(&pinned_speed, 1);
}

// With the speed pinned (the usb_serial_simple emulation, or a fixed speed alone): the driver has no set_termios, so usb-serial copies the
// hardware settings back (tty_termios_copy_hw): c_cflag keeps its old bits except HUPCL, CREAD
// and CLOCAL, and the speeds stay; the old ones are usb-serial's initial B9600 | CS8 (drivers/usb/
// serial/usb-serial.c). tcsetattr still succeeds, as the kernel's does.
int tcsetattr(int fd, int actions, const struct termios *settings) {
    static int (*real)(int, int, const struct termios *);
    if (!real) real = (int (*)(int, int, const struct termios *))dlsym(RTLD_NEXT, "tcsetattr");
    if (!atomic_load(&pinned_speed) || settings == NULL || !is_pseudo_terminal(fd)) {
        return real(fd, actions, settings);
    }
    struct termios pinned = *settings;
    pinned.c_cflag = (settings->c_cflag & (HUPCL | CREAD | CLOCAL)) | CS8;
    cfsetispeed(&pinned, B9600);
    cfsetospeed(&pinned, B9600);
    atomic_fetch_add(&calls, 1);
    return real(fd, actions, &pinned);
}
