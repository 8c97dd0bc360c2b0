/* wm-close WINDOW: asks an X11 window to close the way a window manager's
 * close button does (a WM_PROTOCOLS client message with WM_DELETE_WINDOW),
 * which xdotool 3.2016 cannot (its windowkill and windowclose destroy the
 * window). Build: cc -o wm-close wm-close.c -lX11 (libx11-dev). */
#include <stdio.h>
#include <stdlib.h>
#include <X11/Xlib.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: wm-close WINDOW-ID\n");
    return 2;
  }
  Display *d = XOpenDisplay(NULL);
  if (!d) {
    fprintf(stderr, "wm-close: cannot open the display\n");
    return 1;
  }
  Window w = (Window)strtoul(argv[1], NULL, 0);
  XEvent ev = {0};
  ev.xclient.type = ClientMessage;
  ev.xclient.window = w;
  ev.xclient.message_type = XInternAtom(d, "WM_PROTOCOLS", False);
  ev.xclient.format = 32;
  ev.xclient.data.l[0] = (long)XInternAtom(d, "WM_DELETE_WINDOW", False);
  ev.xclient.data.l[1] = CurrentTime;
  if (!XSendEvent(d, w, False, NoEventMask, &ev)) {
    fprintf(stderr, "wm-close: sending the event failed\n");
    return 1;
  }
  XSync(d, False);
  XCloseDisplay(d);
  return 0;
}
