// Whether the client of a running HTTP handler is still connected, for
// handlers that wait a long time before writing anything (a non-streaming
// completion, a long template render). The handler's thread serves the
// connection, so it peeks at its own socket (DeadlineServer::current_socket())
// without consuming anything.
#pragma once

namespace kvforge::server {

// True once the peer of socket `fd` closed or reset its side: end of stream
// or an error on a non-blocking peek. Bytes waiting (a pipelined next
// request) mean "still there". False for fd < 0.
bool peer_closed(int fd);

}  // namespace kvforge::server
