// Replaces dispatch_main for valgrind 3.19 (which crashes when the main thread pthread_exit's into
// libdispatch's signal thread): the main thread drains the main queue itself, as a run loop would.
#include <poll.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
extern int _dispatch_get_main_queue_port_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *msg);
void dispatch_main(void) {
  int fd = _dispatch_get_main_queue_port_4CF();
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  _dispatch_main_queue_callback_4CF(0);
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    poll(&p, 1, 1000);
    uint64_t v;
    (void)!read(fd, &v, sizeof v);
    _dispatch_main_queue_callback_4CF(0);
  }
}
