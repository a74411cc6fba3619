/// Why the TCP connection for a session could not be opened.
struct TCPConnectError: Error {
    let reason: String
}
