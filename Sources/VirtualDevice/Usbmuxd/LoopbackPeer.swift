import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Who is at the other end of a loopback TCP connection. The TCP usbmuxd (`hadeploy virtual --port`)
/// hands out pair records (`ReadPairRecord`) as every usbmuxd does, so it must serve only the user
/// running the twins, as its UNIX socket does by its file mode: a connection from another user's
/// process is closed before it is read.
enum LoopbackPeer {
    /// Whether the process that opened the connection from `clientPort` to `serverPort` (both on the
    /// loopback) runs as this process's user (or root). On Linux the client's socket and its owner are
    /// in /proc/net/tcp; where that cannot be read the answer is no. Other systems have no such
    /// table: there every connection is accepted (the UNIX socket is the private choice there).
    static func isSameUser(clientPort: Int, serverPort: Int) -> Bool {
        #if os(Linux)
            guard let owner = owner(clientPort: clientPort, serverPort: serverPort) else { return false }
            return owner == geteuid() || owner == 0
        #else
            return true
        #endif
    }

    #if os(Linux)
        /// The uid owning the socket bound to `clientPort` and connected to `serverPort`, from the kernel's
        /// TCP tables (`local_address rem_address … uid` columns, ports in hex).
        static func owner(clientPort: Int, serverPort: Int) -> uid_t? {
            let local = String(format: ":%04X", clientPort)
            let remote = String(format: ":%04X", serverPort)
            for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                guard let text = read(table) else { continue }
                for line in text.split(separator: "\n").dropFirst() {
                    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                    guard fields.count > 7, fields[1].hasSuffix(local), fields[2].hasSuffix(remote),
                        let uid = uid_t(fields[7])
                    else { continue }
                    return uid
                }
            }
            return nil
        }

        /// A /proc file whole (its size reads as 0, so it is read to the end, not by its size).
        private static func read(_ path: String) -> String? {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return nil }
            defer { close(descriptor) }
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                data.append(contentsOf: buffer[0..<count])
            }
            return String(decoding: data, as: UTF8.self)
        }
    #endif
}
