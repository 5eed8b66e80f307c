/* A GNU libmicrohttpd server answering every request with its method and
 * URL, in the strictest mode it has (MHD_OPTION_STRICT_FOR_CLIENT 1), for
 * probe.py to send the framing cases to. Prints its port.
 * Build: cc -O1 mhd_probe.c -o mhd_probe -lmicrohttpd */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state) {
  static int marker;
  if (*state == NULL) { *state = &marker; return MHD_YES; }
  if (*upload_size) { *upload_size = 0; return MHD_YES; }
  char text[256];
  snprintf(text, sizeof text, "%s %s", method, url);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
  enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

int main(void) {
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, answer, NULL,
      MHD_OPTION_STRICT_FOR_CLIENT, (int)1, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)5, MHD_OPTION_END);
  if (!d) return 1;
  printf("%u\n", (unsigned)MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
  fflush(stdout);
  pause();
  return 0;
}
