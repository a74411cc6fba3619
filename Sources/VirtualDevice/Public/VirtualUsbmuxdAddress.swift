/// Where the virtual usbmuxd listens.
public enum VirtualUsbmuxdAddress: Sendable, Hashable {
    /// A UNIX domain socket at this path (an existing stale socket file is replaced).
    case unixSocket(String)
    /// A loopback TCP port on 127.0.0.1; 0 picks a free port.
    case tcp(port: Int)
}
