#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// libimobiledevice 1.3.0 opens a network device's connections non-blocking and never switches them
/// back (common/socket.c `socket_connect_addr`), so a write the socket cannot take at once comes back
/// short and the library sends the rest of nothing: an AFC upload or a disk image larger than the
/// socket buffer breaks over Wi-Fi (seen: "mux error" on a 24 MB upload). Blocking again, every send
/// goes out whole; receives keep their timeouts (the library select()s before reading), and a device
/// that stops reading is bounded by the step's deadline on the worker.
enum BlockingSends {
    /// For a client whose connection is `depth` first members down (see `ConnectionLiveness`).
    static func restore(_ client: OpaquePointer, depth: Int, on device: DeviceHandle) {
        guard device.network,
            let fd = ConnectionLiveness.descriptor(UnsafeRawPointer(client), depth: depth)
        else { return }
        let flags = fcntl(fd, F_GETFL, 0)
        if flags >= 0, flags & O_NONBLOCK != 0 {
            _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
        }
    }
}
