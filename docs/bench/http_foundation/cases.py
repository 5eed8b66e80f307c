# The request-framing cases of kvforge's hardening tests
# (tests/app/server/deadline_server_framing_test.cpp, http_framing_test.cpp):
# each is one request whose framing a strict server must refuse; INNER follows
# it on the connection, so a lenient server that reads the framing another way
# serves INNER as a second request (request smuggling).
INNER = b"GET /inner HTTP/1.1\r\nHost: x\r\n\r\n"
N = str(len(INNER)).encode()


def post(fields, body):
    return b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + fields + b"\r\n" + body


CASES = {
    "content-length twice, differing": post(b"Content-Length: " + N + b"\r\nContent-Length: 0\r\n", INNER),
    "content-length +N": post(b"Content-Length: +" + N + b"\r\n", INNER),
    "content-length 'N, 0'": post(b"Content-Length: " + N + b", 0\r\n", INNER),
    "content-length 0x1e": post(b"Content-Length: 0x1e\r\n", INNER),
    "space before colon": post(b"Content-Length : " + N + b"\r\n", INNER),
    "chunked beside content-length": post(b"Transfer-Encoding: chunked\r\nContent-Length: " + N + b"\r\n", INNER),
    "transfer-encoding xchunked": post(b"Transfer-Encoding: xchunked\r\nContent-Length: 0\r\n", INNER),
    "transfer-encoding gzip": post(b"Transfer-Encoding: gzip\r\n", INNER),
    "request line without version": b"GET /health\r\n\r\n" + INNER,
    "obsolete line folding": post(b"Content-Length: 0\r\nX-A: 1\r\n folded\r\n", INNER),
    "bare LF line ends": b"POST /v1/completions HTTP/1.1\nHost: x\nContent-Length: 0\n\n" + INNER,
    "control byte in a value": post(b"Content-Length: 0\r\nX-A: a\x01b\r\n", INNER),
    "HTTP/1.1 without Host": b"POST /v1/completions HTTP/1.1\r\nContent-Length: 0\r\n\r\n" + INNER,
    "two Host fields": post(b"Host: y\r\nContent-Length: 0\r\n", INNER),
    "header line over 8 KiB": post(b"X-Long: " + b"a" * 9000 + b"\r\nContent-Length: " + N + b"\r\n", INNER),
    "chunk size zz": post(b"Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n" + INNER),
    "chunk size 0x2": post(b"Transfer-Encoding: chunked\r\n", b"0x2\r\n{}\r\n0\r\n\r\n" + INNER),
    "chunk size -2": post(b"Transfer-Encoding: chunked\r\n", b"-2\r\n{}\r\n0\r\n\r\n" + INNER),
    "chunk data overrun": post(b"Transfer-Encoding: chunked\r\n", b"2\r\n{}x\r\n0\r\n\r\n" + INNER),
    "chunks with bare LF": post(b"Transfer-Encoding: chunked\r\n", b"2\n{}\n0\n\n" + INNER),
    "chunk size of 17 hex digits": post(b"Transfer-Encoding: chunked\r\n", b"1234567890abcdef0\r\n" + INNER),
    "malformed trailer": post(b"Transfer-Encoding: chunked\r\n", b"2\r\n{}\r\n0\r\nnot a field\r\n\r\n" + INNER),
}
