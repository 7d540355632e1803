#ifndef SPEECHGRAPH_CJACK_SHIM_H
#define SPEECHGRAPH_CJACK_SHIM_H
#include <jack/jack.h>
#include <jack/metadata.h>

/* jack_client_open is variadic, which Swift cannot import: this wrapper passes the
   server name when one is given (JackServerName) and nothing otherwise. */
static inline jack_client_t *speechgraph_jack_client_open(const char *client_name,
                                                          jack_options_t options,
                                                          jack_status_t *status,
                                                          const char *server_name) {
    if (server_name != NULL) {
        return jack_client_open(client_name, (jack_options_t)(options | JackServerName), status, server_name);
    }
    return jack_client_open(client_name, options, status);
}
#endif
