#ifndef C_SERIAL_PORT_SHIM_H
#define C_SERIAL_PORT_SHIM_H

// libserialport (sigrok), found through pkg-config `libserialport` (Debian: libserialport-dev).
#include <libserialport.h>

#endif
