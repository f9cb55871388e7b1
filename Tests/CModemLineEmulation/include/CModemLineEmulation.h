#ifndef C_MODEM_LINE_EMULATION_H
#define C_MODEM_LINE_EMULATION_H

/// How many calls the emulation answered in place of the kernel (modem-line ioctls on a
/// pseudo-terminal, sysfs lookups of /sys/class/tty/pts/N) since the process started.
long workout_modem_emulation_calls(void);

/// From now on, pseudo-terminals behave as a port of Linux's usb_serial_simple driver (ANT USB2 and
/// USB-m sticks): modem-line ioctls answer ENOTTY; tcsetattr succeeds but keeps 9600 bit/s, 8N1.
void workout_emulate_usb_serial_simple(void);

/// From now on, tcsetattr on a pseudo-terminal succeeds but keeps 9600 bit/s, 8N1 (a driver that ignores
/// speed changes), while the modem lines stay emulated as before.
void workout_emulate_fixed_speed(void);

#endif
