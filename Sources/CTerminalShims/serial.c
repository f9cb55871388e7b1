#define _GNU_SOURCE
#include "CTerminalShims.h"
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <termios.h>

static const struct {
    unsigned rate;
    speed_t constant;
} speeds[] = {
    {50, B50}, {75, B75}, {110, B110}, {134, B134}, {150, B150}, {200, B200}, {300, B300},
    {600, B600}, {1200, B1200}, {1800, B1800}, {2400, B2400}, {4800, B4800}, {9600, B9600},
    {19200, B19200}, {38400, B38400}, {57600, B57600}, {115200, B115200}, {230400, B230400},
    {460800, B460800}, {500000, B500000}, {576000, B576000}, {921600, B921600},
    {1000000, B1000000}, {1152000, B1152000}, {1500000, B1500000}, {2000000, B2000000},
    {2500000, B2500000}, {3000000, B3000000}, {3500000, B3500000}, {4000000, B4000000},
};

static int speed_constant(unsigned rate, speed_t *constant) {
    for (size_t i = 0; i < sizeof speeds / sizeof speeds[0]; i++) {
        if (speeds[i].rate == rate) {
            *constant = speeds[i].constant;
            return 1;
        }
    }
    return 0;
}

static unsigned speed_rate(speed_t constant) {
    for (size_t i = 0; i < sizeof speeds / sizeof speeds[0]; i++) {
        if (speeds[i].constant == constant) return speeds[i].rate;
    }
    return 0;
}

static void read_settings(const struct termios *t, workout_serial_config *config) {
    config->baud = speed_rate(cfgetospeed(t));
    switch (t->c_cflag & CSIZE) {
    case CS5: config->data_bits = 5; break;
    case CS6: config->data_bits = 6; break;
    case CS7: config->data_bits = 7; break;
    default: config->data_bits = 8; break;
    }
    if (!(t->c_cflag & PARENB)) {
        config->parity = 'N';
    } else if (t->c_cflag & CMSPAR) {
        config->parity = (t->c_cflag & PARODD) ? 'M' : 'S';
    } else {
        config->parity = (t->c_cflag & PARODD) ? 'O' : 'E';
    }
    config->stop_bits = (t->c_cflag & CSTOPB) ? 2 : 1;
    if (t->c_cflag & CRTSCTS) {
        config->flow = 2;
    } else if ((t->c_iflag & IXON) && (t->c_iflag & IXOFF)) {
        config->flow = 1;
    } else {
        config->flow = 0;
    }
}

int workout_serial_configure(
    int fd, const workout_serial_config *config, int check_frame, int accept_kept_speed) {
    speed_t speed;
    if (!speed_constant(config->baud, &speed)) return WORKOUT_SERIAL_BAD_BAUD;
    if (config->flow == 3) return WORKOUT_SERIAL_BAD_FLOW;
    struct termios t;
    if (tcgetattr(fd, &t) != 0) return -1;
    cfmakeraw(&t);
    t.c_cflag |= CLOCAL | CREAD;
    t.c_cflag &= ~(CSIZE | PARENB | PARODD | CMSPAR | CSTOPB | CRTSCTS);
    switch (config->data_bits) {
    case 5: t.c_cflag |= CS5; break;
    case 6: t.c_cflag |= CS6; break;
    case 7: t.c_cflag |= CS7; break;
    case 8: t.c_cflag |= CS8; break;
    default: return WORKOUT_SERIAL_BAD_DATA_BITS;
    }
    switch (config->parity) {
    case 'N': break;
    case 'O': t.c_cflag |= PARENB | PARODD; break;
    case 'E': t.c_cflag |= PARENB; break;
    case 'M': t.c_cflag |= PARENB | PARODD | CMSPAR; break;
    case 'S': t.c_cflag |= PARENB | CMSPAR; break;
    default: return WORKOUT_SERIAL_BAD_PARITY;
    }
    if (config->parity != 'N') t.c_iflag |= INPCK;
    switch (config->stop_bits) {
    case 1: break;
    case 2: t.c_cflag |= CSTOPB; break;
    default: return WORKOUT_SERIAL_BAD_STOP_BITS;
    }
    t.c_iflag &= ~(IXON | IXOFF | IXANY);
    switch (config->flow) {
    case 0: break;
    case 1: t.c_iflag |= IXON | IXOFF; break;
    case 2: t.c_cflag |= CRTSCTS; break;
    default: return WORKOUT_SERIAL_BAD_FLOW;
    }
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (cfsetispeed(&t, speed) != 0 || cfsetospeed(&t, speed) != 0) return WORKOUT_SERIAL_BAD_BAUD;
    if (tcsetattr(fd, TCSANOW, &t) != 0) return errno == EINVAL ? WORKOUT_SERIAL_BAD_BAUD : -1;
    // tcsetattr succeeds when any part was applied: read back what the driver kept.
    workout_serial_config kept;
    if (workout_serial_read_config(fd, &kept) != 0) return -1;
    if (kept.baud != config->baud && !accept_kept_speed) return WORKOUT_SERIAL_SPEED_NOT_KEPT;
    if (check_frame && kept.data_bits != config->data_bits) return WORKOUT_SERIAL_BAD_DATA_BITS;
    if (check_frame && kept.parity != config->parity) return WORKOUT_SERIAL_BAD_PARITY;
    if (kept.stop_bits != config->stop_bits) return WORKOUT_SERIAL_BAD_STOP_BITS;
    if (kept.flow != config->flow) return WORKOUT_SERIAL_BAD_FLOW;
    return 0;
}

int workout_serial_read_config(int fd, workout_serial_config *config) {
    struct termios t;
    if (tcgetattr(fd, &t) != 0) return -1;
    read_settings(&t, config);
    return 0;
}

int workout_set_hardware_flow(int fd, int on) {
    struct termios t;
    if (tcgetattr(fd, &t) != 0) return -1;
    if (on) {
        t.c_cflag |= CRTSCTS;
    } else {
        t.c_cflag &= ~CRTSCTS;
    }
    return tcsetattr(fd, TCSANOW, &t);
}

int workout_set_exclusive(int fd, int exclusive) {
    return ioctl(fd, exclusive ? TIOCEXCL : TIOCNXCL);
}

unsigned workout_device_major(unsigned long long device) {
    return major(device);
}

unsigned workout_device_minor(unsigned long long device) {
    return minor(device);
}
