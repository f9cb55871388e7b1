#define _XOPEN_SOURCE 600
#define _DEFAULT_SOURCE
#include "CTerminalShims.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <termios.h>
#include <unistd.h>

int workout_open_pty_master(char *path, size_t capacity) {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return -1;
    if (grantpt(master) != 0 || unlockpt(master) != 0) {
        int saved = errno;
        close(master);
        errno = saved;
        return -1;
    }
    const char *name = ptsname(master);
    if (name == NULL || strlen(name) + 1 > capacity) {
        close(master);
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(path, name);
    return master;
}

int workout_make_raw(int fd) {
    struct termios settings;
    if (tcgetattr(fd, &settings) != 0) return -1;
    cfmakeraw(&settings);
    return tcsetattr(fd, TCSANOW, &settings);
}
