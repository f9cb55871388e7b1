#ifndef C_MODEM_LINE_EMULATION_H
#define C_MODEM_LINE_EMULATION_H

/// How many calls the emulation answered in place of the kernel (modem-line ioctls on a
/// pseudo-terminal, sysfs lookups of /sys/class/tty/pts/N) since the process started.
long workout_modem_emulation_calls(void);

#endif
